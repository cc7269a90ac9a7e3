package episodicmemory_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/layer/layertest"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/sqlite"
	"github.com/memlayer/memlayer/storage/storagetest"
)

// searchStore is a store with search, as storage.MemoryStore and SQLite are.
type searchStore interface {
	storage.Store
	storage.Searcher
}

// touched returns what w saw of the records and collections of the
// layer's scope.
func touched(w *layertest.Watched, scope string) []string {
	return w.Touched(storage.LayerPrefix(episodicmemory.DefaultStorageID, scope))
}

// markUser is one run: a user (a resource, "" for an anonymous thread)
// on a thread.
type markUser struct{ resource, thread string }

// markUsers nest ("a" and "a/b", threads "t1" and "t1/t2") and include an
// anonymous thread named like the first user.
var markUsers = []markUser{{"a", "t1"}, {"a/b", "t1/t2"}, {"", "a"}}

// scopeOf is the scope key of u's log in scope.
func (u markUser) scopeOf(scope layer.Scope) string {
	return layer.Env{ThreadID: u.thread, ResourceID: u.resource}.ScopeKey(scope)
}

// secret is the text only u's episodes hold.
func (u markUser) secret() string {
	return "SECRET" + strings.NewReplacer("/", "SLASH").Replace(u.resource+"X"+u.thread)
}

// secretStep is a step whose result holds u's secret.
func (u markUser) secretStep(n int) layer.Turn {
	return toolStep(n, fmt.Sprintf("%s-call-%d", u.thread, n), "cms_getPage", `{"id":"p"}`,
		fmt.Sprintf(`{"page":{"id":"p-%d","title":"%s"}}`, n, u.secret()))
}

// markStores runs fn on a fresh storage.MemoryStore and on a fresh SQLite file.
func markStores(t *testing.T, fn func(t *testing.T, st searchStore)) {
	t.Run("memory", func(t *testing.T) { fn(t, storage.NewMemoryStore()) })
	t.Run("sqlite", func(t *testing.T) {
		st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "m.db")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		fn(t, st)
	})
}

// forge returns mark with its scope replaced by scope.
func forge(t *testing.T, mark json.RawMessage, scope string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(mark, &m); err != nil {
		t.Fatal(err)
	}
	m["scope"], _ = json.Marshal(scope)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// refusedForeign restores data into l and checks that it is refused
// with ErrCorrupt, that l's state is as it was, that l shows nothing of
// victim's, and that nothing of victim's scope was read or written.
func refusedForeign(t *testing.T, w *layertest.Watched, l *episodicmemory.Layer, data json.RawMessage, victim markUser, victimScope string) {
	t.Helper()
	ctx := t.Context()
	before, err := l.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	eps := refs(l)
	w.Reset()
	err = l.Restore(ctx, data)
	if !errors.Is(err, episodicmemory.ErrCorrupt) {
		t.Errorf("Restore of a mark of scope %s = %v, want ErrCorrupt", victimScope, err)
	} else if !strings.Contains(err.Error(), "scope") {
		t.Errorf("the refusal does not say why: %v", err)
	}
	if got := touched(w, victimScope); len(got) > 0 {
		t.Errorf("Restore of a foreign mark touched the victim's scope: %q", got)
	}
	if after, _ := l.Snapshot(ctx); string(after) != string(before) {
		t.Errorf("a refused Restore changed the state: %s -> %s", before, after)
	}
	if got := refs(l); !slices.Equal(got, eps) {
		t.Errorf("a refused Restore changed the episodes: %q -> %q", eps, got)
	}
	if b := recall(t, l, "page "+victim.secret()); strings.Contains(b, victim.secret()) {
		t.Errorf("the victim's episodes are recalled:\n%s", b)
	}
	if _, _, err := l.Read(ctx, victim.thread+"-call-0"); !errors.Is(err, episodicmemory.ErrNoEpisode) {
		t.Errorf("Read of the victim's episode = %v, want ErrNoEpisode", err)
	}
}

// TestTrust3Mark_SnapshotOfAnotherUserIsRefused: a layer restores a mark
// (a snapshot naming a position in a stored log) only from its own scope.
// The mark of another user's (or another thread's) log, whether taken
// from that user or forged by rewriting the scope of one's own mark, is
// refused with ErrCorrupt before anything of that scope is read; the
// layer keeps its state and shows nothing of the other user's. Users
// nest ("a", "a/b") and one runs anonymously, in thread and in resource
// scope, on storage.MemoryStore and SQLite.
func TestTrust3Mark_SnapshotOfAnotherUserIsRefused(t *testing.T) {
	for _, scope := range []layer.Scope{layer.ScopeThread, layer.ScopeResource} {
		t.Run(string(scope), func(t *testing.T) {
			markStores(t, func(t *testing.T, st searchStore) {
				w := layertest.Watch(st)
				cfg := episodicmemory.Config{Spec: layer.Spec{Scope: scope}}
				marks := map[markUser]json.RawMessage{}
				for _, u := range markUsers {
					l := bound(t, cfg, w.Store(), u.thread, u.resource)
					store(t, l, u.secretStep(0), u.secretStep(1))
					var err error
					if marks[u], err = l.Snapshot(t.Context()); err != nil {
						t.Fatal(err)
					}
				}
				for _, attacker := range markUsers {
					for _, victim := range markUsers {
						if attacker == victim {
							continue
						}
						vs := victim.scopeOf(scope)
						t.Run(fmt.Sprintf("%q<-%q", attacker.resource+"@"+attacker.thread, victim.resource+"@"+victim.thread), func(t *testing.T) {
							l := bound(t, cfg, w.Store(), attacker.thread, attacker.resource)
							refusedForeign(t, w, l, marks[victim], victim, vs)
							refusedForeign(t, w, l, forge(t, marks[attacker], vs), victim, vs)
							if got := recall(t, l, "page "+attacker.secret()); !strings.Contains(got, attacker.secret()) {
								t.Errorf("the attacker lost its own episodes:\n%s", got)
							}
						})
					}
				}
				// A restarted run of the same user still restores its own mark.
				for _, u := range markUsers {
					l := bound(t, cfg, w.Store(), u.thread, u.resource)
					store(t, l, u.secretStep(2))
					if err := l.Restore(t.Context(), marks[u]); err != nil {
						t.Fatalf("user %q: Restore of its own mark: %v", u.resource, err)
					}
					if got := refs(l); len(got) != 2 {
						t.Errorf("user %q: restored %q, want its 2 marked episodes", u.resource, got)
					}
				}
			})
		})
	}
}

// TestTrust3Mark_ErasedUserIsNotReadBack: once a user's scope is erased,
// neither another user's forged mark naming it nor the erased user's own
// old mark reads anything back.
func TestTrust3Mark_ErasedUserIsNotReadBack(t *testing.T) {
	markStores(t, func(t *testing.T, st searchStore) {
		ctx := t.Context()
		w := layertest.Watch(st)
		cfg := episodicmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}}
		victim, attacker := markUsers[0], markUsers[1]
		vs := victim.scopeOf(layer.ScopeResource)
		v := bound(t, cfg, w.Store(), victim.thread, victim.resource)
		store(t, v, victim.secretStep(0), victim.secretStep(1))
		old, err := v.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		storagetest.Erase(t, st, storage.LayerPrefix(episodicmemory.DefaultStorageID, vs))

		a := bound(t, cfg, w.Store(), attacker.thread, attacker.resource)
		store(t, a, attacker.secretStep(0))
		own, _ := a.Snapshot(ctx)
		refusedForeign(t, w, a, old, victim, vs)
		refusedForeign(t, w, a, forge(t, own, vs), victim, vs)

		// The erased user's next run: its old mark names records that are
		// gone, and is refused; nothing comes back.
		again := bound(t, cfg, w.Store(), victim.thread, victim.resource)
		if err := again.Restore(ctx, old); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("Restore of a mark of an erased log = %v, want storage.ErrNotFound", err)
		}
		if got := refs(again); len(got) != 0 {
			t.Errorf("erased episodes read back: %q", got)
		}
		if b := recall(t, again, "page "+victim.secret()); strings.Contains(b, victim.secret()) {
			t.Errorf("erased episodes recalled:\n%s", b)
		}
	})
}

// TestTrust3Mark_UsersAtOnce: two users ("a" and "a/b") on one store at
// once, each storing, snapshotting and restoring its own marks and trying
// the other's: every foreign mark is refused, every own mark restores,
// and each ends with its own episodes only. Run it with -race.
func TestTrust3Mark_UsersAtOnce(t *testing.T) {
	markStores(t, func(t *testing.T, st searchStore) {
		ctx := t.Context()
		cfg := episodicmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}}
		users := markUsers[:2]
		layers := make([]*episodicmemory.Layer, len(users))
		marks := make([]chan json.RawMessage, len(users))
		for i, u := range users {
			layers[i] = bound(t, cfg, st, u.thread, u.resource)
			marks[i] = make(chan json.RawMessage, 64)
		}
		const steps = 12
		var wg sync.WaitGroup
		errs := make(chan error, 4*steps*len(users))
		for i, u := range users {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, other := layers[i], marks[1-i]
				for n := range steps {
					if err := l.Store(ctx, u.secretStep(n)); err != nil {
						errs <- fmt.Errorf("user %q: Store: %w", u.resource, err)
						return
					}
					m, err := l.Snapshot(ctx)
					if err != nil {
						errs <- err
						return
					}
					marks[i] <- m
					if err := l.Restore(ctx, m); err != nil {
						errs <- fmt.Errorf("user %q: Restore of its own mark: %w", u.resource, err)
					}
					select {
					case f := <-other:
						if err := l.Restore(ctx, f); !errors.Is(err, episodicmemory.ErrCorrupt) {
							errs <- fmt.Errorf("user %q: Restore of the other user's mark = %v, want ErrCorrupt", u.resource, err)
						}
					default:
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		for i, u := range users {
			o := users[1-i]
			l := bound(t, episodicmemory.Config{Spec: cfg.Spec, MaxRecall: 100}, st, u.thread+"-check", u.resource)
			eps := l.Episodes()
			if len(eps) != steps {
				t.Errorf("user %q holds %d episodes, want %d", u.resource, len(eps), steps)
			}
			for _, e := range eps {
				if strings.Contains(e.Result, o.secret()) || !strings.Contains(e.Result, u.secret()) {
					t.Errorf("user %q holds %s", u.resource, e.Result)
				}
			}
		}
	})
}
