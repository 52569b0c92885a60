// Package cputime reads the CPU time the process has used, for the
// benchmarks and twbench.
package cputime
