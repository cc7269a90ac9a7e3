package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/entitymemory"
	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/redact"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/workingmemory"
	"github.com/memlayer/memlayer/workingmemory/kv"
)

// piiSample is a positive of redact's labelled corpus: a text that holds
// a value of a kind the README lists (e-mail, phone, card, IBAN, secret).
type piiSample struct{ kind, value, text string }

// piiCorpus reads the positives of redact/testdata/pii_corpus.tsv.
func piiCorpus(t *testing.T) []piiSample {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "redact", "testdata", "pii_corpus.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	var out []piiSample
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) != 3 || strings.HasPrefix(f[0], "neg:") || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, piiSample{f[0], f[1], f[2]})
	}
	return out
}

// TestPersonalDataReachesNoStore runs redact's corpus of personal data
// (every positive under MEMLAYER_RELIABILITY=1, every tenth otherwise)
// through every path that stores what a conversation said, for two users
// whose IDs nest ("u1", "u1/a"), on every backend: the thread's messages
// and checkpoint with the layers' snapshots, the audit trail, semantic
// facts (memorize), episodes, entities, the scratchpad (its update tool)
// and the key-value memory (a tool that sets an entry), plus the spans of
// a trace and a debug log, which get a tool's error quoting the text. It
// then reads every key and value of the store (and the bytes of the
// closed SQLite file), every span and the log: no value may be there
// unmasked. The control runs the same with redaction disabled and must
// find them.
func TestPersonalDataReachesNoStore(t *testing.T) {
	parallelInMakeTest(t)
	all := piiCorpus(t)
	var samples []piiSample
	for i, s := range all {
		if heavy() || i%10 == 0 {
			samples = append(samples, s)
		}
	}
	specs := append([]storeSpec{{Backend: "memory"}}, sharedBackends(t)...)
	for _, spec := range specs {
		t.Run(spec.Backend, func(t *testing.T) {
			r := runPersonalData(t, spec, samples, redact.Policy{})
			t.Logf("FIGURE personal-data %s: %d values of %d kinds through messages, checkpoints and snapshots, audit, facts, episodes, entities, scratchpad, key-value memory, %d spans and %d log lines (%d keys): %d unmasked %v",
				spec.Backend, len(samples), r.kinds, r.spans, r.logLines, r.keys, r.unmasked, r.where)
			if r.unmasked != 0 {
				t.Errorf("%d values stored, traced or logged unmasked: %v", r.unmasked, r.where)
			}
			for _, place := range piiPlaces {
				if r.masked[place] == 0 {
					t.Errorf("no mask in %s: the scenario does not reach it", place)
				}
			}
			if spec.Backend == "memory" {
				spec.Path = "" // the control runs on the in-process store only
				c := runPersonalData(t, spec, samples, redact.Policy{Disabled: true})
				t.Logf("FIGURE personal-data control (redaction disabled) %s: %d unmasked %v", spec.Backend, c.unmasked, c.where)
				for _, place := range piiPlaces {
					if c.where[place] == 0 {
						t.Errorf("with redaction disabled no value was found in %s: the scan cannot fail there", place)
					}
				}
			}
		})
	}
}

// piiPlaces are where the scenario must find masks: each storing path.
var piiPlaces = []string{"messages", "audit", "semantic", "episodic", "scratchpad", "kv", "snapshots", "traces", "logs"}

type piiResult struct {
	kinds, spans, logLines, keys, unmasked int
	where                                  map[string]int // place → values found unmasked there
	masked                                 map[string]int // place → masks found there
}

// piiPlace names the storing path of a key.
func piiPlace(key string) string {
	switch {
	case strings.HasPrefix(key, "layers/"+semanticmemory.DefaultStorageID+"/"):
		return "semantic"
	case strings.HasPrefix(key, "layers/"+workingmemory.DefaultStorageID+"/"):
		return "scratchpad"
	case strings.HasPrefix(key, "layers/"+kv.DefaultStorageID+"/"):
		return "kv"
	case strings.HasPrefix(key, "layers/episod"):
		return "episodic"
	case strings.HasPrefix(key, "layers/entit"):
		return "entities"
	case strings.HasPrefix(key, "audit/") || strings.Contains(key, "/audit"):
		return "audit"
	case strings.HasPrefix(key, "threads/") && strings.Contains(key, "/layer."):
		return "snapshots" // a thread-scoped layer's snapshot, with the checkpoint
	case strings.HasPrefix(key, "threads/"):
		return "messages"
	}
	return "other:" + strings.SplitN(key, "/", 2)[0]
}

// forms are the ways a value may be written in stored JSON.
func forms(v string) []string {
	out := []string{v}
	if b, err := json.Marshal(v); err == nil {
		out = append(out, string(b[1:len(b)-1]))
	}
	q := strconv.QuoteToASCII(v)
	return append(out, q[1:len(q)-1])
}

func runPersonalData(t *testing.T, spec storeSpec, samples []piiSample, red redact.Policy) piiResult {
	ctx := t.Context()
	store, closeStore, err := openStore(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	var logs lockedBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	ents, err := entitymemory.New(entitymemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}, Capacity: 50})
	if err != nil {
		t.Fatal(err)
	}
	eps, err := episodicmemory.New(episodicmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}})
	if err != nil {
		t.Fatal(err)
	}
	sem, err := semanticmemory.New(semanticmemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	pad, err := workingmemory.New(workingmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}})
	if err != nil {
		t.Fatal(err)
	}
	kvl, err := kv.NewLayer(kv.LayerConfig{}) // thread-scoped: its snapshot goes with the checkpoint
	if err != nil {
		t.Fatal(err)
	}
	type setIn struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	kvSet := agentloop.NewContextTool("kv_set", "Remember a value.", nil, func(ctx context.Context, run *agentloop.ToolContext, in setIn) (string, error) {
		mem, err := kv.From(run.Stack(), "")
		if err != nil {
			return "", err
		}
		return "ok", kv.Set(mem, in.Key, in.Value)
	})
	lookup := agentloop.NewTool("lookup", "Look up an account.", nil, func(_ context.Context, in struct {
		Who string `json:"who"`
	}) (string, error) {
		return "", fmt.Errorf("no account for %s", in.Who)
	})
	createPage := agentloop.NewTool("create_page", "Create a page.", nil, func(_ context.Context, in struct {
		Title string `json:"title"`
		Owner string `json:"owner"`
	}) (string, error) {
		return fmt.Sprintf(`{"page":{"id":"pg-%d","title":%q,"owner":%q}}`, len(in.Title), in.Title, in.Owner), nil
	})
	const ask = "Please remember: "
	policy := func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		text, _ := strings.CutPrefix(r.LastUser(), ask)
		if len(r.ToolResults()) > 0 {
			return agenttest.Text("Done, I noted " + text), nil
		}
		n := strconv.Itoa(len(r.Messages))
		return agenttest.Calls(
			agenttest.Call("kv_set", map[string]string{"key": "note-" + n, "value": text}),
			agenttest.Call(workingmemory.DefaultID+"_update", map[string]string{"note": text}),
			agenttest.Call(semanticmemory.DefaultID+"_memorize", map[string]string{"text": "The customer said: " + text, "kind": "profile"}),
			agenttest.Call("lookup", map[string]string{"who": text}),
			agenttest.Call("create_page", map[string]string{"title": "Contact " + n, "owner": text}),
		), nil
	}
	a, err := agentloop.New(agentloop.Config{
		Model:          agenttest.NewFunc(policy),
		Store:          store,
		Layers:         []layer.Layer{pad, ents, eps, sem, kvl},
		Tools:          []agentloop.Tool{kvSet, lookup, createPage},
		RestoreLayers:  true,
		Redaction:      red,
		TracerProvider: tp,
		Logger:         logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	users := []string{"u1", "u1/a"}
	for i, s := range samples {
		u := users[i%len(users)]
		in := agentloop.RunInput{ThreadID: fmt.Sprintf("t-%s-%d", u, i%3), ResourceID: u, Input: ask + s.text}
		if _, err := a.Run(ctx, in); err != nil {
			t.Fatalf("run %d (%s): %v", i, s.kind, err)
		}
	}

	res := piiResult{where: map[string]int{}, masked: map[string]int{}}
	kinds := map[string]bool{}
	for _, s := range samples {
		kinds[s.kind] = true
	}
	res.kinds = len(kinds)
	found := func(place, text string) {
		res.masked[place] += strings.Count(text, "[redacted ")
		for _, s := range samples {
			if slices.ContainsFunc(forms(s.value), func(f string) bool { return strings.Contains(text, f) }) {
				res.where[place]++
				res.unmasked++
			}
		}
	}
	keys, err := store.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	res.keys = len(keys)
	byPlace := map[string]*strings.Builder{}
	for _, k := range keys {
		it, err := store.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		p := piiPlace(k)
		if byPlace[p] == nil {
			byPlace[p] = &strings.Builder{}
		}
		byPlace[p].WriteString(k + "\n" + string(it.Value) + "\n")
	}
	for p, b := range byPlace {
		found(p, b.String())
	}
	var spans strings.Builder
	for _, s := range exp.GetSpans() {
		res.spans++
		spans.WriteString(s.Status.Description + "\n")
		for _, e := range s.Events {
			for _, kv := range e.Attributes {
				spans.WriteString(kv.Value.String() + "\n")
			}
		}
		for _, kv := range s.Attributes {
			spans.WriteString(kv.Value.String() + "\n")
		}
	}
	found("traces", spans.String())
	logText := logs.String()
	res.logLines = strings.Count(logText, "\n")
	found("logs", logText)
	if err := closeStore(); err != nil {
		t.Fatal(err)
	}
	if spec.Backend == "sqlite" {
		files, _ := filepath.Glob(spec.Path + "*")
		var raw bytes.Buffer
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			raw.Write(b)
		}
		found("sqlite file", raw.String())
	}
	return res
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
