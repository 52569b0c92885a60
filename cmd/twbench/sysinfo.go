package main

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/seed64e23a5c/timingwheel/internal/cputime"
)

// cpuModel returns the "model name" of /proc/cpuinfo, or runtime.GOARCH
// when there is none.
func cpuModel() string {
	if v, ok := procField("/proc/cpuinfo", "model name"); ok && v != "" {
		return v
	}
	return runtime.GOARCH
}

// memAvailable returns MemAvailable from /proc/meminfo in bytes, and
// false when it cannot be read.
func memAvailable() (int64, bool) {
	v, ok := procField("/proc/meminfo", "MemAvailable")
	if !ok {
		return 0, false
	}
	f := strings.Fields(v) // "23456789 kB"
	if len(f) == 0 {
		return 0, false
	}
	kb, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, false
	}
	if len(f) > 1 && f[1] != "kB" {
		return 0, false
	}
	return kb * 1024, true
}

// procField returns the value of the first "key: value" line of a /proc
// file whose key is key.
func procField(path, key string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// cpuTime returns the user+system CPU time the process has used so far,
// or 0 where the system does not say.
func cpuTime() time.Duration {
	d, _ := cputime.Process()
	return d
}
