package service_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/inspect"
	"github.com/memlayer/memlayer/internal/looptest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/redact"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/service"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/redis"
	"github.com/memlayer/memlayer/storage/sqlite"
	"github.com/memlayer/memlayer/storage/storagetest"
)

// eachBackend runs fn on a new, empty store of each backend: in memory,
// SQLite in a temporary file, and Redis when MEMLAYER_REDIS_URL names a
// server (under a namespace of its own); without one the Redis subtest
// says why it skips.
func eachBackend(t *testing.T, fn func(t *testing.T, store storage.Store)) {
	sq := func(path string) (storagetest.Closer, error) {
		return sqlite.Open(context.Background(), sqlite.Config{Path: path})
	}
	rd := func(url, ns string) (storagetest.Closer, error) {
		return redis.New(redis.Config{URL: url, Namespace: ns})
	}
	backends := storagetest.Backends("memlayer-service", sq, rd)
	for _, be := range backends {
		t.Run(be.Name, func(t *testing.T) { fn(t, be.Open(t, 0)) })
	}
	if !slices.ContainsFunc(backends, func(be storagetest.Backend) bool { return be.Name == "redis" }) {
		t.Run("redis", func(t *testing.T) {
			t.Skip("MEMLAYER_REDIS_URL is not set: run under .ci/with-redis for the Redis backend")
		})
	}
}

func newMemory(t *testing.T, store storage.Store, cfg service.Config) *service.Memory {
	t.Helper()
	m, err := service.New(store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// prompt runs an agent with the default semantic layer on store for user
// and returns the system prompt its model got.
func prompt(t *testing.T, store storage.Store, user, input string) string {
	t.Helper()
	model := agenttest.New(agenttest.Reply(agenttest.Text("OK.")))
	runAgent(t, store, model, user, input)
	return model.Requests()[0].System()
}

func runAgent(t *testing.T, store storage.Store, model llms.Model, user, input string) {
	t.Helper()
	sem, err := semanticmemory.New(semanticmemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agentloop.New(agentloop.Config{Model: model, Store: store, Layers: []layer.Layer{sem}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "thread-of-" + user, ResourceID: user, Input: input}); err != nil {
		t.Fatal(err)
	}
}

// Seeding a user's profile before the first turn puts it in that user's
// first prompt, and in no other user's, whose ID nests or prefixes it.
func TestSeedThenRun(t *testing.T) {
	eachBackend(t, func(t *testing.T, store storage.Store) {
		mem := newMemory(t, store, service.Config{})
		f, err := mem.Add(t.Context(), "ada", service.Memo{Kind: "profile", Text: "Ada lives in Lisbon.", Importance: 0.6})
		if err != nil {
			t.Fatal(err)
		}
		if f.ID == "" || f.Version != 1 || f.Kind != "profile" || f.Importance != 0.6 || f.Source.By != "code" {
			t.Fatalf("added %+v", f)
		}
		want := "[" + f.ID + " profile] Ada lives in Lisbon."
		if sys := prompt(t, store, "ada", "What is the weather like?"); !strings.Contains(sys, want) {
			t.Fatalf("the prompt lacks the seeded fact %q:\n%s", want, sys)
		}
		for _, other := range []string{"ada/b", "ad", "Ada"} {
			if sys := prompt(t, store, other, "Where do I live?"); strings.Contains(sys, "Lisbon") {
				t.Errorf("user %q sees ada's fact:\n%s", other, sys)
			}
		}
	})
}

// A fact the agent memorizes is found, got, listed and has its history
// through the API.
func TestAgentMemorizesAPIFinds(t *testing.T) {
	eachBackend(t, func(t *testing.T, store storage.Store) {
		model := agenttest.New(
			agenttest.Reply(agenttest.Calls(agenttest.Call(memorizeTool, `{"text":"The user prefers green tea.","kind":"preference"}`))),
			agenttest.Reply(agenttest.Text("Noted.")))
		runAgent(t, store, model, "ada", "Remember that I prefer green tea.")
		mem := newMemory(t, store, service.Config{})
		hits, err := mem.Search(t.Context(), "ada", service.Query{Text: "which tea", Kind: "preference"})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 1 || hits[0].Text != "The user prefers green tea." || hits[0].Source.By != "model" {
			t.Fatalf("search found %+v", hits)
		}
		got, err := mem.Get(t.Context(), "ada", hits[0].ID)
		if err != nil || got.Text != hits[0].Text {
			t.Fatalf("get: %+v, %v", got, err)
		}
		page, err := mem.List(t.Context(), "ada", service.Page{})
		if err != nil || len(page.Facts) != 1 || page.Facts[0].ID != got.ID || page.Next != "" {
			t.Fatalf("list: %+v, %v", page, err)
		}
		if hits, err := mem.Search(t.Context(), "ada", service.Query{Text: "which tea", Kind: "profile"}); err != nil || len(hits) != 0 {
			t.Fatalf("a search of another kind found %+v, %v", hits, err)
		}
		if hits, err := mem.Search(t.Context(), "ada/b", service.Query{Text: "which tea"}); err != nil || len(hits) != 0 {
			t.Fatalf("another user's search found %+v, %v", hits, err)
		}
	})
}

// An update through the API changes the next prompt, and a delete takes
// the fact out of it; the history keeps every version.
func TestUpdateDeleteChangeThePrompt(t *testing.T) {
	eachBackend(t, func(t *testing.T, store storage.Store) {
		mem := newMemory(t, store, service.Config{})
		ctx := t.Context()
		city, err := mem.Add(ctx, "ada", service.Memo{Kind: "profile", Text: "Ada lives in Lisbon."})
		if err != nil {
			t.Fatal(err)
		}
		pet, err := mem.Add(ctx, "ada", service.Memo{Kind: "profile", Text: "Ada has a cat called Turing."})
		if err != nil {
			t.Fatal(err)
		}
		upd, err := mem.Update(ctx, "ada", city.ID, service.Change{Text: "Ada lives in Porto."})
		if err != nil {
			t.Fatal(err)
		}
		if city.Importance != semanticmemory.DefaultImportance {
			t.Errorf("a fact added with no importance has %v, want the default", city.Importance)
		}
		if upd.ID != city.ID || upd.Version != 2 || upd.Kind != "profile" || upd.Importance != city.Importance || !upd.Created.Equal(city.Created) {
			t.Fatalf("updated %+v from %+v", upd, city)
		}
		sys := prompt(t, store, "ada", "Hello")
		if !strings.Contains(sys, "Ada lives in Porto.") || strings.Contains(sys, "Lisbon") || !strings.Contains(sys, "Turing") {
			t.Fatalf("the prompt after the update:\n%s", sys)
		}
		if err := mem.Delete(ctx, "ada", pet.ID); err != nil {
			t.Fatal(err)
		}
		if sys := prompt(t, store, "ada", "Hello"); strings.Contains(sys, "Turing") || !strings.Contains(sys, "Porto") {
			t.Fatalf("the prompt after the delete:\n%s", sys)
		}
		hist, err := mem.History(ctx, "ada", city.ID)
		if err != nil || len(hist) != 2 || hist[0].Text != "Ada lives in Lisbon." || hist[1].Text != "Ada lives in Porto." {
			t.Fatalf("history: %+v, %v", hist, err)
		}
		hist, err = mem.History(ctx, "ada", pet.ID)
		if err != nil || len(hist) != 2 || !hist[1].Forgotten {
			t.Fatalf("history of the deleted fact: %+v, %v", hist, err)
		}
		// A deleted fact is gone for Get, Update and Delete; the others stay.
		for name, err := range map[string]error{
			"get":    second(mem.Get(ctx, "ada", pet.ID)),
			"update": second(mem.Update(ctx, "ada", pet.ID, service.Change{Text: "x"})),
			"delete": mem.Delete(ctx, "ada", pet.ID),
		} {
			if !errors.Is(err, semanticmemory.ErrNotFound) {
				t.Errorf("%s of a deleted fact: %v, want ErrNotFound", name, err)
			}
		}
		if _, err := mem.History(ctx, "ada", "f999"); !errors.Is(err, semanticmemory.ErrNotFound) {
			t.Errorf("history of an unknown fact: %v", err)
		}
		// An update that changes nothing writes nothing.
		same, err := mem.Update(ctx, "ada", city.ID, service.Change{Text: "Ada  lives in Porto."})
		if err != nil || same.Version != 2 {
			t.Fatalf("a no-op update: %+v, %v", same, err)
		}
	})
}

func second[T any](_ T, err error) error { return err }

// Erasing a user through the API leaves nothing of theirs in the store's
// keys or its search index, and every other user's memory as it was,
// whatever their IDs: nested, escaped, with a separator, in another case.
func TestEraseLeavesNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, store storage.Store) {
		ctx := t.Context()
		log := audit.New(audit.Config{Store: store})
		mem := newMemory(t, store, service.Config{Audit: log})
		others := []string{"a/b", "a%2Fb", "a:b", "A", "b"}
		for _, user := range append([]string{"a"}, others...) {
			if _, err := mem.Add(ctx, user, service.Memo{Kind: "preference", Text: user + " likes green tea."}); err != nil {
				t.Fatal(err)
			}
		}
		// An agent's run of "a" stores a thread, a memorized fact, an audit.
		model := agenttest.New(
			agenttest.Reply(agenttest.Calls(agenttest.Call(memorizeTool, `{"text":"a plays the cello.","kind":"fact"}`))),
			agenttest.Reply(agenttest.Text("Noted.")))
		runAgent(t, store, model, "a", "I play the cello.")
		if keys, err := (inspect.Inspector{Store: store}).ResourceKeys(ctx, "a"); err != nil || len(keys) < 3 {
			t.Fatalf("before the erase, a has %d keys (%v)", len(keys), err)
		}
		erased, err := mem.EraseUser(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if erased.Counts["layer."+semanticmemory.DefaultStorageID] == 0 || erased.Counts["index."+semanticmemory.DefaultStorageID] == 0 || erased.Counts["thread.audit"] == 0 {
			t.Errorf("erased %v", erased.Counts)
		}
		if keys, err := (inspect.Inspector{Store: store}).ResourceKeys(ctx, "a"); err != nil || len(keys) != 0 {
			t.Errorf("after the erase, a has keys %v (%v)", keys, err)
		}
		// No key left is a's: none of its scope, none of its threads.
		keys, err := store.List(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if lk, ok := inspect.ParseLayerKey(k); ok && lk.ScopeKey == storage.ResourceScope("a") {
				t.Errorf("key %q of a is left", k)
			}
			if strings.Contains(k, "thread-of-a/") || strings.Contains(k, service.DefaultAuditThread("a")+"/") {
				t.Errorf("thread key %q of a is left", k)
			}
		}
		x := store.(storage.Searcher)
		cols, err := x.Collections(ctx, "layers/")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cols {
			if lk, ok := inspect.ParseLayerKey(c); ok && lk.ScopeKey == storage.ResourceScope("a") {
				t.Errorf("search collection %q of a is left", c)
			}
		}
		hits, err := x.Search(ctx, storage.IndexName(semanticmemory.DefaultStorageID, storage.ResourceScope("a"), "facts"), storage.Query{Text: "tea cello"})
		if err != nil || len(hits) != 0 {
			t.Errorf("a's index still finds %v (%v)", hits, err)
		}
		if hits, err := mem.Search(ctx, "a", service.Query{Text: "tea cello"}); err != nil || len(hits) != 0 {
			t.Errorf("the API still finds %v for a (%v)", hits, err)
		}
		for _, user := range others {
			hits, err := mem.Search(ctx, user, service.Query{Text: "green tea"})
			if err != nil || len(hits) != 1 || hits[0].Text != user+" likes green tea." {
				t.Errorf("after erasing a, %s finds %+v (%v)", user, hits, err)
			}
			if turns, err := log.Turns(ctx, service.DefaultAuditThread(user)); err != nil || len(turns) != 1 {
				t.Errorf("after erasing a, %s's audit has %d turns (%v)", user, len(turns), err)
			}
		}
	})
}

// An empty user is a clear error on every call, and changes nothing.
func TestEmptyUser(t *testing.T) {
	ctx := t.Context()
	store := storage.NewMemoryStore()
	mem := newMemory(t, store, service.Config{})
	f, err := mem.Add(ctx, "ada", service.Memo{Text: "Ada writes programs."})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := store.List(ctx, "")
	for name, err := range map[string]error{
		"add":     second(mem.Add(ctx, "", service.Memo{Text: "x"})),
		"search":  second(mem.Search(ctx, "", service.Query{Text: "x"})),
		"get":     second(mem.Get(ctx, "", f.ID)),
		"list":    second(mem.List(ctx, "", service.Page{})),
		"update":  second(mem.Update(ctx, "", f.ID, service.Change{Text: "x"})),
		"delete":  mem.Delete(ctx, "", f.ID),
		"history": second(mem.History(ctx, "", f.ID)),
		"erase":   second(mem.EraseUser(ctx, "")),
		"long":    second(mem.Add(ctx, strings.Repeat("u", 513), service.Memo{Text: "x"})),
	} {
		if !errors.Is(err, service.ErrInvalidUser) {
			t.Errorf("%s with an empty user: %v, want ErrInvalidUser", name, err)
		}
	}
	after, _ := store.List(ctx, "")
	if !slices.Equal(before, after) {
		t.Errorf("the keys changed: %v -> %v", before, after)
	}
	if got, err := mem.Get(ctx, "ada", f.ID); err != nil || got.Text != f.Text {
		t.Errorf("ada's fact: %+v, %v", got, err)
	}
}

// Bad input is a clear error and loses nothing.
func TestBadInput(t *testing.T) {
	ctx := t.Context()
	store := storage.NewMemoryStore()
	mem := newMemory(t, store, service.Config{})
	f, err := mem.Add(ctx, "ada", service.Memo{Kind: "profile", Text: "Ada writes programs."})
	if err != nil {
		t.Fatal(err)
	}
	nan := -0.5
	for name, tc := range map[string]struct {
		err  error
		want error
	}{
		"empty text":           {second(mem.Add(ctx, "ada", service.Memo{Text: "  "})), semanticmemory.ErrInvalidFact},
		"importance":           {second(mem.Add(ctx, "ada", service.Memo{Text: "x y", Importance: 2})), semanticmemory.ErrInvalidFact},
		"plan kind":            {second(mem.Add(ctx, "ada", service.Memo{Text: "Step one.", Kind: "plan"})), service.ErrRefused},
		"unknown kind, a plan": {second(mem.Add(ctx, "ada", service.Memo{Text: "Next step: draft the page, then publish it tomorrow.", Kind: "whatever"})), service.ErrRefused}, // routed by its text to the scratchpad
		"update to plan":       {second(mem.Update(ctx, "ada", f.ID, service.Change{Kind: "plan"})), service.ErrRefused},
		"update importance":    {second(mem.Update(ctx, "ada", f.ID, service.Change{Importance: &nan})), semanticmemory.ErrInvalidFact},
		"empty query":          {second(mem.Search(ctx, "ada", service.Query{Text: " "})), service.ErrInvalidQuery},
		"negative k":           {second(mem.Search(ctx, "ada", service.Query{Text: "x", K: -1})), service.ErrInvalidQuery},
		"bad kind filter":      {second(mem.Search(ctx, "ada", service.Query{Text: "x", Kind: "a b"})), service.ErrInvalidQuery},
		"negative limit":       {second(mem.List(ctx, "ada", service.Page{Limit: -1})), service.ErrInvalidQuery},
		"no extractor":         {second(mem.AddMessages(ctx, "ada", service.Message{Role: "user", Text: "hi"})), service.ErrNoExtractor},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: %v, want %v", name, tc.err, tc.want)
		}
	}
	page, err := mem.List(ctx, "ada", service.Page{})
	if err != nil || len(page.Facts) != 1 || page.Facts[0].Text != f.Text || page.Facts[0].Version != 1 {
		t.Errorf("after bad input, ada has %+v (%v)", page, err)
	}
	clash := &looptest.Distiller{}
	for name, cfg := range map[string]service.Config{
		"nil extractor":          {Extractors: []layer.Layer{nil}},
		"extractor twice":        {Extractors: []layer.Layer{clash, clash}},
		"extractor of the facts": {Facts: semanticmemory.Config{Spec: layer.Spec{ID: "distiller"}}, Extractors: []layer.Layer{clash}},
		"thread scope":           {Facts: semanticmemory.Config{Spec: layer.Spec{Scope: layer.ScopeThread}}},
		"bad facts config":       {Facts: semanticmemory.Config{TopK: -1}},
	} {
		if _, err := service.New(store, cfg); !errors.Is(err, service.ErrInvalidConfig) {
			t.Errorf("New with a %s: %v", name, err)
		}
	}
	if _, err := service.New(nil, service.Config{}); !errors.Is(err, service.ErrInvalidConfig) {
		t.Errorf("New without a store: %v", err)
	}
}

// Concurrent adds for two users, whose IDs nest, keep every fact, each
// with its user.
func TestConcurrentAdds(t *testing.T) {
	eachBackend(t, func(t *testing.T, store storage.Store) {
		mem := newMemory(t, store, service.Config{})
		const per = 8
		users := []string{"a", "a/b"}
		var wg sync.WaitGroup
		for _, u := range users {
			for i := range per {
				wg.Go(func() {
					text := fmt.Sprintf("%s collects %s.", u, []string{"stamps", "coins", "maps", "shells", "clocks", "kites", "fossils", "postcards"}[i])
					if _, err := mem.Add(context.Background(), u, service.Memo{Text: text}); err != nil {
						t.Error(err)
					}
				})
			}
		}
		wg.Wait()
		for _, u := range users {
			var all []service.Fact
			p := service.Page{Limit: 3}
			for {
				page, err := mem.List(t.Context(), u, p)
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, page.Facts...)
				if page.Next == "" {
					break
				}
				p.After = page.Next
			}
			if len(all) != per {
				t.Fatalf("%s has %d facts, want %d: %+v", u, len(all), per, all)
			}
			for _, f := range all {
				if !strings.HasPrefix(f.Text, u+" collects") {
					t.Errorf("%s has %q", u, f.Text)
				}
			}
		}
	})
}

// Text added through the API is masked as the agent masks its memorize
// tool's arguments, and the route, the write and the masking are in the
// user's audit.
func TestRedactionAndAudit(t *testing.T) {
	ctx := t.Context()
	store := storage.NewMemoryStore()
	log := audit.New(audit.Config{Store: store})
	mem := newMemory(t, store, service.Config{Audit: log})
	f, err := mem.Add(ctx, "ada", service.Memo{Kind: "profile", Text: "Ada's email is ada@example.com."})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(f.Text, "ada@example.com") {
		t.Fatalf("stored unmasked: %q", f.Text)
	}
	if _, err := mem.Update(ctx, "ada", f.ID, service.Change{Text: "Ada's work email, since May, is lovelace@example.org."}); err != nil {
		t.Fatal(err)
	}
	if err := mem.Delete(ctx, "ada", f.ID); err != nil {
		t.Fatal(err)
	}
	turns, err := log.Turns(ctx, service.DefaultAuditThread("ada"))
	if err != nil || len(turns) != 3 {
		t.Fatalf("audit: %d turns (%v)", len(turns), err)
	}
	var ops []string
	for _, tr := range turns {
		for _, e := range tr.Entries {
			ops = append(ops, string(e.Op))
			if strings.Contains(e.Text, "@example") {
				t.Errorf("the audit holds %q", e.Text)
			}
		}
	}
	want := []string{"route", "write", "redact", "route", "write", "supersede", "redact", "forget"}
	if !slices.Equal(ops, want) {
		t.Errorf("audit ops %v, want %v", ops, want)
	}
	if owner, err := (inspect.Inspector{Store: store}).Threads(ctx, inspect.ThreadQuery{ResourceID: "ada"}); err != nil || len(owner) != 1 {
		t.Errorf("ada's threads: %+v (%v)", owner, err)
	}
	// Redaction off stores the text as it is.
	plain := newMemory(t, store, service.Config{Redaction: redactOff()})
	g, err := plain.Add(ctx, "bob", service.Memo{Kind: "profile", Text: "Bob's email is bob@example.com."})
	if err != nil || !strings.Contains(g.Text, "bob@example.com") {
		t.Errorf("with redaction off: %+v, %v", g, err)
	}
}

// Messages reach the extractors as the loop's turns do, and their
// proposals are routed and kept; a restated fact supersedes its earlier
// version.
func TestAddMessages(t *testing.T) {
	eachBackend(t, func(t *testing.T, store storage.Store) {
		d := &looptest.Distiller{Propose: func(tn layer.Turn) []layer.Write {
			if rest, ok := strings.CutPrefix(tn.Query, "I prefer "); ok {
				return []layer.Write{{Kind: "preference", Text: "The user prefers " + rest, Importance: 0.7},
					{Kind: "plan", Text: "Reply politely."}}
			}
			return nil
		}}
		mem := newMemory(t, store, service.Config{Extractors: []layer.Layer{d}})
		facts, err := mem.AddMessages(t.Context(), "ada",
			service.Message{Role: service.RoleUser, Text: "I prefer tea in the morning."},
			service.Message{Role: service.RoleAssistant, Text: "Noted."},
			service.Message{Role: service.RoleUser, Text: "What time is it?"})
		if err != nil {
			t.Fatal(err)
		}
		if len(facts) != 1 || facts[0].Text != "The user prefers tea in the morning." || facts[0].Source.By != "layer:distiller" {
			t.Fatalf("kept %+v", facts)
		}
		if sys := prompt(t, store, "ada", "Hello"); !strings.Contains(sys, "The user prefers tea in the morning.") {
			t.Fatalf("the prompt lacks the extracted fact:\n%s", sys)
		}
		if _, err := mem.AddMessages(t.Context(), "ada", service.Message{Role: "system", Text: "x"}); !errors.Is(err, service.ErrInvalidMessage) {
			t.Errorf("a system message: %v", err)
		}
	})
}

func redactOff() redact.Policy { return redact.Policy{Disabled: true} }

// A namespace is a semantic layer's ID: two namespaces of one user keep
// their facts apart, an agent's layer of that ID sees its namespace's,
// and EraseUser erases every namespace.
func TestNamespaces(t *testing.T) {
	ctx := t.Context()
	store := storage.NewMemoryStore()
	home := newMemory(t, store, service.Config{})
	work := newMemory(t, store, service.Config{Facts: semanticmemory.Config{Spec: layer.Spec{ID: "work-facts"}}})
	if home.Namespace() != semanticmemory.DefaultID || work.Namespace() != "work-facts" {
		t.Fatalf("namespaces %q and %q", home.Namespace(), work.Namespace())
	}
	if _, err := home.Add(ctx, "ada", service.Memo{Kind: "preference", Text: "Ada likes jazz at home."}); err != nil {
		t.Fatal(err)
	}
	if _, err := work.Add(ctx, "ada", service.Memo{Kind: "preference", Text: "Ada likes quiet at work."}); err != nil {
		t.Fatal(err)
	}
	if hits, err := work.Search(ctx, "ada", service.Query{Text: "Ada likes"}); err != nil || len(hits) != 1 || !strings.Contains(hits[0].Text, "work") {
		t.Fatalf("work finds %+v (%v)", hits, err)
	}
	sem, err := semanticmemory.New(semanticmemory.Config{Spec: layer.Spec{ID: "work-facts"}})
	if err != nil {
		t.Fatal(err)
	}
	model := agenttest.New(agenttest.Reply(agenttest.Text("OK.")))
	a, err := agentloop.New(agentloop.Config{Model: model, Store: store, Layers: []layer.Layer{sem}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(ctx, agentloop.RunInput{ThreadID: "t1", ResourceID: "ada", Input: "hello"}); err != nil {
		t.Fatal(err)
	}
	if sys := model.Requests()[0].System(); !strings.Contains(sys, "Ada likes quiet at work.") || strings.Contains(sys, "jazz") {
		t.Fatalf("the work agent's prompt:\n%s", sys)
	}
	if _, err := home.EraseUser(ctx, "ada"); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*service.Memory{home, work} {
		if page, err := m.List(ctx, "ada", service.Page{}); err != nil || len(page.Facts) != 0 {
			t.Errorf("%s keeps %+v after the erase (%v)", m.Namespace(), page.Facts, err)
		}
	}
}

// memorizeTool is the name the agent offers semantic memory's memorize
// function by.
var memorizeTool = layer.ToolName(semanticmemory.DefaultID, "memorize")

// A cancelled context stops a call before it writes.
func TestCancelled(t *testing.T) {
	store := storage.NewMemoryStore()
	mem := newMemory(t, store, service.Config{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := mem.Add(ctx, "ada", service.Memo{Text: "Ada likes tea."}); !errors.Is(err, context.Canceled) {
		t.Errorf("Add under a cancelled context: %v", err)
	}
	if _, err := mem.Search(ctx, "ada", service.Query{Text: "tea"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Search under a cancelled context: %v", err)
	}
	if keys, _ := store.List(t.Context(), ""); len(keys) != 0 {
		t.Errorf("a cancelled Add stored %v", keys)
	}
}
