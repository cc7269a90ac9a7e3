package agentloop_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/inspect"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
)

// TestTrust320_CheckpointGone: continuing (no Input) a thread whose
// checkpoint vanished while its other records stayed is ErrCheckpointGone,
// not a configuration error; a thread that never ran is still
// ErrInvalidConfig. Nothing is written either way.
func TestTrust320_CheckpointGone(t *testing.T) {
	stores(t, func(t *testing.T, store storage.Store) {
		model := agenttest.NewFunc(func(context.Context, agenttest.Request) (*llms.ContentChoice, error) {
			return agenttest.Text("hi"), nil
		})
		a := mustAgent(t, agentloop.Config{Model: model, Store: store, Logger: quiet})
		for _, th := range []string{"t", "t/x", "u"} { // "t/x" nests in "t"
			if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: th, ResourceID: "r", Input: "x"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := store.Delete(t.Context(), storage.ThreadKey("t", thread.HeadName), storage.AnyVersion); err != nil {
			t.Fatal(err)
		}
		before, _ := store.List(t.Context(), "")
		_, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", ResourceID: "r"})
		if !errors.Is(err, agentloop.ErrCheckpointGone) || errors.Is(err, agentloop.ErrInvalidConfig) {
			t.Errorf("continue a thread whose checkpoint is gone: %v, want ErrCheckpointGone", err)
		}
		for _, th := range []string{"new", "", "t/"} {
			if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: th + "n"}); !errors.Is(err, agentloop.ErrInvalidConfig) || errors.Is(err, agentloop.ErrCheckpointGone) {
				t.Errorf("continue thread %q that never ran: %v, want ErrInvalidConfig", th+"n", err)
			}
		}
		// The other threads continue.
		if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t/x", ResourceID: "r"}); err != nil {
			t.Errorf("continue t/x: %v", err)
		}
		after, _ := store.List(t.Context(), storage.ThreadPrefix("t"))
		var had []string
		for _, k := range before {
			if strings.HasPrefix(k, storage.ThreadPrefix("t")) {
				had = append(had, k)
			}
		}
		if strings.Join(after, ",") != strings.Join(had, ",") {
			t.Errorf("thread t's records changed: %v, had %v", after, had)
		}
	})
}

// TestTrust320_IDTooLong: thread and resource IDs longer than
// thread.MaxIDLen are refused up front with ErrInvalidConfig, before
// anything is read or written; IDs of exactly MaxIDLen bytes work, even
// when every byte needs escaping in a key.
func TestTrust320_IDTooLong(t *testing.T) {
	stores(t, func(t *testing.T, store storage.Store) {
		model := agenttest.NewFunc(func(context.Context, agenttest.Request) (*llms.ContentChoice, error) {
			return agenttest.Text("hi"), nil
		})
		a := mustAgent(t, agentloop.Config{Model: model, Store: store, Logger: quiet})
		long := strings.Repeat("t", 10<<10)
		for _, in := range []agentloop.RunInput{
			{ThreadID: long, Input: "x"},
			{ThreadID: "t", ResourceID: long, Input: "x"},
			{ThreadID: strings.Repeat("/", thread.MaxIDLen+1), Input: "x"},
		} {
			_, err := a.Run(t.Context(), in)
			if !errors.Is(err, agentloop.ErrInvalidConfig) || !strings.Contains(err.Error(), "bytes") {
				t.Errorf("Run(%d-byte thread, %d-byte resource): %v, want ErrInvalidConfig", len(in.ThreadID), len(in.ResourceID), err)
			}
		}
		if keys, _ := store.List(t.Context(), ""); len(keys) != 0 {
			t.Errorf("refused runs wrote %d keys: %.200v", len(keys), keys)
		}
		max := strings.Repeat("/", thread.MaxIDLen) // escapes to 3 bytes each
		if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: max, ResourceID: max, Input: "x"}); err != nil {
			t.Errorf("Run with %d-byte IDs: %v", thread.MaxIDLen, err)
		}
	})
}

// TestTrust320_InspectorRefusesBadIDs: the Inspector's methods that name
// one thread or one resource refuse an ID longer than MaxIDLen (and an
// empty one) with thread.ErrInvalidID before any store call, rather than
// failing deep in storage; an ID of exactly MaxIDLen bytes is served.
func TestTrust320_InspectorRefusesBadIDs(t *testing.T) {
	stores(t, func(t *testing.T, store storage.Store) {
		in := inspect.Inspector{Store: store}
		ctx := t.Context()
		for _, id := range []string{"", strings.Repeat("x", thread.MaxIDLen+1), strings.Repeat("/", 10<<10)} {
			if _, err := in.DeleteThread(ctx, id); !errors.Is(err, thread.ErrInvalidID) {
				t.Errorf("DeleteThread(%d bytes) = %v, want thread.ErrInvalidID", len(id), err)
			}
			if _, err := in.ThreadKeys(ctx, id); !errors.Is(err, thread.ErrInvalidID) {
				t.Errorf("ThreadKeys(%d bytes) = %v, want thread.ErrInvalidID", len(id), err)
			}
			if _, err := in.EraseResource(ctx, id); !errors.Is(err, thread.ErrInvalidID) {
				t.Errorf("EraseResource(%d bytes) = %v, want thread.ErrInvalidID", len(id), err)
			}
			if _, err := in.ResourceKeys(ctx, id); !errors.Is(err, thread.ErrInvalidID) {
				t.Errorf("ResourceKeys(%d bytes) = %v, want thread.ErrInvalidID", len(id), err)
			}
		}
		max := strings.Repeat("/", thread.MaxIDLen)
		if _, err := in.DeleteThread(ctx, max); err != nil {
			t.Errorf("DeleteThread(%d bytes): %v", thread.MaxIDLen, err)
		}
		if _, err := in.ResourceKeys(ctx, max); err != nil {
			t.Errorf("ResourceKeys(%d bytes): %v", thread.MaxIDLen, err)
		}
	})
}
