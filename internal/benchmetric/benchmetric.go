// Package benchmetric holds the extra metrics the module's benchmarks
// report: CPU time per operation and the fastest batch, both robust to a
// machine whose cores are shared with other busy processes.
package benchmetric

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// CPU measures the CPU time the whole process spends (every thread,
// the garbage collector included), so that a benchmark can report its
// cost per operation independently of how busy the machine's other
// processes keep the cores: wall-clock ns/op on a shared 2-core machine
// mostly measures waiting for a core.
type CPU struct{ start time.Duration }

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// StartCPU starts measuring.
func StartCPU() CPU { return CPU{processCPU()} }

// Report adds the "cpu-ns/op" metric.
func (c CPU) Report(b *testing.B) {
	if b.N > 0 {
		b.ReportMetric(float64(processCPU()-c.start)/float64(b.N), "cpu-ns/op")
	}
}

// Batch times a benchmark loop in batches of 4096 operations (long
// enough to include the garbage collector's share) and keeps the fastest
// batch. On a machine whose cores are shared with other busy processes,
// interference only ever adds time, so the fastest batch is the best
// estimate of the cost on an idle machine; it is reported next to the
// ordinary ns/op, never instead of it.
type Batch struct {
	n     int
	start time.Time
	best  time.Duration
}

const timerBatch = 4096

func (t *Batch) Tick() {
	if t.n == 0 && t.start.IsZero() {
		t.start = time.Now()
	}
	t.n++
	if t.n == timerBatch {
		now := time.Now()
		if d := now.Sub(t.start) / timerBatch; t.best == 0 || d < t.best {
			t.best = d
		}
		t.n, t.start = 0, now
	}
}

// Report adds the "best-batch-ns/op" metric.
func (t *Batch) Report(b *testing.B) {
	if t.best > 0 {
		b.ReportMetric(float64(t.best.Nanoseconds()), "best-batch-ns/op")
	}
}

// HeapInUse returns the live heap after a full collection.
func HeapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
