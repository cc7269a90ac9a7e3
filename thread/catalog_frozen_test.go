package thread_test

import (
	"encoding/json"
	"flag"
	"os"
	"slices"
	"testing"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
)

var updateCatalog = flag.Bool("update-catalog", false, "rewrite testdata/catalog-store.json")

// catalogStore is the frozen store of TestCatalogFrozenStore: two
// threads of one resource, one titled and labelled by Catalog.Update,
// one with its derived title, and a thread of another resource.
const catalogStore = "testdata/catalog-store.json"

// TestCatalogFrozenStore: a store written with the Catalog's records as
// they are stored today (a head's "title", a "meta" record, a resource's
// list of threads) loads with nothing lost. -update-catalog rewrites it.
func TestCatalogFrozenStore(t *testing.T) {
	ctx := t.Context()
	if *updateCatalog {
		st := storage.NewMemoryStore()
		step(t, st, "t-old", "user-1", "Plan the spring launch of the ACME site with the marketing team next week")
		step(t, st, "t-new", "user-1", "Translate the pricing page into French")
		step(t, st, "t-other", "user-2", "Another user's request")
		title := "Pricing (FR)"
		if _, err := (thread.Catalog{Store: st}).Update(ctx, "t-new", thread.Update{Title: &title, Set: map[string]string{"project": "acme", "lang": "fr"}}); err != nil {
			t.Fatal(err)
		}
		keys, err := st.List(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		dump := map[string]json.RawMessage{}
		for _, k := range keys {
			it, err := st.Get(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			dump[k] = it.Value
		}
		data, err := json.MarshalIndent(dump, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(catalogStore, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(catalogStore)
	if err != nil {
		t.Fatal(err)
	}
	var dump map[string]json.RawMessage
	if err := json.Unmarshal(data, &dump); err != nil {
		t.Fatal(err)
	}
	st := storage.NewMemoryStore()
	for k, v := range dump {
		if _, err := st.Put(ctx, k, v, storage.NoVersion); err != nil {
			t.Fatal(err)
		}
	}
	c := thread.Catalog{Store: st}
	p, err := c.List(ctx, "user-1", thread.ListQuery{})
	if err != nil || !slices.Equal(ids(p), []string{"t-new", "t-old"}) {
		t.Fatalf("threads of user-1: %v, %v", ids(p), err)
	}
	if th := p.Threads[0]; th.Title != "Pricing (FR)" || !th.TitleSet || th.Metadata["project"] != "acme" || th.Metadata["lang"] != "fr" || th.Messages != 2 {
		t.Errorf("t-new: %+v", th)
	}
	if th := p.Threads[1]; th.Title != "Plan the spring launch of the ACME site with the marketing…" || th.TitleSet || th.Metadata != nil {
		t.Errorf("t-old: %+v", th)
	}
	if p, err := c.List(ctx, "user-1", thread.ListQuery{Metadata: map[string]string{"lang": "fr"}}); err != nil || !slices.Equal(ids(p), []string{"t-new"}) {
		t.Errorf("filtered: %v, %v", ids(p), err)
	}
	if m, err := c.Messages(ctx, "t-old", thread.MessageQuery{From: -1}); err != nil || len(m.Messages) != 1 || m.Messages[0].Role != thread.RoleAssistant {
		t.Errorf("messages of t-old: %+v, %v", m, err)
	}
	if p, err := c.List(ctx, "user-2", thread.ListQuery{}); err != nil || !slices.Equal(ids(p), []string{"t-other"}) {
		t.Errorf("threads of user-2: %v, %v", ids(p), err)
	}
}
