package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// writeTable writes rows as an aligned table: scenario, figure, ours,
// runtime, ratio (ours/runtime) and unit. The scenario is named on its
// first row only; figures only the wheel has show "-" for runtime and
// ratio.
func writeTable(w io.Writer, rows []row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tFIGURE\tOURS\tRUNTIME\tRATIO\tUNIT")
	last := ""
	for _, r := range rows {
		name := r.Scenario
		if name == last {
			name = ""
		}
		last = r.Scenario
		rt, ratio := "-", "-"
		if r.Runtime != nil {
			rt = formatValue(*r.Runtime)
		}
		if q, ok := r.ratio(); ok {
			ratio = formatRatio(q)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, r.Figure, formatValue(r.Ours), rt, ratio, r.Unit)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "\nratio = ours/runtime: below 1x is better for times, bytes, allocs, lateness and CPU; above 1x for ops/s, expiries/s and scaling.")
	return err
}

// formatValue writes v with about three significant digits, whole
// numbers as such, and numbers of 1000 or more with thousands separators:
// 1,000,000, 523, 52.3, 5.23, 0.523, 7.
func formatValue(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case v == 0:
		return "0"
	case a >= 1000 || v == math.Trunc(v):
		return groupThousands(strconv.FormatFloat(v, 'f', 0, 64))
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// groupThousands puts a comma between each group of three digits of an
// integer written in decimal, with an optional sign.
func groupThousands(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return sign + b.String()
}

// formatRatio writes a ratio such as 0.31x, 2.5x or 120x.
func formatRatio(q float64) string {
	switch a := math.Abs(q); {
	case math.IsNaN(q) || math.IsInf(q, 0):
		return "-"
	case a >= 100:
		return strconv.FormatFloat(q, 'f', 0, 64) + "x"
	case a >= 10:
		return strconv.FormatFloat(q, 'f', 1, 64) + "x"
	}
	return strconv.FormatFloat(q, 'f', 2, 64) + "x"
}
