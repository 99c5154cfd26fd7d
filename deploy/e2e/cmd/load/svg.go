package main

import (
	"fmt"
	"html"
	"strings"
	"time"
)

var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

// svg draws two panels over time: every process's RSS (MiB) and the p95
// latency of the calls finished in each sampling interval (ms), with the
// end of the warm-up marked. Plain SVG, no plotting dependency.
func (r *result) svg(c config) string {
	const w, ph, left, top, gap = 900, 260, 60, 30, 60
	width := float64(w - left - 170)
	end := r.elapsed.Seconds()
	if end <= 0 {
		end = 1
	}
	x := func(at time.Duration) float64 { return left + at.Seconds()/end*width }
	var b strings.Builder
	h := top + 2*ph + gap + 40
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="13">Soak: %.0f operations/s for %s — RSS per process (top) and p95 latency per %s (bottom)</text>`+"\n", left, c.rate, c.duration, c.sample)

	panel := func(y0 float64, title string, series map[string][]float64, ts []time.Duration, names []string) {
		maxV := 0.0
		for _, vs := range series {
			for _, v := range vs {
				maxV = max(maxV, v)
			}
		}
		if maxV <= 0 {
			maxV = 1
		}
		maxV *= 1.1
		y := func(v float64) float64 { return y0 + ph - v/maxV*ph }
		fmt.Fprintf(&b, `<rect x="%d" y="%.0f" width="%.0f" height="%d" fill="none" stroke="#999"/>`+"\n", left, y0, width, ph)
		fmt.Fprintf(&b, `<text x="%d" y="%.0f">%s</text>`+"\n", left, y0-6, html.EscapeString(title))
		for i := 0; i <= 4; i++ {
			v := maxV * float64(i) / 4
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%.0f</text><line x1="%d" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#eee"/>`+"\n",
				left-4, y(v)+4, v, left, left+width, y(v), y(v))
		}
		wx := x(c.warmup)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" stroke="#aaa" stroke-dasharray="4 3"/>`+"\n", wx, wx, y0, y0+ph)
		for i, n := range names {
			vs := series[n]
			var pts []string
			for j, v := range vs {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(ts[j]), y(v)))
			}
			col := palette[i%len(palette)]
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", col, strings.Join(pts, " "))
			ly := y0 + 12 + float64(i)*14
			fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="10" height="3" fill="%s"/><text x="%.0f" y="%.0f">%s</text>`+"\n",
				left+width+10, ly-4, col, left+width+25, ly, html.EscapeString(n))
		}
	}
	var ts []time.Duration
	rss := map[string][]float64{}
	lat := map[string][]float64{"p95 ms": nil}
	for _, s := range r.samples {
		ts = append(ts, s.at)
		for _, p := range processes {
			rss[p] = append(rss[p], s.rss[p])
		}
		lat["p95 ms"] = append(lat["p95 ms"], float64(s.p95)/1e6)
	}
	panel(top+10, "RSS (MiB)", rss, ts, processes)
	panel(top+10+ph+gap, "p95 latency (ms)", lat, ts, []string{"p95 ms"})
	fmt.Fprintf(&b, `<text x="%.0f" y="%d" text-anchor="middle">time (s), 0 to %.0f; dashed line: end of warm-up</text>`+"\n", left+width/2, h-8, end)
	b.WriteString("</svg>\n")
	return b.String()
}
