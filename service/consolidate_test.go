package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/route"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/service"
	"github.com/memlayer/memlayer/storage"
)

// consolidating returns a model for semantic memory's consolidation:
// from a turn that says "I now prefer X", it proposes "The user prefers
// X." and updates the stored preference it is shown, or adds it when it
// is shown none.
func consolidating() *agenttest.Model {
	handle := regexp.MustCompile(`(?m)^  (m\d+) \[preference\]`)
	prefers := regexp.MustCompile(`I now prefer ([^.]+)\.`)
	return agenttest.NewFunc(func(_ context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		in := r.LastUser()
		if strings.HasPrefix(in, "<turn>") {
			var facts []map[string]any
			if m := prefers.FindStringSubmatch(in); m != nil {
				facts = append(facts, map[string]any{"kind": "preference", "text": "The user prefers " + m[1] + "."})
			}
			b, _ := json.Marshal(map[string]any{"facts": facts})
			return agenttest.Text(string(b)), nil
		}
		d := map[string]any{"fact": 1, "op": "add"}
		if m := handle.FindStringSubmatch(in); m != nil {
			d = map[string]any{"fact": 1, "op": "update", "id": m[1]}
		}
		b, _ := json.Marshal(map[string]any{"decisions": []any{d}})
		return agenttest.Text(string(b)), nil
	})
}

// AddMessages with a consolidating model (Config.Facts.Consolidate)
// returns the facts it added and updated, masked and audited as the
// loop's; users whose IDs nest or collide keep their facts apart when
// they add at once.
func TestAddMessagesConsolidates(t *testing.T) {
	ctx := t.Context()
	store := storage.NewMemoryStore()
	log := audit.New(audit.Config{Store: store})
	mem := newMemory(t, store, service.Config{Audit: log, Facts: semanticmemory.Config{Consolidate: &semanticmemory.Consolidator{Model: consolidating()}}})
	users := []string{"a", "a/b", "b"}
	var wg sync.WaitGroup
	errs := make([]error, len(users))
	for i, u := range users {
		wg.Go(func() {
			_, errs[i] = mem.AddMessages(ctx, u,
				service.Message{Role: service.RoleUser, Text: "I now prefer tea with " + strings.ReplaceAll(u, "/", "") + "@example.com."},
				service.Message{Role: service.RoleAssistant, Text: "Noted."})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	facts, err := mem.AddMessages(ctx, "a", service.Message{Role: service.RoleUser, Text: "I now prefer coffee."})
	if err != nil {
		t.Fatal(err)
	}
	if len(facts) != 1 || facts[0].Text != "The user prefers coffee." || facts[0].Version != 2 || facts[0].Source.By != semanticmemory.ByExtractor {
		t.Fatalf("a's second conversation returned %+v, want its preference updated", facts)
	}
	for _, u := range users {
		got, err := mem.List(ctx, u, service.Page{})
		if err != nil {
			t.Fatal(err)
		}
		want := "The user prefers tea with [redacted email]."
		if u == "a" {
			want = "The user prefers coffee."
		}
		if len(got.Facts) != 1 || got.Facts[0].Text != want {
			t.Errorf("user %q: facts %+v, want %q", u, got.Facts, want)
		}
	}
	turns, err := log.Turns(ctx, service.DefaultAuditThread("a"))
	if err != nil {
		t.Fatal(err)
	}
	var ops []audit.Op
	for _, tr := range turns {
		for _, e := range tr.Entries {
			if strings.Contains(e.Text, "@example.com") {
				t.Errorf("the audit holds %q", e.Text)
			}
			ops = append(ops, e.Op)
		}
	}
	if want := []audit.Op{audit.OpWrite, audit.OpRedact, audit.OpWrite, audit.OpSupersede}; !slices.Equal(ops, want) {
		t.Errorf("a's audit: %v, want %v", ops, want)
	}
}

// refuseAll routes every write to semantic memory and admits none.
type refuseAll struct{}

func (refuseAll) Route(context.Context, layer.Write) route.Route {
	return route.Route{Layer: semanticmemory.DefaultID}
}

func (refuseAll) Admit(context.Context, layer.Write, []layer.Candidate) route.Verdict {
	return route.Verdict{Reason: "closed for writes"}
}

// With a gating Router and a Consolidator without a Gate, consolidation
// is gated by the Router: it writes nothing here, and the audit says why.
func TestAddMessagesConsolidationGatedByRouter(t *testing.T) {
	ctx := t.Context()
	store := storage.NewMemoryStore()
	log := audit.New(audit.Config{Store: store})
	mem := newMemory(t, store, service.Config{Audit: log, Router: refuseAll{},
		Facts: semanticmemory.Config{Consolidate: &semanticmemory.Consolidator{Model: consolidating()}}})
	facts, err := mem.AddMessages(ctx, "ada", service.Message{Role: service.RoleUser, Text: "I now prefer tea."})
	if err != nil || len(facts) != 0 {
		t.Fatalf("AddMessages = %+v, %v, want nothing written", facts, err)
	}
	turns, err := log.Turns(ctx, service.DefaultAuditThread("ada"))
	if err != nil || len(turns) != 1 || len(turns[0].Entries) != 1 || !strings.Contains(turns[0].Entries[0].Reason, "closed for writes") {
		t.Errorf("audit %+v (%v), want the refusal", turns, err)
	}
}
