package workingmemory

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/memlayer/memlayer/internal/jsonx"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt/fence"
)

// FoldedKey is the member of the summary item that stands, in a list
// Recall shows folded, for the list's oldest items: how many were
// folded. The item's "items" member lists their key fields and its
// "note" says that the scratchpad still holds them whole (see the
// package doc). An update that sends a list starting with an object
// holding FoldedKey (a number n) gets, in its place, the first n items
// of the list it replaces.
const FoldedKey = "_folded"

// foldFields are the fields of a folded list item that its summary
// keeps, besides every field named as an ID ("id", "pageId", "page_id",
// "page-id", "pageID"): what names the item and says where it stands.
var foldFields = []string{"goal", "key", "kind", "name", "owner", "priority", "ref", "state", "status", "title", "type", "url"}

// foldTextRunes bounds a string a summary keeps: a longer one is cut at a
// rune boundary and ends with "…".
const foldTextRunes = 80

// foldPlacement says where a fold's summary items go.
type foldPlacement int

const (
	// foldInList puts each list's summary item in place of its folded
	// items, first in the list.
	foldInList foldPlacement = iota
	// foldAfter leaves the folded items out of the lists and shows the
	// summaries after the state, outside it: for a schema that the
	// summary item would not satisfy.
	foldAfter
)

// foldList is a list of an object state that Recall may fold: the
// object members leading to it, and the encoded size of each item.
type foldList struct {
	path  []string
	sizes []int
}

// folder folds the oldest items of an object state's lists until its
// block fits a budget. Only Recall's view is folded: the state is never
// changed.
type folder struct {
	l     *Layer
	root  *jsonx.Object
	lists []foldList
	// order is the fold sequence: order[i] is the list that gives up its
	// oldest unfolded item at step i+1.
	order []int
}

// newFolder returns the folder of state v, or nil when v is not an
// object or has no list of two items or more.
func newFolder(l *Layer, v any) *folder {
	root, ok := v.(*jsonx.Object)
	if !ok {
		return nil
	}
	f := &folder{l: l, root: root}
	f.collect(root, nil)
	if len(f.lists) == 0 {
		return nil
	}
	f.plan()
	return f
}

// collect finds the lists under o, through object members only (a list
// inside a list item folds with its item).
func (f *folder) collect(o *jsonx.Object, path []string) {
	for _, m := range o.Members {
		p := append(path[:len(path):len(path)], m.Key)
		switch v := m.Value.(type) {
		case *jsonx.Object:
			f.collect(v, p)
		case []any:
			if len(v) < 2 {
				continue
			}
			sizes := make([]int, len(v))
			for i, it := range v {
				sizes[i] = len(jsonx.Append(nil, it, ""))
			}
			f.lists = append(f.lists, foldList{path: p, sizes: sizes})
		}
	}
}

// plan orders the folds: at each step the list whose unfolded items,
// its newest excepted, take the most bytes gives up its oldest one (the
// first list in key order on a tie). A list keeps its newest item.
func (f *folder) plan() {
	left := make([]int, len(f.lists)) // bytes of the foldable items left
	next := make([]int, len(f.lists)) // index of the oldest unfolded item
	total := 0
	for i, fl := range f.lists {
		for _, s := range fl.sizes[:len(fl.sizes)-1] {
			left[i] += s
		}
		total += len(fl.sizes) - 1
	}
	f.order = make([]int, 0, total)
	for range total {
		best := -1
		for i := range f.lists {
			if next[i] < len(f.lists[i].sizes)-1 && (best < 0 || left[i] > left[best]) {
				best = i
			}
		}
		f.order = append(f.order, best)
		left[best] -= f.lists[best].sizes[next[best]]
		next[best]++
	}
}

// counts returns how many items of each list the first k steps fold.
func (f *folder) counts(k int) []int {
	n := make([]int, len(f.lists))
	for _, i := range f.order[:k] {
		n[i]++
	}
	return n
}

// view returns the state with the first k steps folded: each folded
// list holds its summary item and then its unfolded items (foldInList),
// or only its unfolded items (foldAfter); and the summaries, with the
// path of their list, in list order.
func (f *folder) view(k int, place foldPlacement) (any, []foldedList) {
	n := f.counts(k)
	var out []foldedList
	folds := map[string]int{}
	for i, c := range n {
		if c > 0 {
			folds[pathKey(f.lists[i].path)] = c
		}
	}
	v := f.rebuild(f.root, nil, folds, place, &out)
	return v, out
}

// foldedList is the summary of one folded list.
type foldedList struct {
	path    []string
	summary *jsonx.Object
}

// pathKey joins a path for a map key; '\x00' cannot be confused with a
// key's characters in a way that matters here (keys are compared whole).
func pathKey(path []string) string { return strings.Join(path, "\x00") }

// rebuild returns o with the lists named in folds folded, sharing what
// is not folded.
func (f *folder) rebuild(o *jsonx.Object, path []string, folds map[string]int, place foldPlacement, out *[]foldedList) *jsonx.Object {
	var ms []jsonx.Member
	for i, m := range o.Members {
		nv := f.rebuildValue(m.Value, append(path[:len(path):len(path)], m.Key), folds, place, out)
		switch {
		case nv != nil && ms == nil:
			ms = append(make([]jsonx.Member, 0, len(o.Members)), o.Members[:i]...)
			ms = append(ms, jsonx.Member{Key: m.Key, Value: nv})
		case nv != nil:
			ms = append(ms, jsonx.Member{Key: m.Key, Value: nv})
		case ms != nil:
			ms = append(ms, m)
		}
	}
	if ms == nil {
		return o
	}
	return &jsonx.Object{Members: ms}
}

// rebuildValue returns the value v at path with the lists named in
// folds folded, or nil when nothing in it is.
func (f *folder) rebuildValue(v any, p []string, folds map[string]int, place foldPlacement, out *[]foldedList) any {
	switch v := v.(type) {
	case *jsonx.Object:
		if r := f.rebuild(v, p, folds, place, out); r != v {
			return r
		}
	case []any:
		if c := folds[pathKey(p)]; c > 0 {
			s := f.summary(v[:c], place)
			*out = append(*out, foldedList{path: p, summary: s})
			list := make([]any, 0, len(v)-c+1)
			if place == foldInList {
				list = append(list, s)
			}
			return append(list, v[c:]...)
		}
	}
	return nil
}

// summary returns the one item that stands for the folded items:
// {"_folded": <how many>, "items": [<each item's key fields>], "note":
// "<what it is>"}. An item with no key field is counted and not listed.
func (f *folder) summary(items []any, place foldPlacement) *jsonx.Object {
	keys := make([]any, 0, len(items))
	for _, it := range items {
		if k, ok := keyFields(it); ok {
			keys = append(keys, k)
		}
	}
	n := len(items)
	keep := "keep this item first when you send the list, or they are removed"
	if place == foldAfter {
		keep = fmt.Sprintf(`send {"%s": %d} first in the list when you send it, or they are removed`, FoldedKey, n)
	}
	if f.l.c.cfg.ReadOnly {
		keep = "it is read-only"
	}
	note := fmt.Sprintf("the %d oldest items of this list, shown by their key fields only to fit the prompt; the scratchpad keeps them whole (%s)", n, keep)
	ms := []jsonx.Member{{Key: FoldedKey, Value: json.Number(strconv.Itoa(n))}}
	if len(keys) > 0 {
		ms = append(ms, jsonx.Member{Key: "items", Value: keys})
	}
	ms = append(ms, jsonx.Member{Key: "note", Value: note})
	return &jsonx.Object{Members: ms}
}

// unfold returns list, an array an update sends in place of old, with a
// fold's summary item, when list starts with one ({"_folded": n, ...}),
// replaced by the items it stands for: the first n of old (all of old
// when it has fewer). A model that sends back a list Recall showed folded
// so keeps its folded items. It reports whether it replaced one.
func unfold(old any, list []any) ([]any, bool) {
	prev, ok := old.([]any)
	if !ok || len(list) == 0 {
		return list, false
	}
	o, ok := list[0].(*jsonx.Object)
	if !ok {
		return list, false
	}
	v, _ := o.Get(FoldedKey)
	num, _ := v.(json.Number)
	n, err := strconv.Atoi(string(num))
	if err != nil || n < 1 {
		return list, false
	}
	n = min(n, len(prev))
	out := make([]any, 0, n+len(list)-1)
	return append(append(out, prev[:n]...), list[1:]...), true
}

// keyFields returns what a summary keeps of a list item: an object's
// scalar key fields (see objectKeys), or a scalar item itself (a string
// cut to foldTextRunes). It is false for an item with nothing to keep.
func keyFields(it any) (any, bool) {
	switch v := it.(type) {
	case *jsonx.Object:
		o := objectKeys(v)
		return o, len(o.Members) > 0
	case string:
		return cutRunes(v, foldTextRunes), true
	case []any, nil:
		return nil, false
	}
	return it, true
}

// objectKeys returns o's scalar key fields (IDs and foldFields; strings
// cut to foldTextRunes).
func objectKeys(o *jsonx.Object) *jsonx.Object {
	var ms []jsonx.Member
	for _, m := range o.Members {
		if !isKeyField(m.Key) {
			continue
		}
		switch s := m.Value.(type) {
		case string:
			ms = append(ms, jsonx.Member{Key: m.Key, Value: cutRunes(s, foldTextRunes)})
		case *jsonx.Object, []any, nil:
		default:
			ms = append(ms, m)
		}
	}
	return &jsonx.Object{Members: ms}
}

// isKeyField reports whether a summary keeps the field key: one of
// foldFields (any case) or an ID.
func isKeyField(key string) bool {
	lower := strings.ToLower(key)
	for _, f := range foldFields {
		if lower == f {
			return true
		}
	}
	if lower == "id" {
		return true
	}
	for _, sfx := range []string{"Id", "ID", "_id", "-id"} {
		if len(key) > len(sfx) && strings.HasSuffix(key, sfx) {
			return true
		}
	}
	return false
}

// cutRunes returns s cut to at most n runes, ending with "…" when cut.
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for range n - 1 {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i] + "…"
}

// render returns the block of a view: the view as compact JSON, and,
// for foldAfter, one line per folded list after it naming the list (a
// JSON Pointer) and holding its summary.
func (f *folder) render(v any, folded []foldedList, place foldPlacement) string {
	text := string(jsonx.Append(nil, v, ""))
	if place == foldAfter {
		var b strings.Builder
		b.WriteString(text)
		for _, fl := range folded {
			b.WriteString("\n[folded ")
			b.WriteString(strconv.Quote(pointer(fl.path)))
			b.WriteString(": ")
			b.Write(jsonx.Append(nil, fl.summary, ""))
			b.WriteString("]")
		}
		text = b.String()
	}
	return text
}

// fold returns the text of the smallest fold of the state whose block
// fits q.Budget, and true; or the text of the largest fold and false
// when none fits. The summary goes in the list unless the schema
// refuses the view with it there; then after the state.
func (f *folder) fold(q layer.Query) (string, bool) {
	place := foldInList
	text, k, ok := f.search(q, place)
	if ok && f.l.c.schema != nil {
		if v, _ := f.view(k, place); f.l.c.schema.validate(v) != nil {
			place = foldAfter
			text, _, ok = f.search(q, place)
		}
	}
	return text, ok
}

// search finds the fewest fold steps whose block fits q.Budget: a
// binary search (a summary grows slower than the items it replaces, so
// the block shrinks with the steps, near enough), its result checked.
// Without one, it returns the text of every step folded.
func (f *folder) search(q layer.Query, place foldPlacement) (string, int, bool) {
	text := func(k int) string {
		v, folded := f.view(k, place)
		return f.render(v, folded, place)
	}
	fits := func(k int) bool { return q.Count(fence.Wrap(f.l.c.tag, text(k))) <= q.Budget }
	total := len(f.order)
	k := 1 + sort.Search(total, func(i int) bool { return fits(i + 1) })
	if k <= total && fits(k) {
		return text(k), k, true
	}
	return text(total), total, false
}
