//go:build unix

package pipeline_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) this process has used
// so far: every goroutine of the benchmark, the in-process broker and the
// reading producer included, other processes not.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
