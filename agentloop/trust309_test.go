package agentloop_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
)

// slowStore applies each write after delay, whatever its context says,
// and then reports the context's error if it ended meanwhile: a store
// slow to answer, whose write lands all the same.
type slowStore struct {
	storage.Store
	delay time.Duration
	key   string // only writes of keys with this prefix are slow
}

func (s *slowStore) Put(ctx context.Context, key string, v []byte, ver int64) (int64, error) {
	if !strings.HasPrefix(key, s.key) {
		return s.Store.Put(ctx, key, v, ver)
	}
	time.Sleep(s.delay)
	n, err := s.Store.Put(context.WithoutCancel(ctx), key, v, ver)
	if err == nil && ctx.Err() != nil {
		return 0, fmt.Errorf("slowStore: put %q: %w", key, ctx.Err())
	}
	return n, err
}

// TestTrust309_ToolUpdateLandsWhileTheRunEnds (issue 23 item 9): the
// run's deadline passes while the scratchpad's update tool waits for a
// slow store, whose write lands. The stack waits for the layer's own
// verdict (it reads the state back) instead of dropping it, so the
// thread's tool result, the tool event and the audit say the update was
// applied; before, the result said it failed with the deadline.
func TestTrust309_ToolUpdateLandsWhileTheRunEnds(t *testing.T) {
	ctx := t.Context()
	mem := storage.NewMemoryStore()
	st := &slowStore{Store: mem, delay: 300 * time.Millisecond, key: "layers/"}
	wm, err := workingmemory.New(workingmemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	update := layer.ToolName(workingmemory.DefaultID, "update")
	model := agenttest.New(agenttest.Reply(agenttest.Calls(agenttest.Call(update, `{"goal":"ship"}`))), agenttest.Reply(agenttest.Text("done")))
	var mu sync.Mutex
	var toolErrs []error
	a := mustAgent(t, agentloop.Config{Model: model, Store: st, Layers: []layer.Layer{wm}, Timeout: 100 * time.Millisecond, Logger: quiet,
		Observer: func(e agentloop.Event) {
			if e.Kind == agentloop.EventToolCall {
				mu.Lock()
				toolErrs = append(toolErrs, e.Err)
				mu.Unlock()
			}
		}})
	_, err = a.Run(ctx, agentloop.RunInput{ThreadID: "t", Input: "plan"})
	if !errors.Is(err, agentloop.ErrTimeout) {
		t.Fatalf("Run = %v, want ErrTimeout", err)
	}
	it, err := mem.Get(ctx, storage.LayerKey(workingmemory.DefaultStorageID, storage.ThreadScope("t"), "state"))
	if err != nil || !strings.Contains(string(it.Value), `"goal":"ship"`) {
		t.Fatalf("the update did not land (%v %s): the test needs it to", err, it.Value)
	}
	ck, err := a.LoadCheckpoint(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	got := storedResults(ck.Messages)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || strings.HasPrefix(got[0], "error") || len(toolErrs) != 1 || toolErrs[0] != nil {
		t.Errorf("the update landed, but the thread's result is %q and the tool event's error %v", got, toolErrs)
	}
}
