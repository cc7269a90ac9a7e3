//go:build !unix

package agentloop_test

import "time"

// cpuTime is not measured here; BenchmarkStep then omits cpu-µs/op.
func cpuTime() time.Duration { return 0 }
