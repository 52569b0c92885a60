package main

import (
	"encoding/json"
	"io"
	"math"
	"os"
	"runtime"
	"time"
)

// report is the machine-readable result of a run, written by -json.
type report struct {
	GoVersion  string      `json:"go_version"`
	GOMAXPROCS int         `json:"gomaxprocs"`
	CPUModel   string      `json:"cpu_model"`
	Date       string      `json:"date"`
	Args       []string    `json:"args"`
	Wheel      wheelConfig `json:"wheel"`
	Rows       []jsonRow   `json:"rows"`
}

// wheelConfig is the engine configuration the run used.
type wheelConfig struct {
	Tick      string `json:"tick"`
	WheelSize int    `json:"wheel_size"`
	Executor  string `json:"executor"`
}

// jsonRow is one row of the table. Runtime and Ratio are null for figures
// only the wheel has (and Ratio when the runtime's figure is zero, or
// either is negative).
type jsonRow struct {
	Scenario string   `json:"scenario"`
	Figure   string   `json:"figure"`
	Ours     *float64 `json:"ours"`
	Runtime  *float64 `json:"runtime"`
	Ratio    *float64 `json:"ratio"`
	Unit     string   `json:"unit"`
}

// newReport returns the report of a run with args and o that produced
// rows, dated now.
func newReport(args []string, o *options, rows []row, now time.Time) report {
	rep := report{
		GoVersion:  runtime.Version(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		CPUModel:   cpuModel(),
		Date:       now.Format(time.RFC3339),
		Args:       append([]string{}, args...),
		Wheel:      wheelConfig{Tick: o.tick.String(), WheelSize: o.wheelSize, Executor: o.executor},
		Rows:       make([]jsonRow, len(rows)),
	}
	for i, r := range rows {
		jr := jsonRow{Scenario: r.Scenario, Figure: r.Figure, Ours: finite(r.Ours), Unit: r.Unit}
		if r.Runtime != nil {
			jr.Runtime = finite(*r.Runtime)
		}
		if q, ok := r.ratio(); ok {
			jr.Ratio = finite(q)
		}
		rep.Rows[i] = jr
	}
	return rep
}

// finite returns a pointer to v, or nil when JSON cannot hold it.
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// writeJSON writes rep to path, or to stdout when path is "-".
func writeJSON(path string, stdout io.Writer, rep report) error {
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if path == "-" {
		_, err = stdout.Write(data)
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
