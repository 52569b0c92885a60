package main

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// maxDecimals is the most decimals a table cell has: a value that rounds
// to zero at that precision is written as below it ("<0.001"), never
// with an exponent. Times are moved to a smaller unit before they get
// there (see formatCells); what is left are amortized counts such as
// allocs/op, where less than a thousandth is as good as none.
const maxDecimals = 3

// timeUnits are the units of time a row may be written in, largest
// first; each is 1000 of the next.
var timeUnits = []string{unitSeconds, unitMillis, unitMicros, unitNanos}

// unitNanos is nanoseconds, which the table uses for times below 1µs.
const unitNanos = "ns"

// smallTime is the value below which a time moves to a smaller unit in
// the table. It is below 1 so that the rows of one figure (p50 0.646 ms,
// p99 1.48 ms) mostly stay in one unit.
const smallTime = 0.1

// formatCells returns the table's OURS and RUNTIME cells of r (RUNTIME
// "-" when there is none) and the unit they are written in. A time
// (s, ms, µs) whose larger value is below smallTime is moved to the next
// smaller unit until it is not or reaches ns, both cells alike, so that
// 0.00142 s reads 1.42 ms.
func formatCells(r row) (ours, runtime, unit string) {
	scale, unit := displayUnit(r)
	runtime = "-"
	if r.Runtime != nil {
		runtime = formatValue(*r.Runtime * scale)
	}
	return formatValue(r.Ours * scale), runtime, unit
}

// displayUnit returns the factor that r's values are multiplied by for
// the table, and the unit they are then in.
func displayUnit(r row) (float64, string) {
	i := slices.Index(timeUnits, r.Unit)
	if i < 0 {
		return 1, r.Unit
	}
	largest := math.Abs(r.Ours)
	if r.Runtime != nil {
		largest = max(largest, math.Abs(*r.Runtime))
	}
	scale := 1.0
	for largest != 0 && largest*scale < smallTime && i+1 < len(timeUnits) && !math.IsNaN(largest) {
		scale *= 1000
		i++
	}
	return scale, timeUnits[i]
}

// formatValue writes v in fixed notation with about three significant
// digits: whole numbers and numbers of 1000 or more without decimals and
// with thousands separators (1,234,567), then 523, 52.3, 5.23, 0.523,
// 0.05, down to maxDecimals decimals: 0.001, then <0.001. Never an
// exponent.
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
	return formatFraction(v)
}

// formatFraction writes v, with |v| < 1, with up to three significant
// digits and maxDecimals decimals, without trailing zeros (0.523, 0.05,
// 0.003), or as below the smallest decimal when it rounds to zero.
func formatFraction(v float64) string {
	decimals := min(2-int(math.Floor(math.Log10(math.Abs(v)))), maxDecimals)
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "" || s == "-" || s == "-0" || s == "0" {
		smallest := "0." + strings.Repeat("0", maxDecimals-1) + "1"
		if v < 0 {
			return ">-" + smallest
		}
		return "<" + smallest
	}
	return s
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

// formatRatio writes a ratio such as 0.31x, 2.5x or 120x, and one that
// rounds to zero as <0.01x.
func formatRatio(q float64) string {
	switch a := math.Abs(q); {
	case math.IsNaN(q) || math.IsInf(q, 0):
		return "-"
	case a >= 100:
		return groupThousands(strconv.FormatFloat(q, 'f', 0, 64)) + "x"
	case a >= 10:
		return strconv.FormatFloat(q, 'f', 1, 64) + "x"
	case q != 0 && a < 0.005:
		return "<0.01x"
	}
	return strconv.FormatFloat(q, 'f', 2, 64) + "x"
}
