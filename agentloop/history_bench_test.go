package agentloop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/history"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/sqlite"
	"github.com/memlayer/memlayer/thread"
)

// BenchmarkLongThread measures one thread on SQLite (a file) at turn 10
// and at turn 1,000. A turn is two steps: a tool call with a 2 KB result,
// then the answer. The thread is built up to the turn before once; each
// op runs four turns (one cycle of the default summary threshold, so
// each op makes one summary) on a copy of it (the records a run reads:
// head, summary, layers, and the segments the summary does not cover),
// made with the timer stopped. It reports memlayer's own overhead per
// step (the step's time minus the model's and the tool's: the mean over
// the op's eight steps, and the median step), the bytes handed to the
// store per step, and the process CPU time per op.
func BenchmarkLongThread(b *testing.B) {
	const cycle = history.DefaultSummarizeAfter
	for _, turn := range []int{10, 1000} {
		b.Run(fmt.Sprintf("turn=%d", turn), func(b *testing.B) {
			ctx := context.Background()
			db, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(b.TempDir(), "thread.db")})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			store := &putCounter{Store: db}
			var mu sync.Mutex
			var overheads []time.Duration
			var record bool
			a := mustAgent(b, agentloop.Config{Model: agenttest.NewFunc(pagesPolicy), Store: store, Tools: []agentloop.Tool{pagesTool(2000)},
				Logger: slog.New(slog.DiscardHandler),
				Observer: func(e agentloop.Event) {
					if e.Kind == agentloop.EventStep && record {
						mu.Lock()
						overheads = append(overheads, e.Duration-e.ModelTime-e.ToolTime)
						mu.Unlock()
					}
				}})
			for i := 1; i < turn; i++ {
				if _, err := a.Run(ctx, agentloop.RunInput{ThreadID: "base", Input: fmt.Sprintf("Page %d", i)}); err != nil {
					b.Fatal(err)
				}
			}
			var bytes int64
			n := 0
			b.ReportAllocs()
			cpu0, cpuStopped := cpuTime(), time.Duration(0)
			for b.Loop() {
				b.StopTimer()
				c0 := cpuTime()
				n++
				thread := fmt.Sprintf("copy-%d", n)
				copyThread(b, db, "base", thread)
				record = true
				before := store.bytes.Load()
				cpuStopped += cpuTime() - c0
				b.StartTimer()
				for k := range cycle {
					res, err := a.Run(ctx, agentloop.RunInput{ThreadID: thread, Input: fmt.Sprintf("Page %d", turn+k)})
					if err != nil || res.Steps != 2 {
						b.Fatalf("turn %d: %v, %d steps", turn+k, err, res.Steps)
					}
				}
				bytes += store.bytes.Load() - before
			}
			b.StopTimer()
			if cpu := cpuTime(); cpu0 > 0 && n > 0 {
				b.ReportMetric(float64(cpu-cpu0-cpuStopped)/float64(n)/1e3, "cpu-µs/op")
			}
			b.ReportMetric(float64(bytes)/float64(2*cycle*n), "bytes-put/step")
			if len(overheads) > 0 {
				var sum time.Duration
				for _, o := range overheads {
					sum += o
				}
				slices.Sort(overheads)
				b.ReportMetric(float64(sum.Nanoseconds())/float64(len(overheads))/1e3, "µs-overhead/step(mean)")
				b.ReportMetric(float64(overheads[len(overheads)/2].Nanoseconds())/1e3, "µs-overhead/step(median)")
			}
		})
	}
}

// copyThread copies the records of thread from that a run reads to
// thread to: the head, the summary, the layers' snapshots and the
// segments back to the summary's coverage.
func copyThread(b *testing.B, st storage.Store, from, to string) {
	ctx := context.Background()
	cp := func(name string) []byte {
		it, err := st.Get(ctx, storage.ThreadKey(from, name))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := st.Put(ctx, storage.ThreadKey(to, name), it.Value, storage.NoVersion); err != nil {
			b.Fatal(err)
		}
		return it.Value
	}
	var head struct {
		Tail, Summary string
		Covers        int
		Layers        map[string]string
	}
	if err := json.Unmarshal(cp(thread.HeadName), &head); err != nil {
		b.Fatal(err)
	}
	if head.Summary != "" {
		cp(head.Summary)
	}
	for _, name := range head.Layers {
		cp(name)
	}
	for name := head.Tail; name != "" && strings.HasPrefix(name, "seg."); {
		var seg struct {
			First int
			Prev  string
		}
		if err := json.Unmarshal(cp(name), &seg); err != nil {
			b.Fatal(err)
		}
		if seg.First <= head.Covers {
			break
		}
		name = seg.Prev
	}
}
