package service_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/service"
	"github.com/memlayer/memlayer/storage"
)

// TestCommitOutsideTheLoop: a write through the service is audited as a
// turn whose audit.Commit has the same shape as an agent run's: the
// route, the write with its size, and the fact evicted to make room;
// two users writing at once each get only their own.
func TestCommitOutsideTheLoop(t *testing.T) {
	ctx := t.Context()
	store := storage.NewMemoryStore()
	log := audit.New(audit.Config{Store: store})
	mem := newMemory(t, store, service.Config{Audit: log,
		Facts: semanticmemory.Config{Capacity: semanticmemory.Capacity{MaxFacts: 1, GuardImportance: 2}}})
	users := []string{"ada", "ada/b", "bob"}
	first := make([]service.Fact, len(users))
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(users))
	for i, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := mem.Add(ctx, u, service.Memo{Kind: "profile", Text: u + " lives in Lisbon."})
			if err != nil {
				errs <- err
				return
			}
			first[i] = f
			if _, err := mem.Add(ctx, u, service.Memo{Kind: "decision", Text: u + " chose the night train to Madrid."}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, u := range users {
		turns, err := log.Turns(ctx, service.DefaultAuditThread(u))
		if err != nil || len(turns) != 2 {
			t.Fatalf("%s: %d turns, %v", u, len(turns), err)
		}
		c := turns[1].Commit()
		text := u + " chose the night train to Madrid."
		if len(c.Routes) != 1 || c.Routes[0].Refused || c.Routes[0].Text != text || c.Routes[0].Layer != mem.Namespace() {
			t.Errorf("%s: routes %+v", u, c.Routes)
		}
		if len(c.Writes) != 1 || c.Writes[0].Layer != mem.Namespace() || c.Writes[0].Bytes != len(text) || c.Writes[0].Key == first[i].ID {
			t.Errorf("%s: writes %+v", u, c.Writes)
		}
		want := fmt.Sprintf("[{Layer:%s Key:%s Count:1 Step:0 Depth:0}]", mem.Namespace(), first[i].ID)
		if got := fmt.Sprintf("%+v", c.Evictions); got != want {
			t.Errorf("%s: evictions %s, want %s", u, got, want)
		}
		if first := turns[0].Commit(); len(first.Evictions) != 0 || len(first.Writes) != 1 {
			t.Errorf("%s: first turn's commit %+v", u, first)
		}
	}
}
