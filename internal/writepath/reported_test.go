package writepath_test

import (
	"context"
	"errors"
	"testing"

	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/internal/writepath"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
)

// reporting is a layer that reports entries, and fails its Flush with
// err.
type reporting struct {
	layer.Layer
	entries []audit.Entry
	flushed int
	err     error
}

func (r *reporting) Flush(context.Context) error { r.flushed++; return r.err }

func (r *reporting) AuditEntries() []audit.Entry {
	out := r.entries
	r.entries = nil
	return out
}

// TakeReported adds what the reporters made at the run's depth, flushes
// them only when asked, and returns a failed flush after adding what
// was made.
func TestTakeReported(t *testing.T) {
	sem, err := semanticmemory.New(semanticmemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	r := &reporting{Layer: sem, entries: []audit.Entry{{Op: audit.OpWrite, Key: "f1", Step: 2}}, err: errors.New("stopped")}
	var au writepath.Auditor
	if err := writepath.TakeReported(t.Context(), &au, []writepath.Reporter{r}, 1, false); err != nil || r.flushed != 0 {
		t.Fatalf("TakeReported = %v, %d flushes, want no flush", err, r.flushed)
	}
	if e := au.Entries(); len(e) != 1 || e[0].Depth != 1 || e[0].Key != "f1" {
		t.Errorf("entries %+v, want f1 at depth 1", e)
	}
	r.entries = []audit.Entry{{Op: audit.OpForget, Key: "f2"}}
	if err := writepath.TakeReported(t.Context(), &au, []writepath.Reporter{r}, 0, true); err == nil || r.flushed != 1 {
		t.Errorf("TakeReported with flush = %v, %d flushes, want the flush's error", err, r.flushed)
	}
	if e := au.Entries(); len(e) != 2 || e[1].Key != "f2" {
		t.Errorf("entries %+v, want f2 added despite the failed flush", e)
	}
}

// BenchmarkTakeReported is the per-step cost the loop pays for a
// semantic memory without consolidation: one AuditEntries call that
// finds nothing.
func BenchmarkTakeReported(b *testing.B) {
	sem, err := semanticmemory.New(semanticmemory.Config{})
	if err != nil {
		b.Fatal(err)
	}
	st, err := layer.NewStack(layer.StackConfig{Layers: []layer.Layer{sem}, Env: layer.Env{ThreadID: "t"}})
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Init(context.Background()); err != nil {
		b.Fatal(err)
	}
	rs := writepath.Reporters(st)
	if len(rs) != 1 {
		b.Fatalf("%d reporters, want the semantic layer", len(rs))
	}
	var au writepath.Auditor
	b.ReportAllocs()
	for b.Loop() {
		_ = writepath.TakeReported(b.Context(), &au, rs, 0, false)
	}
}
