package durableweb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
)

// rates are the observer's counts per minute.
type rates struct {
	Enqueued, Delivered, Acked, Retried, Died float64
	Over                                      time.Duration // the span they were measured over; 0 if unknown
}

// rateBetween is the rates from sample a to sample b.
func rateBetween(a, b sample) rates {
	dt := b.At.Sub(a.At)
	if dt <= 0 {
		return rates{}
	}
	per := func(x, y int64) float64 { return math.Max(0, float64(y-x)) / dt.Minutes() }
	return rates{
		Enqueued: per(a.Enqueued, b.Enqueued), Delivered: per(a.Delivered, b.Delivered),
		Acked: per(a.Acked, b.Acked), Retried: per(a.Retried, b.Retried), Died: per(a.Died, b.Died),
		Over: dt,
	}
}

// perMinute is the rates over the latest span of about d.
func perMinute(ss []sample, d time.Duration) rates {
	if len(ss) < 2 {
		return rates{}
	}
	last := ss[len(ss)-1]
	first := ss[0]
	for _, s := range ss {
		if last.At.Sub(s.At) <= d {
			first = s
			break
		}
	}
	if first.At.Equal(last.At) {
		first = ss[len(ss)-2]
	}
	return rateBetween(first, last)
}

// A series is one line of a chart.
type series struct {
	name string
	v    func(i int) float64
}

// chart draws series over the last hour as SVG. Everything it writes is
// numbers and the fixed names of the series.
func chart(title string, at []time.Time, now time.Time, ss []series) []byte {
	const w, h, left, right, top, bottom = 720.0, 200.0, 48.0, 8.0, 24.0, 22.0
	top0 := 1.0
	for _, s := range ss {
		for i := range at {
			top0 = math.Max(top0, s.v(i))
		}
	}
	ymax := niceCeil(top0)
	start := now.Add(-time.Hour)
	x := func(t time.Time) float64 {
		return left + (w-left-right)*math.Max(0, t.Sub(start).Seconds())/time.Hour.Seconds()
	}
	y := func(v float64) float64 { return top + (h-top-bottom)*(1-v/ymax) }
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %g %g" font-family="sans-serif" font-size="11">`, w, h)
	fmt.Fprintf(&b, `<title>%s</title><rect width="100%%" height="100%%" fill="#fff"/>`, title)
	for _, f := range []float64{0, 0.5, 1} {
		fmt.Fprintf(&b, `<line x1="%g" x2="%g" y1="%.1f" y2="%.1f" stroke="#ddd"/>`, left, w-right, y(f*ymax), y(f*ymax))
		fmt.Fprintf(&b, `<text x="%g" y="%.1f" text-anchor="end" fill="#555">%s</text>`, left-4, y(f*ymax)+4, trimFloat(f*ymax))
	}
	fmt.Fprintf(&b, `<text x="%g" y="%g" fill="#555">60 min ago</text><text x="%g" y="%g" text-anchor="end" fill="#555">now</text>`, left, h-6, w-right, h-6)
	colors := []string{"#2563eb", "#d97706", "#dc2626", "#059669", "#7c3aed"}
	lx := left
	for k, s := range ss {
		c := colors[k%len(colors)]
		if len(at) > 0 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="`, c)
			for i, t := range at {
				fmt.Fprintf(&b, "%.1f,%.1f ", x(t), y(s.v(i)))
			}
			b.WriteString(`"/>`)
		}
		fmt.Fprintf(&b, `<rect x="%g" y="6" width="10" height="10" fill="%s"/><text x="%g" y="15">%s</text>`, lx, c, lx+14, s.name)
		lx += 14 + 7*float64(len(s.name)) + 16
	}
	if len(at) == 0 {
		fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle" fill="#555">no samples yet</text>`, w/2, h/2)
	}
	b.WriteString(`</svg>`)
	return b.Bytes()
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func writeSVG(w http.ResponseWriter, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "image/svg+xml")
	h.Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}

// countsChart draws the counts of the last hour's samples.
func (d *Dashboard) countsChart(w http.ResponseWriter, _ *http.Request) {
	ss := d.ring.samples()
	at := make([]time.Time, len(ss))
	for i, s := range ss {
		at[i] = s.At
	}
	writeSVG(w, chart("Messages by state, last hour", at, time.Now(), []series{
		{name: "pending", v: func(i int) float64 { return float64(ss[i].Pending) }},
		{name: "in flight", v: func(i int) float64 { return float64(ss[i].InFlight) }},
		{name: "dead", v: func(i int) float64 { return float64(ss[i].Dead) }},
	}))
}

// throughputChart draws the observer's rates per minute between samples.
func (d *Dashboard) throughputChart(w http.ResponseWriter, _ *http.Request) {
	ss := d.ring.samples()
	var at []time.Time
	var rs []rates
	for i := 1; i < len(ss); i++ {
		at = append(at, ss[i].At)
		rs = append(rs, rateBetween(ss[i-1], ss[i]))
	}
	writeSVG(w, chart("Messages per minute, last hour", at, time.Now(), []series{
		{name: "enqueued", v: func(i int) float64 { return rs[i].Enqueued }},
		{name: "delivered", v: func(i int) float64 { return rs[i].Delivered }},
		{name: "died", v: func(i int) float64 { return rs[i].Died }},
		{name: "acked", v: func(i int) float64 { return rs[i].Acked }},
		{name: "retried", v: func(i int) float64 { return rs[i].Retried }},
	}))
}

// statsJSON answers the page's script: the texts of the elements that
// show the counts (by their data-stat), and the raw numbers.
func (d *Dashboard) statsJSON(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	st, err := d.q.Stats(r.Context())
	out := struct {
		Pending  int               `json:"pending"`
		InFlight int               `json:"in_flight"`
		Dead     int               `json:"dead"`
		NextDue  *time.Time        `json:"next_due,omitempty"`
		Paused   bool              `json:"paused"`
		Error    string            `json:"error,omitempty"`
		Counts   *Counts           `json:"counts,omitempty"`
		Fields   map[string]string `json:"fields"`
	}{Pending: st.Pending, InFlight: st.InFlight, Dead: st.Dead, Paused: st.Paused, Fields: map[string]string{}}
	f := out.Fields
	if err != nil {
		out.Error = describe(err)
		f["error"] = "Cannot read the queue: " + out.Error
	} else {
		f["error"] = ""
		f["pending"], f["in-flight"], f["dead"] = strconv.Itoa(st.Pending), strconv.Itoa(st.InFlight), strconv.Itoa(st.Dead)
		f["next-due"], f["next-due-in"] = "none pending", ""
		if !st.NextDue.IsZero() {
			out.NextDue = &st.NextDue
			f["next-due"], f["next-due-in"] = when(st.NextDue), ago(st.NextDue, now)
		}
	}
	if o := d.cfg.observer; o != nil {
		c := o.Counts()
		out.Counts = &c
		rt := perMinute(d.ring.samples(), time.Minute)
		l := o.Lateness()
		for k, v := range map[string]float64{"rate-enqueued": rt.Enqueued, "rate-delivered": rt.Delivered,
			"rate-acked": rt.Acked, "rate-retried": rt.Retried, "rate-died": rt.Died} {
			f[k] = fmt.Sprintf("%.1f", v)
		}
		for k, v := range map[string]int64{"total-enqueued": c.Enqueued, "total-delivered": c.Delivered,
			"total-acked": c.Acked, "total-retried": c.Retried, "total-died": c.Died} {
			f[k] = strconv.FormatInt(v, 10)
		}
		f["late-n"] = strconv.Itoa(l.N)
		for k, v := range map[string]time.Duration{"late-p50": l.P50, "late-p90": l.P90, "late-p99": l.P99, "late-max": l.Max} {
			f[k] = showDuration(v)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(out)
}
