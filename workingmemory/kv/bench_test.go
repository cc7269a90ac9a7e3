package kv

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memlayer/memlayer/internal/benchmetric"
)

// smallStruct is the "small struct" of the key-value benchmarks.
type smallStruct struct {
	ID    int
	Name  string
	Score float64
	Done  bool
}

func BenchmarkKVGet(b *testing.B) {
	kv := New(Config{})
	if err := Set(kv, "task", smallStruct{7, "draft notes", 0.5, false}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu := benchmetric.StartCPU()
	var bt benchmetric.Batch
	for b.Loop() {
		if _, ok, err := Get[smallStruct](kv, "task"); !ok || err != nil {
			b.Fatal(ok, err)
		}
		bt.Tick()
	}
	cpu.Report(b)
	bt.Report(b)
}

// BenchmarkKVGetFallback reads through two scopes to the root.
func BenchmarkKVGetFallback(b *testing.B) {
	kv := New(Config{})
	_ = Set(kv, "task", smallStruct{7, "draft notes", 0.5, false})
	c, _ := kv.Child("a")
	g, _ := c.Child("b")
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, _ := Get[smallStruct](g, "task"); !ok {
			b.Fatal("missing")
		}
	}
}

// BenchmarkKVGetDecoded reads a value with references, which is decoded
// from its JSON on every Get.
func BenchmarkKVGetDecoded(b *testing.B) {
	kv := New(Config{})
	_ = Set(kv, "tags", withRefs{Tags: []string{"a", "b"}})
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, _ := Get[withRefs](kv, "tags"); !ok {
			b.Fatal("missing")
		}
	}
}

func BenchmarkKVSet(b *testing.B) {
	kv := New(Config{})
	v := smallStruct{7, "draft notes", 0.5, false}
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = fmt.Sprint("task-", i)
	}
	b.ReportAllocs()
	cpu := benchmetric.StartCPU()
	var bt benchmetric.Batch
	i := 0
	for b.Loop() {
		v.ID = i
		if err := Set(kv, keys[i%len(keys)], v); err != nil {
			b.Fatal(err)
		}
		bt.Tick()
		i++
	}
	cpu.Report(b)
	bt.Report(b)
}

// BenchmarkKVLatency times single Gets and Sets one by one and reports
// their 50th, 95th and 99th percentiles.
func BenchmarkKVLatency(b *testing.B) {
	kv := New(Config{})
	v := smallStruct{7, "draft notes", 0.5, false}
	_ = Set(kv, "task", v)
	gets := make([]time.Duration, 0, 1<<16)
	sets := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		t0 := time.Now()
		_, _, _ = Get[smallStruct](kv, "task")
		t1 := time.Now()
		v.ID = i
		_ = Set(kv, "task", v)
		t2 := time.Now()
		if len(gets) < cap(gets) {
			gets = append(gets, t1.Sub(t0))
			sets = append(sets, t2.Sub(t1))
		}
		i++
	}
	pct := func(d []time.Duration, p float64) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[min(len(s)-1, int(p*float64(len(s))))].Nanoseconds())
	}
	b.ReportMetric(pct(gets, 0.50), "get-p50-ns")
	b.ReportMetric(pct(gets, 0.95), "get-p95-ns")
	b.ReportMetric(pct(gets, 0.99), "get-p99-ns")
	b.ReportMetric(pct(sets, 0.50), "set-p50-ns")
	b.ReportMetric(pct(sets, 0.95), "set-p95-ns")
	b.ReportMetric(pct(sets, 0.99), "set-p99-ns")
}

// TestKVMemory10k stores 10,000 entries of 200 bytes and checks that they
// take less than 10 MB of heap.
func TestKVMemory10k(t *testing.T) {
	if testing.Short() || benchmetric.Race {
		t.Skip("memory measurement: not under -short or -race")
	}
	value := strings.Repeat("x", 198) // 200 bytes of JSON with the quotes
	keys := make([]string, 10000)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%05d", i)
	}
	before := benchmetric.HeapInUse()
	kv := New(Config{})
	for _, k := range keys {
		if err := Set(kv, k, value); err != nil {
			t.Fatal(err)
		}
	}
	used := benchmetric.HeapInUse() - before
	runtime.KeepAlive(kv)
	t.Logf("10,000 entries of 200 bytes: %d bytes of heap (%.0f per entry)", used, float64(used)/10000)
	if used > 10<<20 {
		t.Errorf("10,000 entries take %d bytes, want under 10 MB", used)
	}
	if n, _ := kv.Count(); n != 10000 {
		t.Errorf("Count = %d", n)
	}
}
