package agentloop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/entitymemory"
	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/redact"
	"github.com/memlayer/memlayer/redact/redacttest"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/redis"
	"github.com/memlayer/memlayer/storage/sqlite"
	"github.com/memlayer/memlayer/workingmemory"
)

// The secrets of the redaction test come from package redacttest,
// written apart from package redact.

type secrets struct {
	email, card, iban, phone, key, bearer, password string
}

func genSecrets(r *rand.Rand, i int) secrets {
	return secrets{
		email:    fmt.Sprintf("%s.%s%d@%s.example", redacttest.Word(r, 5, "abcdefghij"), redacttest.Word(r, 6, "klmnopqrst"), i, redacttest.Word(r, 7, "abcdefgh")),
		card:     redacttest.Luhn(r, "4", 16),
		iban:     redacttest.IBAN(r),
		phone:    fmt.Sprintf("+44 20 7%03d %04d", r.IntN(1000), r.IntN(10000)), // a London number (020 7…), valid under the numbering plan
		key:      "sk-live-" + redacttest.Word(r, 28, redacttest.Alnum),
		bearer:   redacttest.Word(r, 40, redacttest.Alnum),
		password: redacttest.Word(r, 18, redacttest.Alnum),
	}
}

func (s secrets) all() []string {
	return []string{s.email, s.card, s.iban, s.phone, s.key, s.bearer, s.password}
}

// TestMemory40_RedactionReachesNoStore runs a scripted conversation full
// of e-mail addresses, card numbers, IBANs, phone numbers and keys
// through an agent with the entity, episodic and semantic memories and
// the scratchpad, on each backend, then reads every key and value of the
// store (and every byte of the closed SQLite file): none of the planted
// values is there, the e-mail the user asked the scratchpad to note
// included (working memory is masked like every layer, TestTrust314). The
// pages' 16-digit Luhn-valid numeric IDs survive everywhere and still
// resolve in a later run.
func TestMemory40_RedactionReachesNoStore(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) (storage.Store, string){
		"memory": func(*testing.T) (storage.Store, string) { return storage.NewMemoryStore(), "" },
		"sqlite": func(t *testing.T) (storage.Store, string) {
			path := filepath.Join(t.TempDir(), "memory.db")
			st, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			return st, path
		},
		"redis": func(t *testing.T) (storage.Store, string) {
			url := os.Getenv("MEMLAYER_REDIS_URL")
			if url == "" {
				t.Skip("MEMLAYER_REDIS_URL is not set (run under .ci/with-redis)")
			}
			st, err := redis.New(redis.Config{URL: url, Namespace: fmt.Sprintf("memlayer-redact:%d:", rand.Int64())})
			if err != nil {
				t.Fatal(err)
			}
			return st, ""
		},
	} {
		t.Run(name, func(t *testing.T) {
			store, path := open(t)
			redactionScenario(t, store, path)
		})
	}
}

func redactionScenario(t *testing.T, store storage.Store, path string) {
	r := rand.New(rand.NewPCG(40, 2026))
	const turns = 6
	var planted []string
	var ids []string
	var scripted []agenttest.Step
	var inputs []string
	var noted string // what the user asks the scratchpad to keep
	for i := range turns {
		s := genSecrets(r, i)
		planted = append(planted, s.all()...)
		id := redacttest.Luhn(r, "4", 16) // a page ID that is also a valid card number
		ids = append(ids, id)
		if i == 0 {
			noted = s.email
		}
		inputs = append(inputs, fmt.Sprintf("I'm customer %d, mail me at %s or call %s. Card %s, IBAN %s. Create the billing page; api_key=%s",
			i, s.email, s.phone, s.card, s.iban, s.key))
		calls := []llms.ToolCall{
			agenttest.Call("create_page", fmt.Sprintf(`{"title":"Billing %d","contact":%q,"note":"card %s","pageId":%q}`, i, s.email, s.card, id)),
			agenttest.Call(semanticmemory.DefaultID+"_memorize", fmt.Sprintf(`{"text":"Customer %d can be mailed at %s and pays with IBAN %s","kind":"profile"}`, i, s.email, s.iban)),
		}
		if i == 0 {
			calls = append(calls, agenttest.Call("working_memory_update", fmt.Sprintf(`{"contact":%q}`, noted)))
		}
		scripted = append(scripted,
			agenttest.Reply(agenttest.Calls(calls...)),
			agenttest.Reply(agenttest.Text(fmt.Sprintf("Created the billing page; I will write to %s. Authorization: Bearer %s password=%s", s.email, s.bearer, s.password))),
		)
	}
	results := map[string]string{} // page ID → the tool's result
	create := agentloop.NewTool("create_page", "Create a page.", nil, func(_ context.Context, in struct {
		Title   string `json:"title"`
		Contact string `json:"contact"`
		Note    string `json:"note"`
		PageID  string `json:"pageId"`
	}) (string, error) {
		out := fmt.Sprintf(`{"page":{"id":%q,"title":%q,"owner":%q,"note":%q}}`, in.PageID, in.Title, in.Contact, in.Note)
		results[in.PageID] = out
		return out, nil
	})
	newLayers := func() []layer.Layer {
		ents, err := entitymemory.New(entitymemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}, Capacity: 20})
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
		return []layer.Layer{pad, ents, eps, sem}
	}
	model := agenttest.New(scripted...)
	a, err := agentloop.New(agentloop.Config{Model: model, Store: store, Layers: newLayers(), Tools: []agentloop.Tool{create}})
	if err != nil {
		t.Fatal(err)
	}
	masked := 0
	for i, in := range inputs {
		res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: fmt.Sprintf("thread-%d", i%2), ResourceID: "customer-desk", Input: in})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range res.Redacted {
			masked += n
		}
		if res.Redacted[redact.Card] == 0 || res.Redacted[redact.Email] == 0 || res.Redacted[redact.Secret] == 0 {
			t.Errorf("run %d: Result.Redacted = %v, want cards, e-mails and secrets counted", i, res.Redacted)
		}
	}
	if len(results) != turns {
		t.Fatalf("the tool ran %d times, want %d", len(results), turns)
	}

	// Every key and value.
	ctx := t.Context()
	keys, err := store.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var all bytes.Buffer
	notedMasked := false
	for _, k := range keys {
		it, err := store.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(k, workingmemory.DefaultStorageID) && bytes.Contains(it.Value, []byte("[redacted email]")) {
			notedMasked = true
		}
		all.WriteString(k)
		all.WriteByte('\n')
		all.Write(it.Value)
		all.WriteByte('\n')
	}
	for _, s := range planted {
		if bytes.Contains(all.Bytes(), []byte(s)) {
			i := bytes.Index(all.Bytes(), []byte(s))
			t.Errorf("planted value %q is stored: …%q…", s, all.Bytes()[max(0, i-200):min(all.Len(), i+100)])
		}
	}
	if !notedMasked {
		t.Errorf("the scratchpad's state does not hold the masked e-mail %s the user asked it to note", noted)
	}
	// The numeric IDs survive: every page ID is stored (the thread's tool
	// results and the entity memory keep them).
	for _, id := range ids {
		if !bytes.Contains(all.Bytes(), []byte(id)) {
			t.Errorf("page ID %s was altered or lost", id)
		}
	}
	t.Logf("FIGURE redaction: %d planted values, none stored; %d numeric IDs kept; %d values masked; %d keys scanned",
		len(planted), len(ids), masked, len(keys))

	// A later run resolves the last page from the entity memory.
	next := agenttest.New(agenttest.Reply(agenttest.Text("ok")))
	b, err := agentloop.New(agentloop.Config{Model: next, Store: store, Layers: newLayers(), Tools: []agentloop.Tool{create}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Run(ctx, agentloop.RunInput{ThreadID: "thread-9", ResourceID: "customer-desk", Input: "Publish it"}); err != nil {
		t.Fatal(err)
	}
	if sys := next.Requests()[0].System(); !strings.Contains(sys, ids[len(ids)-1]) {
		t.Errorf("the next run's prompt does not carry the last page's ID %s:\n%s", ids[len(ids)-1], sys)
	}

	if path == "" {
		return
	}
	if c, ok := store.(interface{ Close() error }); ok {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(path + "*")
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range planted {
			if bytes.Contains(raw, []byte(s)) {
				t.Errorf("planted value %q is in the bytes of %s", s, filepath.Base(f))
			}
		}
	}
}

// TestMemory41_RedactionPerLayerAndOff: the scratchpad's tool arguments
// are masked by default (TestTrust314); redact.Policy.Layers, or its
// former name Tools, turns that off for it; Disabled stores everything as
// it was said.
func TestMemory41_RedactionPerLayerAndOff(t *testing.T) {
	const email = "jane.doe@corp.example"
	for _, tc := range []struct {
		name      string
		cfg       redact.Policy
		padMasked bool // the scratchpad's state holds the mask
		msgMasked bool // the stored messages hold the mask
	}{
		{"default", redact.Policy{}, true, true},
		{"scratchpad off", redact.Policy{Layers: map[string]bool{workingmemory.DefaultID: false}}, false, true},
		{"scratchpad off (Tools)", redact.Policy{Tools: map[string]bool{workingmemory.DefaultID: false}}, false, true},                                                        //lint:ignore SA1019 the former name is tested on purpose
		{"Layers overrides Tools", redact.Policy{Tools: map[string]bool{workingmemory.DefaultID: false}, Layers: map[string]bool{workingmemory.DefaultID: true}}, true, true}, //lint:ignore SA1019 the former name is tested on purpose
		{"disabled", redact.Policy{Disabled: true}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := storage.NewMemoryStore()
			pad, err := workingmemory.New(workingmemory.Config{})
			if err != nil {
				t.Fatal(err)
			}
			model := agenttest.New(
				agenttest.Reply(agenttest.Calls(agenttest.Call("working_memory_update", `{"contact":"`+email+`"}`))),
				agenttest.Reply(agenttest.Text("Noted "+email)),
			)
			a, err := agentloop.New(agentloop.Config{Model: model, Store: store, Layers: []layer.Layer{pad}, Redaction: tc.cfg})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "Note my e-mail " + email}); err != nil {
				t.Fatal(err)
			}
			state, err := store.Get(t.Context(), storage.LayerKey(workingmemory.DefaultStorageID, storage.ThreadScope("t"), "state"))
			if err != nil {
				t.Fatal(err)
			}
			if got := bytes.Contains(state.Value, []byte(email)); got == tc.padMasked {
				t.Errorf("scratchpad state %s: e-mail kept = %v, want %v", state.Value, got, !tc.padMasked)
			}
			msgs, _, err := a.Transcript(t.Context(), "t")
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(msgs[0].Text, email); got == tc.msgMasked {
				t.Errorf("stored user message %q: e-mail kept = %v, want %v", msgs[0].Text, got, !tc.msgMasked)
			}
		})
	}
}

// TestMemory85_RedactionOfNestedJSON: a tool whose result carries other
// JSON documents as escaped strings (two levels deep) leaves none of the
// values planted at any level in the store, keeps every identifier (the
// numeric ones beyond 2^53 included), and its stored result is still
// JSON. With a redactor of the user's that cuts across the JSON syntax,
// the agent masks the document string by string instead, into nested
// documents too, and never rounds a number through a float64.
func TestMemory85_RedactionOfNestedJSON(t *testing.T) {
	// A user's redactor that masks e-mail addresses and the quote after
	// them: it breaks a JSON document.
	emails := regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[a-z]{2,}"?`)
	greedy := redact.Func(func(text string, _ []string) (string, []redact.Finding) {
		var found []redact.Finding
		for _, m := range emails.FindAllStringIndex(text, -1) {
			found = append(found, redact.Finding{Kind: redact.Email, Start: m[0], End: m[1]})
		}
		return emails.ReplaceAllString(text, "[email]"), found
	})
	for _, tc := range []struct {
		name   string
		cfg    redact.Policy
		emails bool // only the e-mail addresses are masked
	}{
		{"default", redact.Policy{}, false},
		{"redactor that breaks JSON", redact.Policy{Redactor: greedy}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(73, 12))
			docs := []redacttest.Doc{redacttest.Nested(r, 0), redacttest.Nested(r, 1), redacttest.Nested(r, 2)}
			var calls []llms.ToolCall
			for i := range docs {
				calls = append(calls, agenttest.Call("fetch_record", fmt.Sprintf(`{"n":%d}`, i)))
			}
			fetch := agentloop.NewTool("fetch_record", "Fetch a record.", nil, func(_ context.Context, in struct {
				N int `json:"n"`
			}) (string, error) {
				return docs[in.N].JSON, nil
			})
			eps, err := episodicmemory.New(episodicmemory.Config{})
			if err != nil {
				t.Fatal(err)
			}
			store := storage.NewMemoryStore()
			model := agenttest.New(agenttest.Reply(agenttest.Calls(calls...)), agenttest.Reply(agenttest.Text("done")))
			a, err := agentloop.New(agentloop.Config{Model: model, Store: store, Layers: []layer.Layer{eps}, Tools: []agentloop.Tool{fetch}, Redaction: tc.cfg})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "fetch the records"}); err != nil {
				t.Fatal(err)
			}
			var planted, ids []string
			for _, d := range docs {
				ids = append(ids, d.IDs...)
				for _, s := range d.Planted {
					if !tc.emails || strings.Contains(s, "@") {
						planted = append(planted, s)
					}
				}
			}
			all := storeBytes(t, store)
			for _, s := range planted {
				if i := bytes.Index(all, []byte(s)); i >= 0 {
					t.Errorf("planted value %q is stored: …%q…", s, all[max(0, i-120):min(len(all), i+60)])
				}
			}
			for _, id := range ids {
				if !bytes.Contains(all, []byte(id)) {
					t.Errorf("identifier %s was altered or lost", id)
				}
			}
			msgs, _, err := a.Transcript(t.Context(), "t")
			if err != nil {
				t.Fatal(err)
			}
			results := 0
			for _, m := range msgs {
				for _, res := range m.ToolResults {
					results++
					if !json.Valid([]byte(res.Content)) {
						t.Errorf("stored tool result is not JSON: %s", res.Content)
					}
				}
			}
			if results != len(docs) {
				t.Errorf("%d tool results stored, want %d", results, len(docs))
			}
		})
	}
}

// storeBytes returns every key and value of store.
func storeBytes(t *testing.T, store storage.Store) []byte {
	t.Helper()
	keys, err := store.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	var all bytes.Buffer
	for _, k := range keys {
		it, err := store.Get(t.Context(), k)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&all, "%s\n%s\n", k, it.Value)
	}
	return all.Bytes()
}
