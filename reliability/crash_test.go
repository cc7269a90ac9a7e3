package reliability

import (
	"bufio"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	_ "modernc.org/sqlite" // the "sqlite" driver, for PRAGMA integrity_check

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/history"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
	"github.com/memlayer/memlayer/workingmemory/kv"
)

// crashArgs are the arguments of the crash worker.
type crashArgs struct {
	Path   string `json:"path"`
	Keys   int    `json:"keys"`
	Thread string `json:"thread"`
}

// record is one value the crash worker writes: its payload is derived
// from (Key, N), and Sum is the payload's SHA-256, so a torn or mixed
// value is detectable.
type record struct {
	Key     int    `json:"key"`
	N       int    `json:"n"`
	Payload string `json:"payload"`
	Sum     string `json:"sum"`
}

// payload is the deterministic payload of write n of key k: from half a
// kilobyte to 60 KB, so that values span several database pages.
func payload(k, n int) string {
	size := 512 + (n*7919+k*104729)%(60<<10)
	unit := fmt.Sprintf("[k%d n%d]", k, n)
	return strings.Repeat(unit, size/len(unit)+1)[:size]
}

func checksum(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func recordKey(k int) string {
	return storage.LayerKey("crash-test", "raw", "value-"+strconv.Itoa(k))
}

// crashUpdateArgs is a scratchpad update of the crash scenario's agent.
func crashUpdate(seq int) string {
	data := payload(1000, seq)[:256]
	return fmt.Sprintf(`{"seq": %d, "data": %q, "sum": %q}`, seq, data, checksum(data))
}

var seqInPrompt = regexp.MustCompile(`"seq": (\d+)`)

func init() { workers["crash-writer"] = crashWriter }

// crashAgent is the agent of the crash scenario: a thread-scoped
// scratchpad, and a model that updates it at every step (sequence numbers
// from next) and answers after eight steps.
func crashAgent(st storage.Store, next func() int, observer func(agentloop.Event)) (*agentloop.Agent, error) {
	wm, err := workingmemory.New(workingmemory.Config{})
	if err != nil {
		return nil, err
	}
	kvLayer, err := kv.NewLayer(kv.LayerConfig{})
	if err != nil {
		return nil, err
	}
	kvSet := agentloop.NewContextTool("kv_set", "Remember a value.", nil, func(ctx context.Context, run *agentloop.ToolContext, in struct {
		Key   string `json:"key"`
		Value int    `json:"value"`
	}) (string, error) {
		mem, err := kv.From(run.Stack(), "")
		if err != nil {
			return "", err
		}
		return "ok", kv.Set(mem, in.Key, in.Value)
	})
	update := layer.ToolName(workingmemory.DefaultID, "update")
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		steps := 0
		for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role != llms.ChatMessageTypeHuman; i-- {
			if r.Messages[i].Role == llms.ChatMessageTypeAI {
				steps++
			}
		}
		if steps >= 8 {
			return agenttest.Text("done"), nil
		}
		seq := next()
		return agenttest.Calls(
			agenttest.Call(update, crashUpdate(seq)),
			agenttest.Call("kv_set", map[string]any{"key": "seq-" + strconv.Itoa(seq), "value": seq}),
		), nil
	})
	return agentloop.New(agentloop.Config{
		Model:         model,
		Instructions:  "Keep the sequence in working memory.",
		Layers:        []layer.Layer{wm, kvLayer},
		Tools:         []agentloop.Tool{kvSet},
		Store:         st,
		MaxSteps:      20,
		Observer:      observer,
		RestoreLayers: true, // thread-scoped layers resume from the checkpoint
		// The check counts every kv_set call in the transcript: keep
		// every message (the default drops those the summary covers
		// beyond the last 200).
		History: history.Config{RetainMessages: -1},
	})
}

// crashWriter writes records to args.Keys keys in turn, printing "ack K N"
// after each Put returns, while an agent updates its scratchpad and
// checkpoints its thread, printing "ckpt S" after each checkpoint. It runs
// until it is killed.
func crashWriter(ctx context.Context, raw string, _ *bufio.Scanner, out *lineWriter) error {
	var args crashArgs
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		return err
	}
	st, closeFn, err := openStore(ctx, storeSpec{Backend: "sqlite", Path: args.Path})
	if err != nil {
		return err
	}
	defer closeFn()
	errc := make(chan error, 2)
	go func() {
		n := make([]int, args.Keys)
		versions := make([]int64, args.Keys)
		for k := range versions {
			versions[k] = storage.AnyVersion
		}
		for i := 0; ; i++ {
			k := i % args.Keys
			n[k]++
			p := payload(k, n[k])
			b, _ := json.Marshal(record{Key: k, N: n[k], Payload: p, Sum: checksum(p)})
			v, err := st.Put(ctx, recordKey(k), b, versions[k])
			if err != nil {
				errc <- fmt.Errorf("put key %d n %d: %w", k, n[k], err)
				return
			}
			versions[k] = v
			out.Printf("ack %d %d", k, n[k])
		}
	}()
	go func() {
		var seq atomic.Int64
		seq.Store(time.Now().UnixNano() % 1000 * 1000) // distinct across restarts
		agent, err := crashAgent(st, func() int { return int(seq.Add(1)) }, func(e agentloop.Event) {
			if e.Kind == agentloop.EventCheckpoint && e.Err == nil {
				out.Printf("ckpt %d", e.Step)
			}
		})
		if err != nil {
			errc <- err
			return
		}
		for {
			if _, err := agent.Run(ctx, agentloop.RunInput{ThreadID: args.Thread, Input: "continue"}); err != nil {
				errc <- fmt.Errorf("agent run: %w", err)
				return
			}
		}
	}()
	return <-errc
}

// TestCrash kills a process with SIGKILL in the middle of a stream of
// writes to an SQLite file (raw records of up to 60 KB, scratchpad updates,
// key-value memory entries and thread checkpoints), then checks that the
// file opens and passes PRAGMA integrity_check, that every record is the
// last acknowledged write or the one after it (never torn: each carries a
// checksum), and that the thread resumes from its checkpoint with its
// working memory, and its key-value memory restored from the checkpoint
// (Config.RestoreLayers).
func TestCrash(t *testing.T) {
	trials := pick(50, 2)
	survived := 0
	for trial := range trials {
		ok := t.Run(fmt.Sprintf("trial-%02d", trial), func(t *testing.T) { crashTrial(t, trial) })
		if ok {
			survived++
		}
	}
	t.Logf("FIGURE crash: %d of %d SIGKILL trials survived (file opens and passes integrity_check, every value old or new, thread resumes)", survived, trials)
}

func crashTrial(t *testing.T, trial int) {
	const keys = 8
	const thread = "crash-thread"
	path := t.TempDir() + "/crash.db"
	rng := rand.New(rand.NewPCG(uint64(trial), 42))
	killAfter := 20 + rng.IntN(400) // acknowledged writes before the kill
	w := startWorker(t, "crash-writer", crashArgs{Path: path, Keys: keys, Thread: thread})

	acked := make([]int, keys)
	acks, ckpts := 0, 0
	handle := func(line string) {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "ack":
			k, _ := strconv.Atoi(f[1])
			n, _ := strconv.Atoi(f[2])
			acked[k] = n
			acks++
		case len(f) == 2 && f[0] == "ckpt":
			ckpts++
		}
	}
	deadline := time.After(2 * time.Minute)
	for acks < killAfter || ckpts == 0 {
		select {
		case line, ok := <-w.lines:
			if !ok {
				<-w.done
				t.Fatalf("worker exited early: %v\n%s", w.exit, w.errText())
			}
			handle(line)
		case <-deadline:
			t.Fatalf("worker too slow: %d acks, %d checkpoints", acks, ckpts)
		}
	}
	time.Sleep(time.Duration(rng.IntN(5000)) * time.Microsecond) // anywhere in a write
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for line := range w.lines { // what it printed before it died
		handle(line)
	}
	<-w.done
	if w.exit == nil || !strings.Contains(w.exit.Error(), "killed") {
		t.Fatalf("worker exit: %v, want killed", w.exit)
	}

	// The file opens and SQLite finds it intact.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	var check string
	if err := db.QueryRowContext(t.Context(), "PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check: %q, %v", check, err)
	}
	db.Close()
	st := mustOpen(t, storeSpec{Backend: "sqlite", Path: path})
	ctx := t.Context()

	// Every record is the last acknowledged write or the next one.
	ahead := 0
	for k := range keys {
		it, err := st.Get(ctx, recordKey(k))
		if errors.Is(err, storage.ErrNotFound) {
			if acked[k] != 0 {
				t.Errorf("key %d: missing, but write %d was acknowledged", k, acked[k])
			}
			continue
		}
		if err != nil {
			t.Fatalf("key %d: %v", k, err)
		}
		var r record
		if err := json.Unmarshal(it.Value, &r); err != nil {
			t.Errorf("key %d: torn value (%d bytes): %v", k, len(it.Value), err)
			continue
		}
		if r.Key != k || r.Payload != payload(k, r.N) || r.Sum != checksum(r.Payload) {
			t.Errorf("key %d: value of write %d does not match its checksum", k, r.N)
		}
		switch r.N {
		case acked[k]:
		case acked[k] + 1:
			ahead++ // written, killed before the ack
		default:
			t.Errorf("key %d: holds write %d, last acknowledged %d: neither old nor new", k, r.N, acked[k])
		}
	}
	t.Logf("killed after %d acknowledged writes and %d checkpoints; %d key(s) held the write in flight", acks, ckpts, ahead)
	if ahead > 1 {
		t.Errorf("%d keys hold an unacknowledged write; only one write is in flight at a time", ahead)
	}

	// The thread resumes from its checkpoint, with its working memory.
	var lastSeq int
	resumeAgent, err := crashAgent(st, func() int { lastSeq++; return lastSeq }, nil)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := resumeAgent.LoadCheckpoint(ctx, thread)
	if err != nil {
		t.Fatalf("checkpoint after the kill: %v", err)
	}
	if cp.Steps < ckpts {
		t.Errorf("checkpoint has %d steps; %d checkpoints were acknowledged", cp.Steps, ckpts)
	}
	state, err := st.Get(ctx, storage.LayerKey(workingmemory.DefaultStorageID, storage.ThreadScope(thread), "state"))
	if err != nil {
		t.Fatalf("scratchpad state after the kill: %v", err)
	}
	var sp struct {
		Seq  int    `json:"seq"`
		Data string `json:"data"`
		Sum  string `json:"sum"`
	}
	if err := json.Unmarshal(state.Value, &sp); err != nil || sp.Sum != checksum(sp.Data) || sp.Seq == 0 {
		t.Fatalf("scratchpad state is not a whole update: %v\n%.300s", err, state.Value)
	}
	lastSeq = sp.Seq
	res, err := resumeAgent.Run(ctx, agentloop.RunInput{ThreadID: thread, Input: "resume"})
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if len(res.Messages) <= len(cp.Messages) {
		t.Errorf("resumed thread has %d messages, checkpoint had %d: history not continued", len(res.Messages), len(cp.Messages))
	}
	// With RestoreLayers, the thread-scoped scratchpad resumes from the
	// checkpoint's snapshot, which matches the history: the stored state,
	// or one update behind it when the kill came between a step's update
	// and its checkpoint. The model of the resumed run sees it.
	var inCheckpoint struct{ Seq int }
	if err := json.Unmarshal(cp.Layers.Layers[workingmemory.DefaultID], &inCheckpoint); err != nil {
		t.Fatalf("scratchpad in the checkpoint: %v", err)
	}
	t.Logf("scratchpad: stored seq %d, checkpoint seq %d", sp.Seq, inCheckpoint.Seq)
	if inCheckpoint.Seq != sp.Seq && inCheckpoint.Seq != sp.Seq-1 {
		t.Errorf("checkpoint has seq %d, stored state %d: more than the step in flight apart", inCheckpoint.Seq, sp.Seq)
	}
	first := resumeAgent.Config().Model.(*agenttest.Model).Requests()[0]
	if m := seqInPrompt.FindStringSubmatch(first.System()); m == nil || m[1] != strconv.Itoa(inCheckpoint.Seq) {
		t.Errorf("resumed prompt shows seq %v, the checkpoint has %d", m, inCheckpoint.Seq)
	}
	// The key-value memory came back from the checkpoint: one entry per
	// tool step the thread holds before the resume (its transcript: a
	// checkpoint's Messages hold only what the summary does not cover),
	// plus the resumed run's.
	toolSteps := 0
	msgs, _, err := resumeAgent.Transcript(ctx, thread)
	if err != nil {
		t.Fatalf("transcript: %v", err)
	}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if c.Name == "kv_set" {
				toolSteps++
			}
		}
	}
	toolSteps -= res.Steps - 1 // the resumed run's, counted below
	kvl, err := kv.NewLayer(kv.LayerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := kvl.Open(ctx, layer.Env{ThreadID: thread, Store: st})
	if err != nil {
		t.Fatalf("the thread's key-value memory: %v", err)
	}
	if n, err := stored.Memory().Count(); err != nil || n != toolSteps+res.Steps-1 {
		t.Errorf("key-value memory after resume: %d entries, %v; want %d from the checkpoint + %d", n, err, toolSteps, res.Steps-1)
	}
	cp2, err := resumeAgent.LoadCheckpoint(ctx, thread)
	if err != nil || cp2.Steps != cp.Steps+res.Steps {
		t.Errorf("checkpoint after resume: %d steps, %v; want %d", cp2.Steps, err, cp.Steps+res.Steps)
	}
}
