package layertest

import (
	"context"
	"strings"
	"sync"

	"github.com/memlayer/memlayer/storage"
)

// Watched records the keys, prefixes and collections a layer reads or
// writes through a store, so that a test can tell whether a scope was
// touched at all. Its methods are safe for concurrent use.
type Watched struct {
	st   storage.Store
	x    storage.Searcher // nil when st cannot search
	mu   sync.Mutex
	seen []string
}

// Watch returns a recorder of what goes through [Watched.Store], a view
// of st.
func Watch(st storage.Store) *Watched {
	w := &Watched{st: st}
	w.x, _ = st.(storage.Searcher)
	return w
}

// Store returns the store to bind layers to: st, recorded, with st's
// search capability when st has one.
func (w *Watched) Store() storage.Store {
	if w.x == nil {
		return watchedStore{w}
	}
	return watchedSearcher{watchedStore{w}}
}

// Reset forgets what was recorded.
func (w *Watched) Reset() {
	w.mu.Lock()
	w.seen = nil
	w.mu.Unlock()
}

// Touched returns the keys, prefixes and collections recorded that
// contain part, in the order they were used.
func (w *Watched) Touched(part string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, s := range w.seen {
		if strings.Contains(s, part) {
			out = append(out, s)
		}
	}
	return out
}

func (w *Watched) saw(name string) {
	w.mu.Lock()
	w.seen = append(w.seen, name)
	w.mu.Unlock()
}

type watchedStore struct{ w *Watched }

func (s watchedStore) Get(ctx context.Context, key string) (storage.Item, error) {
	s.w.saw(key)
	return s.w.st.Get(ctx, key)
}

func (s watchedStore) Put(ctx context.Context, key string, v []byte, ver int64) (int64, error) {
	s.w.saw(key)
	return s.w.st.Put(ctx, key, v, ver)
}

func (s watchedStore) Delete(ctx context.Context, key string, ver int64) error {
	s.w.saw(key)
	return s.w.st.Delete(ctx, key, ver)
}

func (s watchedStore) List(ctx context.Context, prefix string) ([]string, error) {
	s.w.saw(prefix)
	return s.w.st.List(ctx, prefix)
}

type watchedSearcher struct{ watchedStore }

func (s watchedSearcher) Index(ctx context.Context, col string, docs ...storage.Document) error {
	s.w.saw(col)
	return s.w.x.Index(ctx, col, docs...)
}

func (s watchedSearcher) Unindex(ctx context.Context, col string, ids ...string) error {
	s.w.saw(col)
	return s.w.x.Unindex(ctx, col, ids...)
}

func (s watchedSearcher) Search(ctx context.Context, col string, q storage.Query) ([]storage.Hit, error) {
	s.w.saw(col)
	return s.w.x.Search(ctx, col, q)
}

func (s watchedSearcher) Collections(ctx context.Context, prefix string) ([]string, error) {
	s.w.saw(prefix)
	return s.w.x.Collections(ctx, prefix)
}

func (s watchedSearcher) Drop(ctx context.Context, col string) error {
	s.w.saw(col)
	return s.w.x.Drop(ctx, col)
}
