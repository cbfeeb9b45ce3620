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

// bar is one bar of a bar panel.
type bar struct {
	label string
	value float64
	text  string // the value as written beside the bar
	color string
}

// ScaleSVG draws the scale scenarios as four bar panels: many keys
// through one client, the deep queue at its two depths, the idle waiters'
// memory, and the handoff latency as a multiple of its floor (from locks,
// when measured).
func (r *ScaleResults) ScaleSVG(locks *Results) []byte {
	const w, panelW, panelH = 1010, 485, 300
	var panels []func(b *strings.Builder, x0, y0 int)
	add := func(title string, bars []bar) {
		if len(bars) > 0 {
			panels = append(panels, func(b *strings.Builder, x0, y0 int) { barPanel(b, x0, y0, panelW, panelH, title, bars) })
		}
	}
	color := func(impl string) string {
		if c := palette[impl]; c != "" {
			return c
		}
		return "#000"
	}
	var keys, deep, idle, floor []bar
	for _, impl := range r.Cfg.Impls {
		if m, ok := r.ManyKeys[impl]; ok {
			keys = append(keys, bar{impl, m.PerSecond(), fmt.Sprintf("%.0f", m.PerSecond()), color(impl)})
		}
		for _, n := range r.Cfg.Deep {
			if c, ok := r.Deep[impl][n]; ok {
				deep = append(deep, bar{fmt.Sprintf("%s, %d", impl, n), c.PerSecond(), fmt.Sprintf("%.0f", c.PerSecond()), color(impl)})
			}
		}
		if d, ok := r.Idle[impl]; ok {
			v := d.PerWaiter(d.RSS) / 1024
			idle = append(idle, bar{impl, v, fmt.Sprintf("%.1f KiB", v), color(impl)})
		}
		if locks != nil && locks.Floor > 0 && locks.Handoff[impl] > 0 {
			v := float64(locks.Handoff[impl]) / float64(locks.Floor)
			floor = append(floor, bar{impl, v, fmt.Sprintf("%.2f×", v), color(impl)})
		}
	}
	add("Many keys, one client: Lock+Unlock/s (higher is better)", keys)
	add("Deep queue: handoffs/s by waiters (higher is better)", deep)
	add("Idle waiters: resident memory each (lower is better)", idle)
	add("Handoff p50 ÷ its floor (lower is better)", floor)
	rows := (len(panels) + 1) / 2
	h := rows * (panelH + 20)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	for i, p := range panels {
		p(&b, (i%2)*(panelW+20), (i/2)*(panelH+20))
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// barPanel draws horizontal bars from zero, one per row, labelled on the
// left and with their value on the right.
func barPanel(b *strings.Builder, x0, y0, w, h int, title string, bars []bar) {
	const left, right, top, bottom = 120, 70, 40, 10
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	fmt.Fprintf(b, `<g transform="translate(%d,%d)">`+"\n", x0, y0)
	fmt.Fprintf(b, `<text x="10" y="22" font-size="13" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
	maxV := 0.0
	for _, br := range bars {
		maxV = max(maxV, br.value)
	}
	if maxV == 0 {
		maxV = 1
	}
	rowH := ph / float64(len(bars))
	barH := min(22, rowH*0.7)
	fmt.Fprintf(b, `<g transform="translate(%d,%d)">`+"\n", left, top)
	for i, br := range bars {
		y := rowH*float64(i) + (rowH-barH)/2
		bw := pw * br.value / maxV
		fmt.Fprintf(b, `<text x="-8" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", y+barH/2, html.EscapeString(br.label))
		fmt.Fprintf(b, `<rect x="0" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", y, bw, barH, br.color)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" dominant-baseline="middle">%s</text>`+"\n", bw+6, y+barH/2, html.EscapeString(br.text))
	}
	fmt.Fprintf(b, `<line x1="0" x2="0" y1="0" y2="%.0f" stroke="#333"/>`+"\n", ph)
	b.WriteString("</g></g>\n")
}
