//go:build !unix

package server

import "time"

// ProcessCPU is 0 where getrusage is not at hand: the CPU figures of the
// record benchmarks are left out there.
func ProcessCPU() time.Duration { return 0 }
