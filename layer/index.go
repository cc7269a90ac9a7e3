package layer

import "github.com/memlayer/memlayer/storage"

// IndexOf returns s's search index when s is a [storage.Searcher]. A
// layer that searches uses it when ok, and otherwise keeps an in-process
// [storage.MemoryIndex] of the records it loads, so that it has one code
// path whatever the store. A store wrapper must forward Searcher for the
// layers behind it to find the index.
func IndexOf(s storage.Store) (idx storage.Searcher, ok bool) {
	idx, ok = s.(storage.Searcher)
	return idx, ok
}
