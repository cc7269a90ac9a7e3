//go:build unix

package prompt

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) the process has used.
// Benchmarks report it per op next to wall time because the machines this
// is developed on are shared: CPU time is far less disturbed by other
// processes than ns/op.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
