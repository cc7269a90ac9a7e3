package reliability

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt/fence"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
	"github.com/memlayer/memlayer/workingmemory/kv"
)

// kvUserArgs are the arguments of the kv-user worker.
type kvUserArgs struct {
	Store storeSpec `json:"store"`
	// Users run at once in this process, each on its own thread and
	// resource, on one agent.
	Users []string `json:"users"`
	// Runs per user, each of Steps kv_set steps.
	Runs  int `json:"runs"`
	Steps int `json:"steps"`
	// Shared is the negative control: the agent's key-value memory is one
	// KV captured by the tool and rendered by a layer without Init, as
	// kv.Layer was before it was scoped.
	Shared bool `json:"shared,omitempty"`
}

func init() { workers["kv-user"] = kvUser }

// kvScopeKey is the key user writes at step s of run r: the owner is the
// part before the first '.'.
func kvScopeKey(user string, r, s int) string { return fmt.Sprintf("%s.r%d.s%d", user, r, s) }

func kvOwner(key string) string { owner, _, _ := strings.Cut(key, "."); return owner }

// renderKV lists a key-value memory's keys, one "key=" a line.
func renderKV(mem *kv.Scope) string {
	keys, _ := mem.Keys()
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=\n")
	}
	return b.String()
}

// foreignKeys counts the "key=" lines of text whose owner is not user.
func foreignKeys(text, user string) int {
	n := 0
	for _, line := range strings.Split(text, "\n") {
		if k, ok := strings.CutSuffix(line, "="); ok && strings.Contains(k, ".r") && kvOwner(k) != user {
			n++
		}
	}
	return n
}

// sharedKVLayer is the negative control's layer: one KV for every run, as
// kv.Layer was before it had an Init.
type sharedKVLayer struct{ mem *kv.Scope }

func (l sharedKVLayer) Spec() layer.Spec {
	return layer.Spec{ID: kv.DefaultLayerID, Slot: kv.DefaultLayerSlot, Scope: layer.ScopeExecution}
}

func (l sharedKVLayer) Recall(ctx context.Context, q layer.Query) ([]layer.Item, error) {
	return []layer.Item{{Text: fence.Wrap("kv_memory", renderKV(l.mem))}}, nil
}

func (l sharedKVLayer) Snapshot(ctx context.Context) (json.RawMessage, error) {
	return l.mem.Snapshot()
}

func (l sharedKVLayer) Restore(ctx context.Context, data json.RawMessage) error {
	return l.mem.Restore(data)
}

// kvScopeAgent is the agent every user of the scenario runs on: a
// key-value memory layer (thread scope) rendered into the prompt, a
// kv_set tool, and a model that sets one key per step and counts the
// other users' keys it is shown.
func kvScopeAgent(st storage.Store, steps int, shared bool, leaks *atomic.Int64) (*agentloop.Agent, error) {
	var kvl layer.Layer
	var kvSet agentloop.Tool
	type setIn struct {
		Key string `json:"key"`
	}
	if shared {
		mem := kv.New(kv.Config{MaxEntries: -1})
		kvl = sharedKVLayer{mem}
		kvSet = agentloop.NewTool("kv_set", "Remember a key.", nil, func(ctx context.Context, in setIn) (string, error) {
			return "ok", kv.Set(mem, in.Key, true)
		})
	} else {
		l, err := kv.NewLayer(kv.LayerConfig{Render: renderKV})
		if err != nil {
			return nil, err
		}
		kvl = l
		kvSet = agentloop.NewContextTool("kv_set", "Remember a key.", nil, func(ctx context.Context, run *agentloop.ToolContext, in setIn) (string, error) {
			mem, err := kv.From(run.Stack(), "")
			if err != nil {
				return "", err
			}
			return "ok", kv.Set(mem, in.Key, true)
		})
	}
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		// The input is "<user> <run>".
		f := strings.Fields(r.LastUser())
		if len(f) != 2 {
			return nil, fmt.Errorf("unexpected input %q", r.LastUser())
		}
		user := f[0]
		run, _ := strconv.Atoi(f[1])
		leaks.Add(int64(foreignKeys(r.System(), user)))
		step := 0
		for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role != llms.ChatMessageTypeHuman; i-- {
			if r.Messages[i].Role == llms.ChatMessageTypeAI {
				step++
			}
		}
		if step >= steps {
			return agenttest.Text("done"), nil
		}
		return agenttest.Calls(agenttest.Call("kv_set", map[string]string{"key": kvScopeKey(user, run, step)})), nil
	})
	return agentloop.New(agentloop.Config{
		Model:         model,
		Instructions:  "Remember what you are told.",
		Layers:        []layer.Layer{kvl},
		Tools:         []agentloop.Tool{kvSet},
		Store:         st,
		MaxSteps:      steps + 2,
		RestoreLayers: true, // each run restores its thread's checkpoint
		Logger:        slog.New(slog.DiscardHandler),
	})
}

// kvUser runs args.Users at once on one agent, args.Runs runs each,
// printing "done USER RUNS" when a user's runs all returned, then
// "leaks N": the other users' keys the model was shown.
func kvUser(ctx context.Context, raw string, _ *bufio.Scanner, out *lineWriter) error {
	var args kvUserArgs
	st, closeFn, err := openWorkerStore(ctx, raw, &args)
	if err != nil {
		return err
	}
	defer closeFn()
	var leaks atomic.Int64
	agent, err := kvScopeAgent(st, args.Steps, args.Shared, &leaks)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(args.Users))
	for i, user := range args.Users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range args.Runs {
				if _, err := agent.Run(ctx, agentloop.RunInput{ThreadID: user, ResourceID: user, Input: fmt.Sprintf("%s %d", user, r)}); err != nil {
					errs[i] = fmt.Errorf("%s run %d: %w", user, r, err)
					return
				}
			}
			out.Printf("done %s %d", user, args.Runs)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	out.Printf("leaks %d", leaks.Load())
	return nil
}

// kvScopeOutcome is what one scenario run found.
type kvScopeOutcome struct {
	writes                 int // kv_set writes of runs that returned
	promptLeaks            int // other users' keys shown to the model
	storedLeaks, ckptLeaks int // other users' keys in a user's stored memory, checkpoint
	lost                   int // a user's acknowledged keys missing from its stored memory
}

// runKVScope runs the kv-user workers (one per element of groups, each
// running the users of its group) and checks the store.
func runKVScope(t *testing.T, spec storeSpec, groups [][]string, runs, steps int, shared bool) kvScopeOutcome {
	t.Helper()
	ws := make([]*worker, len(groups))
	for i, users := range groups {
		ws[i] = startWorker(t, "kv-user", kvUserArgs{Store: spec, Users: users, Runs: runs, Steps: steps, Shared: shared})
	}
	var o kvScopeOutcome
	for _, w := range ws {
		for {
			line := w.expect(t, "", 5*time.Minute)
			f := strings.Fields(line)
			if len(f) == 3 && f[0] == "done" {
				n, _ := strconv.Atoi(f[2])
				o.writes += n * steps
				continue
			}
			if len(f) == 2 && f[0] == "leaks" {
				n, _ := strconv.Atoi(f[1])
				o.promptLeaks += n
				break
			}
			t.Fatalf("unexpected worker line %q", line)
		}
		w.wait(t, time.Minute)
	}
	st := mustOpen(t, spec)
	ctx := t.Context()
	kvl, err := kv.NewLayer(kv.LayerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, users := range groups {
		for _, user := range users {
			it, err := st.Get(ctx, storage.ThreadKey(user, thread.HeadName))
			if err != nil {
				t.Fatalf("%s: checkpoint: %v", user, err)
			}
			var cp struct {
				Layers struct {
					Layers map[string]struct {
						Entries map[string]json.RawMessage `json:"entries"`
					} `json:"layers"`
				} `json:"layers"`
			}
			if err := json.Unmarshal(it.Value, &cp); err != nil {
				t.Fatalf("%s: checkpoint: %v", user, err)
			}
			for k := range cp.Layers.Layers[kv.DefaultLayerID].Entries {
				if kvOwner(k) != user {
					o.ckptLeaks++
				}
			}
			if shared {
				continue // the control stores no memory of its own
			}
			l, err := kvl.Open(ctx, layer.Env{ThreadID: user, ResourceID: user, Store: st})
			if err != nil {
				t.Fatalf("%s: stored key-value memory: %v", user, err)
			}
			keys, _ := l.Memory().Keys()
			own := map[string]bool{}
			for _, k := range keys {
				if kvOwner(k) != user {
					o.storedLeaks++
				}
				own[k] = true
			}
			for r := range runs {
				for s := range steps {
					if !own[kvScopeKey(user, r, s)] {
						o.lost++
					}
				}
			}
		}
	}
	return o
}

// TestTrust03_KVScopedProcesses runs one OS process per user, all on the
// same agent configuration and store (SQLite, Redis), each user writing
// key-value entries over several runs of its thread (each run restoring
// its checkpoint). No user's key may reach another user's prompt, stored
// memory or checkpoint, and no acknowledged write may be lost. The
// negative control runs the same users in one process on one shared KV,
// as kv.Layer was before it was scoped: it must leak.
func TestTrust03_KVScopedProcesses(t *testing.T) {
	parallelInMakeTest(t)
	procs, runs, steps := pick(6, 2), pick(3, 2), pick(5, 2)
	var groups [][]string
	for p := range procs {
		groups = append(groups, []string{fmt.Sprintf("user-%d", p)})
	}
	for _, spec := range sharedBackends(t) {
		t.Run(spec.Backend, func(t *testing.T) {
			start := time.Now()
			o := runKVScope(t, spec, groups, runs, steps, false)
			leaked := o.promptLeaks + o.storedLeaks + o.ckptLeaks
			t.Logf("FIGURE kv-scope %s: %d processes (one user each), %d KV writes acknowledged in %v, %d leaked (%d in prompts, %d in stored memory, %d in checkpoints), %d lost",
				spec.Backend, procs, o.writes, time.Since(start).Round(time.Millisecond), leaked, o.promptLeaks, o.storedLeaks, o.ckptLeaks, o.lost)
			if o.writes != procs*runs*steps {
				t.Errorf("%d writes acknowledged, want %d", o.writes, procs*runs*steps)
			}
			if leaked != 0 || o.lost != 0 {
				t.Errorf("%d entries leaked across users, %d lost", leaked, o.lost)
			}
		})
	}
	t.Run("control", func(t *testing.T) {
		spec := storeSpec{Backend: "sqlite", Path: t.TempDir() + "/control.db"}
		var users []string
		for _, g := range groups {
			users = append(users, g...)
		}
		o := runKVScope(t, spec, [][]string{users}, runs, steps, true)
		leaked := o.promptLeaks + o.ckptLeaks
		t.Logf("FIGURE kv-scope control (one KV shared by every user, in one process): %d users, %d leaked (%d in prompts, %d in checkpoints)",
			len(users), leaked, o.promptLeaks, o.ckptLeaks)
		if leaked == 0 {
			t.Error("the control leaked nothing: the scenario cannot see a leak")
		}
	})
}
