package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// cdfPoints is how many points each lateness CDF line has at most.
const cdfPoints = 2000

// minLateness is where the log-scale lateness axis starts: samples below
// it, zero or early ones included, are drawn at it.
const minLateness = time.Microsecond

// Size of one panel of the plot, and of the caption strip under the
// panels.
const (
	panelWidth    = 6 * vg.Inch
	panelHeight   = 4.5 * vg.Inch
	captionHeight = vg.Inch / 3
	captionSize   = 9 // points
)

// writePlot draws the panels there is data for into path, side by side:
// the fire scenario's lateness CDF, then startstop's ns/op against N,
// with plotCaption(now) under them. The format, PNG or SVG, follows the
// file's extension.
func writePlot(path string, e *env, now time.Time) error {
	var plots []*plot.Plot
	if len(e.lateOrder) > 0 {
		p, err := latenessPlot(e)
		if err != nil {
			return err
		}
		plots = append(plots, p)
	}
	if len(e.startstop) > 0 {
		p, err := startStopPlot(e.startstop)
		if err != nil {
			return err
		}
		plots = append(plots, p)
	}
	if len(plots) == 0 {
		return errors.New("nothing to plot: run the fire or the startstop scenario")
	}

	w, h := panelWidth*vg.Length(len(plots)), panelHeight+captionHeight
	var c interface {
		vg.CanvasSizer
		io.WriterTo
	}
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".png":
		c = vgimg.PngCanvas{Canvas: vgimg.New(w, h)}
	case ".svg":
		c = vgsvg.New(w, h)
	default:
		return fmt.Errorf("cannot draw %q: the file must end in .png or .svg", path)
	}
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Inch / 4, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	canvases := plot.Align([][]*plot.Plot{plots}, tiles, draw.Crop(dc, 0, 0, captionHeight, 0))
	for i, p := range plots {
		p.Draw(canvases[0][i])
	}
	caption := plots[0].Title.TextStyle
	caption.Font.Size = captionSize
	caption.XAlign, caption.YAlign = draw.XCenter, draw.YCenter
	dc.FillText(caption, vg.Point{X: dc.Center().X, Y: dc.Min.Y + captionHeight/2}, plotCaption(now))

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// latenessPlot draws the cumulative distribution of lateness of each
// engine that fire measured, on a log scale of microseconds.
func latenessPlot(e *env) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("fire: %s timers over %v", formatCount(e.opts.fireN), e.opts.window)
	if e.opts.rounds > 1 {
		p.Title.Text += fmt.Sprintf(", %d rounds", e.opts.rounds)
	}
	p.X.Label.Text = "lateness (µs, log scale; lower is better)"
	p.Y.Label.Text = "fraction of timers fired by then (higher is better)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plainTicks{plot.LogTicks{Prec: -1}}
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())

	var args []any
	for _, label := range e.lateOrder {
		args = append(args, label, cdf(e.lateness[label]))
	}
	if err := plotutil.AddLines(p, args...); err != nil {
		return nil, err
	}
	return p, nil
}

// cdf returns at most cdfPoints points of the empirical CDF of sorted
// samples: x in microseconds (at least minLateness), y the fraction of
// samples at or below x.
func cdf(sorted []time.Duration) plotter.XYs {
	n := len(sorted)
	m := min(n, cdfPoints)
	xys := make(plotter.XYs, 0, m)
	for k := 1; k <= m; k++ {
		i := k*n/m - 1
		xys = append(xys, plotter.XY{X: micros(max(sorted[i], minLateness)), Y: float64(i+1) / float64(n)})
	}
	return xys
}

// startStopPlot draws startstop's ns per AfterFunc+Stop pair against the
// number of timers pending, for both engines.
func startStopPlot(points []startstopPoint) (*plot.Plot, error) {
	scale, unit := 1e3, "thousands"
	maxN, maxNs := 0, 0.0
	for _, pt := range points {
		maxN = max(maxN, pt.n)
		maxNs = max(maxNs, pt.wheelNs, pt.runtime)
	}
	if maxN >= 1_000_000 {
		scale, unit = 1e6, "millions"
	}

	p := plot.New()
	p.Title.Text = "startstop: AfterFunc(1s)+Stop"
	p.X.Label.Text = "timers pending (" + unit + ")"
	p.Y.Label.Text = "ns per start+stop (lower is better)"
	// Room above the lines for the legend.
	p.X.Min, p.Y.Min, p.Y.Max = 0, 0, maxNs*1.3
	p.X.Tick.Marker = plainTicks{plot.DefaultTicks{}}
	p.Y.Tick.Marker = plainTicks{plot.DefaultTicks{}}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())

	wheel := make(plotter.XYs, len(points))
	rt := make(plotter.XYs, len(points))
	for i, pt := range points {
		x := float64(pt.n) / scale
		wheel[i] = plotter.XY{X: x, Y: pt.wheelNs}
		rt[i] = plotter.XY{X: x, Y: pt.runtime}
	}
	if err := plotutil.AddLinePoints(p, "wheel", wheel, "runtime", rt); err != nil {
		return nil, err
	}
	return p, nil
}

// plainTicks are the ticks of a gonum Ticker labelled as the tables are
// printed: no trailing zeros (250 rather than 250.00) and no exponent
// (1000000 rather than 1e+06).
type plainTicks struct{ plot.Ticker }

// Ticks returns the Ticker's ticks between min and max, relabelled.
func (p plainTicks) Ticks(min, max float64) []plot.Tick {
	ticks := p.Ticker.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', -1, 64)
		}
	}
	return ticks
}

// plotCaption describes the run under the plot: the machine (CPU model,
// cores), the Go version and the date.
func plotCaption(now time.Time) string {
	return fmt.Sprintf("%s, %d cores (GOMAXPROCS %d), %s, %s",
		cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), now.Format("2006-01-02"))
}
