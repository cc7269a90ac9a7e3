package layer_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/layer"
)

// situated is a layer that gives a part of the situation and records
// the query its Recall got.
type situated struct {
	layer.Layer
	part string
	err  error
	got  *layer.Query
}

func (s situated) Situation(ctx context.Context, q layer.Query) (string, error) { return s.part, s.err }

func (s situated) Recall(ctx context.Context, q layer.Query) ([]layer.Item, error) {
	*s.got = q
	return nil, nil
}

func newSituated(id string, slot int, part string, err error, got *layer.Query) situated {
	return situated{Layer: layer.Func(layer.Spec{ID: id, Slot: slot, Scope: layer.ScopeThread}, nil), part: part, err: err, got: got}
}

// The stack gives every layer the situation: the message, then the
// Situators' parts in slot order (not registration order); a failing
// Situator is reported and left out; Text is still the message.
func TestSituation_GatheredInSlotOrder(t *testing.T) {
	var a, b, c, plain layer.Query
	ev := &events{}
	s := initStack(t, layer.StackConfig{OnHook: ev.observe, Layers: []layer.Layer{
		newSituated("entities", 150, "Pricing page-2", nil, &b),
		newSituated("scratch", 100, "goal: publish the pricing page", nil, &a),
		newSituated("broken", 120, "never", errors.New("boom"), &c),
		situated{Layer: layer.Func(layer.Spec{ID: "plain", Slot: 300, Scope: layer.ScopeThread}, nil), got: &plain},
	}})
	if _, err := s.Recall(t.Context(), layer.Query{Text: "Publish it"}, nil); err != nil {
		t.Fatal(err)
	}
	want := "Publish it\ngoal: publish the pricing page\nPricing page-2"
	for _, q := range []layer.Query{a, b, c} {
		if q.Situation != want || q.Text != "Publish it" {
			t.Fatalf("query = %+v, want Situation %q and Text the message", q, want)
		}
	}
	if f := ev.failures(); len(f) != 1 || f[0] != "broken:situation" {
		t.Errorf("failures = %v, want broken:situation", f)
	}
	if s.Situation(t.Context(), layer.Query{Text: "Publish it"}) != want {
		t.Errorf("Stack.Situation differs from what Recall passed")
	}
}

// A stack without Situators passes the message as the situation; a part
// over MaxSituationPart is cut at a word boundary; the same state gives
// the same situation.
func TestSituation_PlainAndCut(t *testing.T) {
	var q1, q2 layer.Query
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{
		situated{Layer: layer.Func(layer.Spec{ID: "plain", Slot: 300, Scope: layer.ScopeThread}, nil), got: &q1},
	}})
	if _, err := s.Recall(t.Context(), layer.Query{Text: "hello"}, nil); err != nil {
		t.Fatal(err)
	}
	if q1.Situation != "hello" {
		t.Fatalf("Situation = %q, want the message", q1.Situation)
	}
	long := strings.Repeat("word ", 400)
	s2 := initStack(t, layer.StackConfig{Layers: []layer.Layer{newSituated("long", 100, long, nil, &q2)}})
	if _, err := s2.Recall(t.Context(), layer.Query{Text: "m"}, nil); err != nil {
		t.Fatal(err)
	}
	part := strings.TrimPrefix(q2.Situation, "m\n")
	if len(part) > 1024 || !strings.HasSuffix(part, "word") {
		t.Fatalf("part of %d bytes ends %q", len(part), part[max(0, len(part)-10):])
	}
	first := q2.Situation
	if _, err := s2.Recall(t.Context(), layer.Query{Text: "m"}, nil); err != nil || q2.Situation != first {
		t.Fatalf("the same state gave another situation: %v", err)
	}
}
