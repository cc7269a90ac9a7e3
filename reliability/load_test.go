package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/entitymemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
)

// loadModel is the scripted model of the load scenario: at step k of a
// turn it fetches page-k and writes the step into the scratchpad, and at
// the last step it answers. It records nothing (agenttest.Model keeps
// every request, which would dominate the memory figures) and is safe for
// concurrent use.
type loadModel struct{ steps int }

func (m loadModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k := 0
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role != llms.ChatMessageTypeHuman; i-- {
		if msgs[i].Role == llms.ChatMessageTypeAI {
			k++
		}
	}
	if k >= m.steps-1 {
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "done", StopReason: "stop"}}}, nil
	}
	page := "page-" + strconv.Itoa(k)
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{
		StopReason: "tool_calls",
		ToolCalls: []llms.ToolCall{
			{ID: fmt.Sprintf("c%d_0", k), Type: "function", FunctionCall: &llms.FunctionCall{Name: "cms_getPage", Arguments: `{"id":"` + page + `"}`}},
			{ID: fmt.Sprintf("c%d_1", k), Type: "function", FunctionCall: &llms.FunctionCall{Name: wmTool, Arguments: fmt.Sprintf(`{"step":%d,"page":%q}`, k, page)}},
		},
	}}}, nil
}

func (m loadModel) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// loadFigures are the measurements of one load run.
type loadFigures struct {
	steps                  int
	wall                   time.Duration
	p50, p99, max          time.Duration // memlayer overhead per step
	allocPerStep           uint64        // bytes allocated per step
	peakHeap, retainedHeap uint64
}

// TestLoad runs 1,000 threads × 20 steps of an agent with a scratchpad
// and entity memory on the scripted model, 16 at a time, against the
// in-process store, SQLite and Redis, and reports throughput, memlayer's
// overhead per step (the step's time minus the model's and the tools',
// from agentloop's step events) and memory. With 16 runs on two cores a
// step's wall time includes waiting for a CPU, so a second pass runs 100
// threads one at a time to measure the overhead of a step alone.
func TestLoad(t *testing.T) {
	parallelInMakeTest(t)
	specs := append([]storeSpec{{Backend: "memory"}}, sharedBackends(t)...)
	for _, spec := range specs {
		t.Run(spec.Backend, func(t *testing.T) {
			if spec.Backend == "redis" {
				spec.Namespace += "load:"
			}
			st := mustOpen(t, spec)
			for _, pass := range []struct {
				name                        string
				threads, steps, concurrency int
			}{
				{"throughput", pick(1000, 24), pick(20, 10), 16},
				{"latency", pick(100, 4), pick(20, 10), 1},
			} {
				f := runLoad(t, st, pass.name, pass.threads, pass.steps, pass.concurrency)
				t.Logf("FIGURE load %s %s: %d threads × %d steps, %d at a time: %d steps in %v = %.0f steps/s; overhead per step p50 %v, p99 %v, max %v; %.1f KiB allocated per step, peak heap %.1f MiB, heap after GC %.1f MiB",
					spec.Backend, pass.name, pass.threads, pass.steps, pass.concurrency, f.steps, f.wall.Round(time.Millisecond), float64(f.steps)/f.wall.Seconds(),
					f.p50.Round(time.Microsecond), f.p99.Round(time.Microsecond), f.max.Round(time.Microsecond),
					float64(f.allocPerStep)/1024, float64(f.peakHeap)/(1<<20), float64(f.retainedHeap)/(1<<20))
			}
		})
	}
}

func runLoad(t *testing.T, st storage.Store, pass string, threads, steps, concurrency int) loadFigures {
	ctx := t.Context()
	thread := func(i int) string { return fmt.Sprintf("load-%s-%04d", pass, i) }
	wm, err := workingmemory.New(workingmemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ents, err := entitymemory.New(entitymemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	getPage := agentloop.NewTool("cms_getPage", "Get a CMS page by ID.", json.RawMessage(pageSchema),
		func(ctx context.Context, in struct{ ID string }) (map[string]any, error) {
			return map[string]any{"page": map[string]string{"id": in.ID, "title": "Page " + in.ID}}, nil
		})
	overheads := make([]time.Duration, threads*steps)
	var n atomic.Int64
	agent, err := agentloop.New(agentloop.Config{
		Model:        loadModel{steps: steps},
		Instructions: "You are a CMS assistant.",
		Layers:       []layer.Layer{wm, ents},
		Tools:        []agentloop.Tool{getPage},
		Store:        st,
		MaxSteps:     steps,
		Observer: func(e agentloop.Event) {
			if e.Kind == agentloop.EventStep {
				if i := n.Add(1) - 1; int(i) < len(overheads) {
					overheads[i] = e.Duration - e.ModelTime - e.ToolTime
				}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()

	ids := make(chan int)
	var wg sync.WaitGroup
	var failures atomic.Int64
	start := time.Now()
	for range concurrency {
		wg.Go(func() {
			for i := range ids {
				res, err := agent.Run(ctx, agentloop.RunInput{ThreadID: thread(i), ResourceID: "tenant-" + strconv.Itoa(i%10), Input: "work"})
				if err != nil || res.Steps != steps || res.Output != "done" {
					if failures.Add(1) <= 5 {
						t.Errorf("thread %d: %v (%d steps)", i, err, res.Steps)
					}
				}
			}
		})
	}
	for i := range threads {
		ids <- i
	}
	close(ids)
	wg.Wait()
	wall := time.Since(start)
	close(stopSampling)
	<-sampled
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if after.HeapAlloc > peak.Load() {
		peak.Store(after.HeapAlloc)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	runtime.GC()
	runtime.ReadMemStats(&after)

	if got := int(n.Load()); got != threads*steps {
		t.Errorf("%d step events, want %d", got, threads*steps)
	}
	if failures.Load() > 0 {
		t.Fatalf("%d of %d runs failed", failures.Load(), threads)
	}
	// Every thread's work is stored: its checkpoint and its scratchpad.
	for i := range threads {
		cp, err := agent.LoadCheckpoint(ctx, thread(i))
		if err != nil || cp.Steps != steps {
			t.Fatalf("thread %d checkpoint: %v, want %d steps", i, err, steps)
		}
		it, err := st.Get(ctx, storage.LayerKey(workingmemory.DefaultStorageID, storage.ThreadScope(thread(i)), "state"))
		var state struct{ Step int }
		if err == nil {
			err = json.Unmarshal(it.Value, &state)
		}
		if err != nil || state.Step != steps-2 {
			t.Fatalf("thread %d scratchpad: %s, %v; want step %d", i, it.Value, err, steps-2)
		}
	}

	slices.Sort(overheads)
	q := func(p float64) time.Duration { return overheads[int(p*float64(len(overheads)-1))] }
	return loadFigures{
		steps: threads * steps, wall: wall,
		p50: q(0.50), p99: q(0.99), max: overheads[len(overheads)-1],
		allocPerStep: alloc / uint64(threads*steps),
		peakHeap:     peak.Load(), retainedHeap: after.HeapAlloc,
	}
}
