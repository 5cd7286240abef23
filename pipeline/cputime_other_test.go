//go:build !unix

package pipeline_test

import "time"

// processCPU is not measured on this platform: the benchmarks then report
// no CPU per reading.
func processCPU() time.Duration { return 0 }
