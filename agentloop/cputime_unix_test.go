//go:build unix

package agentloop_test

import (
	"syscall"
	"time"
)

// cpuTime returns the user plus system CPU time of the whole process so
// far. On a shared machine it is far steadier than wall time: waiting for
// a core costs wall time, not CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
