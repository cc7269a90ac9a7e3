package agentloop_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/redact"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
	"github.com/memlayer/memlayer/workingmemory/kv"
)

// TestTrust311_TracesAndLogsMasked: a tool's error, a tool's panic, a
// layer's error and a model's error that carry personal data reach the
// tool, hook, model, step and run spans (status and exception events) and
// the log masked by the agent's redactor, still marked as errors; with
// redaction disabled the text goes as it was (the control: the check can
// fail).
func TestTrust311_TracesAndLogsMasked(t *testing.T) {
	const email, phone = "ana.lopez@example.com", "+44 20 7946 0958"
	run := func(t *testing.T, red redact.Policy) (spans tracetest.SpanStubs, logs string) {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		var buf bytes.Buffer
		logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		model := agenttest.New(
			agenttest.Reply(agenttest.Calls(agenttest.Call("lookup", `{}`), agenttest.Call("crash", `{}`))),
			func(context.Context, agenttest.Request) (*llms.ContentChoice, error) {
				return nil, errors.New("upstream refused the prompt of " + email + " (call " + phone + ")")
			},
		)
		a, err := agentloop.New(agentloop.Config{
			Model: model,
			Tools: []agentloop.Tool{
				agentloop.NewTool("lookup", "Look up.", nil, func(context.Context, struct{}) (string, error) {
					return "", fmt.Errorf("no account for %s, phone %s", email, phone)
				}),
				agentloop.NewTool("crash", "Crash.", nil, func(context.Context, struct{}) (string, error) {
					panic("bad record " + email)
				}),
			},
			// Episodic memory indexes the calls (their errors quote the
			// user) and searches them by the user's message: the search
			// and index spans must not carry either.
			Layers:         []layer.Layer{failingRecall{}, mustEpisodic(t)},
			Store:          storage.NewMemoryStore(),
			TracerProvider: tp,
			Logger:         logger,
			Redaction:      red,
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t1", ResourceID: "u1", Input: "Find my account, " + email}); err == nil {
			t.Fatal("the run succeeded; want the model's error")
		}
		return exp.GetSpans(), buf.String()
	}
	// leaks returns where the values appear in spans and logs.
	leaks := func(spans tracetest.SpanStubs, logs string) (where []string, failed map[string]bool) {
		failed = map[string]bool{}
		for _, s := range spans {
			texts := []string{s.Status.Description}
			for _, e := range s.Events {
				for _, kv := range e.Attributes {
					texts = append(texts, kv.Value.String())
				}
			}
			for _, kv := range s.Attributes {
				texts = append(texts, kv.Value.String())
			}
			if s.Status.Code == codes.Error {
				failed[s.Name] = true
			}
			for _, x := range texts {
				if strings.Contains(x, email) || strings.Contains(x, phone) {
					where = append(where, s.Name+": "+x)
				}
			}
		}
		for line := range strings.SplitSeq(logs, "\n") {
			if strings.Contains(line, email) || strings.Contains(line, phone) {
				where = append(where, "log: "+line)
			}
		}
		return where, failed
	}
	t.Run("masked", func(t *testing.T) {
		spans, logs := run(t, redact.Policy{})
		where, failed := leaks(spans, logs)
		for _, w := range where {
			t.Errorf("personal data in %s", w)
		}
		for _, name := range []string{"execute_tool lookup", "execute_tool crash", "chat", "memlayer.step", "invoke_agent agent", "memlayer.hook"} {
			if !failed[name] {
				t.Errorf("no %s span is marked failed", name)
			}
		}
		seen := map[string]bool{}
		for _, s := range spans {
			seen[s.Name] = true
		}
		for _, name := range []string{"memlayer.search", "memlayer.index", "memlayer.checkpoint.load", "memlayer.checkpoint.save", "memlayer.audit.commit"} {
			if !seen[name] {
				t.Errorf("no %s span: the check does not cover it", name)
			}
		}
		for _, s := range spans {
			if (s.Name == "memlayer.search" || s.Name == "memlayer.index") && !hasAttr(s.Attributes, "memlayer.layer", episodicmemory.DefaultID) {
				t.Errorf("span %s does not name the layer whose index it is: %v", s.Name, s.Attributes)
			}
		}
		if !strings.Contains(logs, "[redacted email]") {
			t.Errorf("the log does not carry the masked errors:\n%s", logs)
		}
		t.Logf("FIGURE traces-logs: %d spans, %d bytes of debug log, %d values unmasked", len(spans), len(logs), len(where))
	})
	t.Run("control: redaction disabled", func(t *testing.T) {
		spans, logs := run(t, redact.Policy{Disabled: true})
		if where, _ := leaks(spans, logs); len(where) == 0 {
			t.Error("with redaction disabled no value reached a span or the log: the check cannot fail")
		}
	})
}

// TestTrust314_WorkingMemoryMasked: one rule for the scratchpad and the
// key-value memory: what either keeps of a run is stored masked by the
// agent's redactor (their state, and their snapshots in the thread's
// checkpoint), as every other layer's is, unless redact.Policy.Layers
// turns it off for that layer. Two users write at once; neither's values
// are stored, and the key-value memory's keys stay as they were.
func TestTrust314_WorkingMemoryMasked(t *testing.T) {
	const email, phone = "ana.lopez@example.com", "+44 20 7946 0958"
	for _, tc := range []struct {
		name string
		cfg  redact.Policy
		kept bool // the values are stored as they were
	}{
		{"default", redact.Policy{}, false},
		{"layers off", redact.Policy{Layers: map[string]bool{kv.DefaultLayerID: false, workingmemory.DefaultID: false}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := storage.NewMemoryStore()
			kvl, err := kv.NewLayer(kv.LayerConfig{Spec: layer.Spec{Scope: layer.ScopeResource}})
			if err != nil {
				t.Fatal(err)
			}
			pad, err := workingmemory.New(workingmemory.Config{})
			if err != nil {
				t.Fatal(err)
			}
			policy := func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
				if len(r.ToolResults()) > 0 {
					return agenttest.Text("noted"), nil
				}
				user := strings.TrimPrefix(r.LastUser(), "note ")
				return agenttest.Calls(
					agenttest.Call("kv_set", map[string]string{"key": "contact-" + user, "value": user + " " + email}),
					agenttest.Call("working_memory_update", map[string]string{"phone": user + " " + phone}),
				), nil
			}
			a := mustAgent(t, agentloop.Config{Model: agenttest.NewFunc(policy), Store: store, Layers: []layer.Layer{kvl, pad},
				Tools: []agentloop.Tool{kvSet}, Redaction: tc.cfg, RestoreLayers: true})
			errs := make(chan error, 2)
			for _, u := range []string{"a", "a/b"} {
				go func() {
					_, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "thread-" + u, ResourceID: "user-" + u, Input: "note " + u})
					errs <- err
				}()
			}
			for range 2 {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			keys, err := store.List(t.Context(), "")
			if err != nil {
				t.Fatal(err)
			}
			var kvStored, padStored, keysKept int
			for _, k := range keys {
				it, err := store.Get(t.Context(), k)
				if err != nil {
					t.Fatal(err)
				}
				kvStored += strings.Count(string(it.Value), email)
				padStored += strings.Count(string(it.Value), phone)
				keysKept += strings.Count(string(it.Value), `"contact-a"`) + strings.Count(string(it.Value), `"contact-a/b"`)
			}
			t.Logf("FIGURE working-memory %s: %d e-mails (the key-value memory's values) and %d phone numbers (the scratchpad's) stored in %d keys, %d key-value keys kept", tc.name, kvStored, padStored, len(keys), keysKept)
			if tc.kept != (kvStored > 0) || tc.kept != (padStored > 0) {
				t.Errorf("stored values: key-value memory %d, scratchpad %d; want them kept = %v", kvStored, padStored, tc.kept)
			}
			if keysKept < 2 {
				t.Errorf("the key-value memory's keys were altered or lost: %d of 2 found", keysKept)
			}
		})
	}
}

// failingRecall is a layer whose Recall fails with an error that quotes
// personal data.
type failingRecall struct{}

func (failingRecall) Spec() layer.Spec { return layer.Spec{ID: "crm"} }

func (failingRecall) Recall(context.Context, layer.Query) ([]layer.Item, error) {
	return nil, errors.New("crm lookup failed for ana.lopez@example.com")
}

// mustEpisodic returns an episodic memory of the default config.
func mustEpisodic(t testing.TB) layer.Layer {
	t.Helper()
	eps, err := episodicmemory.New(episodicmemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return eps
}
