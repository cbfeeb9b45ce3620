package bench

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// palette gives each implementation a color that stays the same across
// charts.
var palette = map[string]string{
	"mutex": "#1f77b4", "naive": "#ff7f0e", "zk.Lock": "#2ca02c",
	"Curator": "#d62728", "Kazoo": "#9467bd", "raw floor": "#7f7f7f",
}

// SVG draws two panels: handoffs per second against participants, and
// watch wake-ups per release against participants (log scale), one line
// per implementation.
func (r *Results) SVG() []byte {
	const w, h, panelW = 1010, 420, 485
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	r.panel(&b, 0, panelW, h, "Contended handoffs per second (higher is better)", r.Handoffs, false)
	r.panel(&b, panelW+20, panelW, h, "Watch wake-ups per release (lower is better, log scale)", r.WakeUps, true)
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

func (r *Results) panel(b *strings.Builder, x0, w, h int, title string, data map[string]map[int]float64, logY bool) {
	const left, right, top, bottom = 60, 110, 40, 50
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	fmt.Fprintf(b, `<g transform="translate(%d,0)">`+"\n", x0)
	fmt.Fprintf(b, `<text x="%d" y="22" font-size="14" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))
	maxY := 0.0
	minY := math.Inf(1)
	for _, series := range data {
		for _, v := range series {
			maxY = max(maxY, v)
			if v > 0 {
				minY = min(minY, v)
			}
		}
	}
	if maxY == 0 {
		maxY = 1
	}
	scale := func(v float64) float64 { return ph * (1 - v/(maxY*1.1)) }
	var ticks []float64
	if logY {
		lo := math.Pow(10, math.Floor(math.Log10(max(minY, 0.01))))
		hi := math.Pow(10, math.Ceil(math.Log10(maxY)))
		scale = func(v float64) float64 {
			v = max(v, lo)
			return ph * (1 - (math.Log10(v)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo)))
		}
		for t := lo; t <= hi*1.0001; t *= 10 {
			ticks = append(ticks, t)
		}
	} else {
		step := niceStep(maxY * 1.1 / 5)
		for t := 0.0; t <= maxY*1.1; t += step {
			ticks = append(ticks, t)
		}
	}
	fmt.Fprintf(b, `<g transform="translate(%d,%d)">`+"\n", left, top)
	for _, t := range ticks {
		y := scale(t)
		fmt.Fprintf(b, `<line x1="0" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="-6" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", pw, y, y, y, formatTick(t))
	}
	xs := func(i int) float64 {
		if len(r.Parts) == 1 {
			return pw / 2
		}
		return pw * float64(i) / float64(len(r.Parts)-1)
	}
	for i, n := range r.Parts {
		fmt.Fprintf(b, `<text x="%.1f" y="%.0f" text-anchor="middle">%d</text>`+"\n", xs(i), ph+18, n)
	}
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" text-anchor="middle">participants (each its own session)</text>`+"\n", pw/2, ph+38)
	fmt.Fprintf(b, `<line x1="0" x2="0" y1="0" y2="%.0f" stroke="#333"/><line x1="0" x2="%.0f" y1="%.0f" y2="%.0f" stroke="#333"/>`+"\n", ph, pw, ph, ph)
	legend := 0
	for _, name := range r.Impls {
		series, ok := data[name]
		if !ok {
			continue
		}
		color := palette[name]
		if color == "" {
			color = "#000"
		}
		var pts []string
		for i, n := range r.Parts {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xs(i), scale(series[n])))
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", color, strings.Join(pts, " "))
		for _, p := range pts {
			xy := strings.Split(p, ",")
			fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="3.5" fill="%s"/>`+"\n", xy[0], xy[1], color)
		}
		ly := 10 + 18*legend
		fmt.Fprintf(b, `<line x1="%.0f" x2="%.0f" y1="%d" y2="%d" stroke="%s" stroke-width="3"/><text x="%.0f" y="%d" dominant-baseline="middle">%s</text>`+"\n",
			pw+12, pw+30, ly, ly, color, pw+35, ly, html.EscapeString(name))
		legend++
	}
	b.WriteString("</g></g>\n")
}

func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

func formatTick(v float64) string {
	if v >= 1 || v == 0 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%g", v)
}
