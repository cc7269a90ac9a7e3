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
