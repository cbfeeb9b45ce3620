package chaos

import (
	"bufio"
	"fmt"
	"io"
)

// faultColor is each fault kind's color in the plot.
var faultColor = map[string]string{
	FaultDropReplies: "#e377c2", FaultSlowReplies: "#7f7f7f",
	FaultBlackhole: "#1f77b4", FaultDelayReplies: "#17becf", FaultDropRequests: "#9edae5",
	FaultPauseServer: "#ff7f0e", FaultKillLeader: "#d62728", FaultIsolateFollower: "#bcbd22",
	FaultIsolateLeader: "#8c564b", FaultPauseClient: "#9467bd", FaultDeleteNode: "#000000",
	FaultRestoreBackup: "#bcbd22",
}

// WriteSVG plots the run: a line per fault kind with its faults, then per
// recipe the holds entered over time (bars) and the holds lost in time
// (red ticks, where Done closed).
func (res *Result) WriteSVG(w io.Writer) error {
	const (
		left, width = 150, 800
		bins        = 200
		faultRow    = 14
		recipeRow   = 46
	)
	span := res.End - res.Start
	if span <= 0 {
		span = 1
	}
	x := func(t int64) float64 {
		if t < res.Start {
			t = res.Start
		}
		if t > res.End {
			t = res.End
		}
		return left + float64(t-res.Start)/float64(span)*width
	}
	top := 30
	height := top + len(FaultKinds)*faultRow + 10 + len(res.Recipes)*recipeRow + 40
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", left+width+20, height)
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(b, `<text x="%d" y="18" font-size="13">zkrecipes under faults: %v, %d participants per recipe in %d processes, seed %d</text>`+"\n",
		left, roundSeconds(span), res.Config.Participants, res.Clients.Processes, res.Config.Seed)
	y := top
	for _, kind := range FaultKinds {
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-6, y+10, kind)
		for _, f := range res.spans {
			if f.Kind == kind {
				x0, x1 := x(f.Start), x(f.End)
				fmt.Fprintf(b, `<rect x="%.1f" y="%d" width="%.1f" height="10" fill="%s"/>`+"\n", x0, y+1, max(x1-x0, 1), faultColor[kind])
			}
		}
		y += faultRow
	}
	y += 10
	// Holds entered per bin, all recipes on one scale.
	counts := make([][]int, len(res.Recipes))
	peak := 1
	for i := range counts {
		counts[i] = make([]int, bins)
	}
	bin := func(t int64) int {
		k := int(float64(t-res.Start) / float64(span) * bins)
		return min(max(k, 0), bins-1)
	}
	for _, h := range res.holds {
		if h.Enter < res.Start || h.Enter > res.End {
			continue
		}
		k := bin(h.Enter)
		counts[h.Recipe][k]++
		peak = max(peak, counts[h.Recipe][k])
	}
	for i, r := range res.Recipes {
		base := y + recipeRow - 8
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-6, base-12, r.Recipe)
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>`+"\n", left, base, left+width, base)
		for k, n := range counts[i] {
			if n == 0 {
				continue
			}
			hgt := float64(n) / float64(peak) * float64(recipeRow-14)
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#2ca02c"/>`+"\n",
				left+float64(k)*width/bins, float64(base)-hgt, float64(width)/bins, hgt)
		}
		for _, h := range res.holds {
			if h.Recipe == i && h.Lost {
				fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#d62728"/>`+"\n", x(h.End), base, x(h.End), base+6)
			}
		}
		y += recipeRow
	}
	y += 14
	legend := []struct{ color, text string }{{"#2ca02c", "holds entered"}, {"#d62728", "hold lost in time (Done closed while held)"}}
	lx := left
	for _, l := range legend {
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", lx, y, l.color, lx+14, y+9, l.text)
		lx += 14 + 7*len(l.text) + 20
	}
	fmt.Fprintf(b, `<text x="%d" y="%d">time →</text>`+"\n", left+width-40, y+9)
	b.WriteString("</svg>\n")
	return b.Flush()
}
