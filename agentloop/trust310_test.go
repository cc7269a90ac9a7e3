package agentloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
)

// TestTrust310_LosingRunSaysWhatWasKept (issue 23 item 10): runs of one
// thread race, under deadlines of 3–23 ms; for
// every run, what its result says was kept is exactly what the stored
// thread holds of it (its user message, then its steps' messages), and
// a run that reports success has all of its messages there.
func TestTrust310_LosingRunSaysWhatWasKept(t *testing.T) {
	stores(t, func(t *testing.T, store storage.Store) {
		for round := range 10 {
			raceRound(t, store, fmt.Sprintf("race-%d", round))
		}
	})
}

func raceRound(t *testing.T, store storage.Store, threadID string) {
	ctx := t.Context()
	const runs, steps = 6, 3
	note := agentloop.Tool{Name: "note", Call: func(ctx context.Context, _ json.RawMessage) (string, error) {
		time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
		return "noted", nil
	}}
	agentFor := func(g int) *agentloop.Agent {
		model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
			k := 0
			for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role != llms.ChatMessageTypeHuman; i-- {
				if r.Messages[i].Role == llms.ChatMessageTypeAI {
					k++
				}
			}
			if k >= steps {
				return agenttest.Text(fmt.Sprintf("done g%d", g)), nil
			}
			return agenttest.Calls(agenttest.Call("note", fmt.Sprintf(`{"g":%d,"s":%d}`, g, k))), nil
		})
		return mustAgent(t, agentloop.Config{Model: model, Store: store, Tools: []agentloop.Tool{note}, MaxSteps: steps + 1, Logger: quiet, Timeout: time.Duration(3+rand.IntN(20)) * time.Millisecond})
	}
	var wg sync.WaitGroup
	errs := make([]error, runs)
	ress := make([]*agentloop.Result, runs)
	start := make(chan struct{})
	for g := range runs {
		a := agentFor(g)
		wg.Go(func() {
			<-start
			time.Sleep(time.Duration(rand.IntN(4000)) * time.Microsecond)
			ress[g], errs[g] = a.Run(ctx, agentloop.RunInput{ThreadID: threadID, Input: fmt.Sprintf("run %d", g)})
		})
	}
	close(start)
	wg.Wait()
	// On a slow machine every run may time out before its first write:
	// then no thread is stored, and each run's result must say that it
	// kept nothing.
	var stored []thread.Message
	switch ck, err := agentFor(0).LoadCheckpoint(ctx, threadID); {
	case err == nil:
		stored = ck.Messages
	case !errors.Is(err, storage.ErrNotFound):
		t.Fatal(err)
	}
	// The stored messages of each run: its user message, its calls (the
	// arguments name it), their results and its final answer.
	kept := make([]int, runs)
	callOf := map[string]int{}
	for _, m := range stored {
		g := -1
		switch {
		case m.Role == thread.RoleUser:
			fmt.Sscanf(m.Text, "run %d", &g)
		case len(m.ToolCalls) > 0:
			var a struct{ G int }
			_ = json.Unmarshal([]byte(m.ToolCalls[0].Arguments), &a)
			g = a.G
			for _, c := range m.ToolCalls {
				callOf[c.ID] = g
			}
		case len(m.ToolResults) > 0:
			g = callOf[m.ToolResults[0].CallID]
		case strings.HasPrefix(m.Text, "done g"):
			fmt.Sscanf(m.Text, "done g%d", &g)
		}
		if g >= 0 && g < runs {
			kept[g]++
		}
	}
	for g := range runs {
		want := -1
		var ce *agentloop.CheckpointError
		switch {
		case errs[g] == nil:
			want = 2 + 2*steps // user, steps × (call, result), answer
		case errors.As(errs[g], &ce):
			want = ce.SavedMessages
		case errors.Is(errs[g], agentloop.ErrCheckpoint) && !errors.Is(errs[g], agentloop.ErrTimeout):
			want = 0 // the thread could not be loaded: the run did not start
		case errors.Is(errs[g], agentloop.ErrTimeout):
			want = ownMessages(ress[g].Messages, fmt.Sprintf("run %d", g))

		default:
			t.Errorf("run %d: %v", g, errs[g])
			continue
		}
		if kept[g] != want {
			t.Errorf("run %d (err %v): the thread holds %d of its messages, its result says %d", g, errs[g], kept[g], want)
		}
	}
}

// ownMessages counts the messages of msgs from the user message input on.
func ownMessages(msgs []llms.MessageContent, input string) int {
	for i, m := range msgs {
		if m.Role == llms.ChatMessageTypeHuman && len(m.Parts) == 1 {
			if tc, ok := m.Parts[0].(llms.TextContent); ok && tc.Text == input {
				return len(msgs) - i
			}
		}
	}
	return 0
}

// landHeadThenFail is a store whose n-th write of a thread head is
// applied and then reported failed (a lost reply): after runs between
// the two.
type landHeadThenFail struct {
	storage.Store
	mu    sync.Mutex
	n     int
	after func()
}

func (s *landHeadThenFail) Put(ctx context.Context, key string, v []byte, ver int64) (int64, error) {
	if !strings.HasSuffix(key, "/"+thread.HeadName) {
		return s.Store.Put(ctx, key, v, ver)
	}
	s.mu.Lock()
	s.n--
	fire := s.n == 0
	s.mu.Unlock()
	if !fire {
		return s.Store.Put(ctx, key, v, ver)
	}
	if _, err := s.Store.Put(ctx, key, v, ver); err != nil {
		return 0, err
	}
	if s.after != nil {
		s.after()
	}
	return 0, fmt.Errorf("landHeadThenFail: put %q: %w", key, os.ErrDeadlineExceeded)
}

// TestTrust310_HeadWrittenButReportedFailed (issue 23 item 10): a run
// whose head write was applied but reported failed reads the head back:
// when it is still its own, the run goes on; when another run wrote
// after it, the run has lost, and its CheckpointError counts the step
// that the thread kept. Before, the run said "nothing of this run was
// saved" while the thread held its user message and first step.
func TestTrust310_HeadWrittenButReportedFailed(t *testing.T) {
	ctx := t.Context()
	script := func() *agenttest.Model {
		return agenttest.New(agenttest.Reply(agenttest.Calls(agenttest.Call("createPage", `{"title":"A"}`))), agenttest.Reply(agenttest.Text("done")))
	}
	t.Run("still the head", func(t *testing.T) {
		st := &landHeadThenFail{Store: storage.NewMemoryStore(), n: 1}
		a := mustAgent(t, agentloop.Config{Model: script(), Store: st, Tools: newCMS().tools(), Logger: quiet})
		if _, err := a.Run(ctx, agentloop.RunInput{ThreadID: "t", Input: "go"}); err != nil {
			t.Fatalf("Run = %v, want success: the head was written", err)
		}
		ck, err := a.LoadCheckpoint(ctx, "t")
		if err != nil || len(ck.Messages) != 4 || ck.Steps != 2 {
			t.Fatalf("checkpoint: %v, %+v", err, ck)
		}
	})
	t.Run("another run wrote after it", func(t *testing.T) {
		st := &landHeadThenFail{Store: storage.NewMemoryStore(), n: 1}
		st.after = func() {
			b := mustAgent(t, agentloop.Config{Model: agenttest.New(agenttest.Reply(agenttest.Text("hello"))), Store: st.Store, Logger: quiet})
			if _, err := b.Run(ctx, agentloop.RunInput{ThreadID: "t", Input: "other"}); err != nil {
				t.Errorf("the other run: %v", err)
			}
		}
		a := mustAgent(t, agentloop.Config{Model: script(), Store: st, Tools: newCMS().tools(), Logger: quiet})
		_, err := a.Run(ctx, agentloop.RunInput{ThreadID: "t", Input: "go"})
		var ce *agentloop.CheckpointError
		if !errors.As(err, &ce) || !errors.Is(err, storage.ErrConflict) {
			t.Fatalf("Run = %v, want a CheckpointError matching ErrConflict", err)
		}
		ck, lerr := a.LoadCheckpoint(ctx, "t")
		if lerr != nil {
			t.Fatal(lerr)
		}
		if ce.SavedMessages != 3 || ce.SavedSteps != 1 || len(ck.Messages) != 5 || ck.Messages[0].Text != "go" {
			t.Errorf("the error says %d messages from %d steps were kept (%v); the thread holds %d messages, starting %q",
				ce.SavedMessages, ce.SavedSteps, err, len(ck.Messages), ck.Messages[0].Text)
		}
	})
}
