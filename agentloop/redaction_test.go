package agentloop_test

import (
	"bytes"
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/entitymemory"
	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/redact"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/redis"
	"github.com/memlayer/memlayer/storage/sqlite"
	"github.com/memlayer/memlayer/workingmemory"
)

// The generators below make the secrets of the redaction test. They are
// written apart from package redact: card check digits by the doubling
// rule, IBAN check digits with math/big.

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func genWord(r *rand.Rand, n int, from string) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = from[r.IntN(len(from))]
	}
	return string(b)
}

// genLuhn returns a 16-digit number that starts with prefix and passes
// the Luhn check.
func genLuhn(r *rand.Rand, prefix string) string {
	d := prefix + genWord(r, 15-len(prefix), "0123456789")
	sum := 0
	for i := len(d) - 1; i >= 0; i-- {
		v := int(d[i] - '0')
		if (len(d)-i)%2 == 1 { // doubled: every second digit from the right of the full number
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
	}
	return d + string(rune('0'+(10-sum%10)%10))
}

// genIBAN returns a German IBAN with valid check digits.
func genIBAN(r *rand.Rand) string {
	bban := genWord(r, 18, "0123456789")
	n, _ := new(big.Int).SetString(bban+"131400", 10) // "DE00": D=13, E=14
	check := 98 - new(big.Int).Mod(n, big.NewInt(97)).Int64()
	return fmt.Sprintf("DE%02d%s", check, bban)
}

type secrets struct {
	email, card, iban, phone, key, bearer, password string
}

func genSecrets(r *rand.Rand, i int) secrets {
	return secrets{
		email:    fmt.Sprintf("%s.%s%d@%s.example", genWord(r, 5, "abcdefghij"), genWord(r, 6, "klmnopqrst"), i, genWord(r, 7, "abcdefgh")),
		card:     genLuhn(r, "4"),
		iban:     genIBAN(r),
		phone:    fmt.Sprintf("+44 20 %04d %04d", r.IntN(10000), r.IntN(10000)),
		key:      "sk-live-" + genWord(r, 28, alnum),
		bearer:   genWord(r, 40, alnum),
		password: genWord(r, 18, alnum),
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
// values is there outside the scratchpad, whose redaction is off by
// default and which keeps the e-mail the user asked it to note. The
// pages' 16-digit Luhn-valid numeric IDs survive everywhere and still
// resolve in a later run.
func TestMemory40_RedactionReachesNoStore(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) (storage.Store, string){
		"memory": func(*testing.T) (storage.Store, string) { return storage.NewMemory(), "" },
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
		id := genLuhn(r, "4") // a page ID that is also a valid card number
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
			calls = append(calls, agenttest.Call("working-memory_update", fmt.Sprintf(`{"contact":%q}`, noted)))
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
		ents, err := entitymemory.New(entitymemory.Config{Scope: layer.ScopeResource, Capacity: 20})
		if err != nil {
			t.Fatal(err)
		}
		eps, err := episodicmemory.New(episodicmemory.Config{Scope: layer.ScopeResource})
		if err != nil {
			t.Fatal(err)
		}
		sem, err := semanticmemory.New(semanticmemory.Config{})
		if err != nil {
			t.Fatal(err)
		}
		pad, err := workingmemory.New(workingmemory.Config{Scope: layer.ScopeResource})
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

	// Every key and value, outside the scratchpad.
	ctx := t.Context()
	keys, err := store.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var all bytes.Buffer
	scratch := storage.LayerPrefix(workingmemory.DefaultID, "")
	scratch = scratch[:strings.LastIndex(scratch[:len(scratch)-1], "/")+1] // "layers/working-memory/"
	keptNote := false
	for _, k := range keys {
		it, err := store.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		// The scratchpad's state, and its snapshot in the thread's
		// checkpoint, keep what the user asked it to note.
		if strings.HasPrefix(k, scratch) || strings.Contains(k, "/layer."+workingmemory.DefaultID+".") {
			keptNote = keptNote || bytes.Contains(it.Value, []byte(noted))
			continue
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
	if !keptNote {
		t.Errorf("the scratchpad lost the e-mail the user asked it to note (redaction is off for it by default)")
	}
	// The numeric IDs survive: every page ID is stored (the thread's tool
	// results and the entity memory keep them).
	for _, id := range ids {
		if !bytes.Contains(all.Bytes(), []byte(id)) {
			t.Errorf("page ID %s was altered or lost", id)
		}
	}
	t.Logf("FIGURE redaction: %d planted values, none stored outside the scratchpad; %d numeric IDs kept; %d values masked; %d keys scanned",
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
			if bytes.Contains(raw, []byte(s)) && s != noted {
				t.Errorf("planted value %q is in the bytes of %s", s, filepath.Base(f))
			}
		}
	}
}

// TestMemory41_RedactionPerLayerAndOff: RedactionConfig.Tools turns the
// masking of a layer's tool arguments on for the scratchpad (off by
// default); Disabled stores everything as it was said.
func TestMemory41_RedactionPerLayerAndOff(t *testing.T) {
	const email = "jane.doe@corp.example"
	for _, tc := range []struct {
		name      string
		cfg       agentloop.RedactionConfig
		padMasked bool // the scratchpad's state holds the mask
		msgMasked bool // the stored messages hold the mask
	}{
		{"default", agentloop.RedactionConfig{}, false, true},
		{"scratchpad on", agentloop.RedactionConfig{Tools: map[string]bool{workingmemory.DefaultID: true}}, true, true},
		{"disabled", agentloop.RedactionConfig{Disabled: true}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := storage.NewMemory()
			pad, err := workingmemory.New(workingmemory.Config{})
			if err != nil {
				t.Fatal(err)
			}
			model := agenttest.New(
				agenttest.Reply(agenttest.Calls(agenttest.Call("working-memory_update", `{"contact":"`+email+`"}`))),
				agenttest.Reply(agenttest.Text("Noted "+email)),
			)
			a, err := agentloop.New(agentloop.Config{Model: model, Store: store, Layers: []layer.Layer{pad}, Redaction: tc.cfg})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "Note my e-mail " + email}); err != nil {
				t.Fatal(err)
			}
			state, err := store.Get(t.Context(), storage.LayerKey(workingmemory.DefaultID, "t", "state"))
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

// TestMemory47_MemoryAdapterMasksTheTurn: langchaingo's Memory adapter
// hands the layers' Store a masked turn, as an Agent does; with
// Redaction.Disabled, the turn as it was said.
func TestMemory47_MemoryAdapterMasksTheTurn(t *testing.T) {
	const email, card = "jane.doe@corp.example", "4539148803436467"
	for _, disabled := range []bool{false, true} {
		var turns []layer.Turn
		st := newInitStack(t, &turnRecorder{Layer: layer.Text(layer.Spec{ID: "recorder"}, ""), turns: &turns})
		mem := agentloop.NewMemory(st, agentloop.MemoryConfig{Redaction: agentloop.RedactionConfig{Disabled: disabled}})
		if err := mem.SaveContext(t.Context(), map[string]any{"input": "Mail " + email + ", card " + card}, map[string]any{"text": "Done for " + email}); err != nil {
			t.Fatal(err)
		}
		if len(turns) != 1 {
			t.Fatalf("%d turns stored, want 1", len(turns))
		}
		kept := strings.Contains(turns[0].Query+turns[0].Response, email) || strings.Contains(turns[0].Query, card)
		if kept != disabled {
			t.Errorf("disabled %v: the layers got %q / %q", disabled, turns[0].Query, turns[0].Response)
		}
	}
}
