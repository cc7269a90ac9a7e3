package workingmemory

import (
	"encoding/json"
	"reflect"
	"syscall"
	"testing"
	"time"
)

// roundTrip turns a state into what encoding/json decodes (float64
// numbers), independent of this package's codec.
func roundTrip(tb testing.TB, v any) any {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		tb.Fatal(err)
	}
	return out
}

func jsonDeepEqual(a, b any) bool { return reflect.DeepEqual(a, b) }

func mustJSON(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// cpuTimer measures the CPU time the whole process spends (every thread,
// the garbage collector included), so that a benchmark can report its
// cost per operation independently of how busy the machine's other
// processes keep the cores: wall-clock ns/op on a shared 2-core machine
// mostly measures waiting for a core.
type cpuTimer struct{ start time.Duration }

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuTimer { return cpuTimer{processCPU()} }

// report adds the "cpu-ns/op" metric.
func (c cpuTimer) report(b *testing.B) {
	if b.N > 0 {
		b.ReportMetric(float64(processCPU()-c.start)/float64(b.N), "cpu-ns/op")
	}
}

// batchTimer times a benchmark loop in batches of 4096 operations (long
// enough to include the garbage collector's share) and keeps the fastest
// batch. On a machine whose cores are shared with other busy processes,
// interference only ever adds time, so the fastest batch is the best
// estimate of the cost on an idle machine; it is reported next to the
// ordinary ns/op, never instead of it.
type batchTimer struct {
	n     int
	start time.Time
	best  time.Duration
}

const timerBatch = 4096

func (t *batchTimer) tick() {
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

// report adds the "best-batch-ns/op" metric.
func (t *batchTimer) report(b *testing.B) {
	if t.best > 0 {
		b.ReportMetric(float64(t.best.Nanoseconds()), "best-batch-ns/op")
	}
}
