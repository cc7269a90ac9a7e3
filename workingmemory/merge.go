package workingmemory

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/memlayer/memlayer/internal/jsonx"
)

// DeleteKey is the reserved key of an update object that lists what to
// delete: {"$delete": ["contact/phone", "openTasks/0"]}. It may appear in
// any object of the update; its paths are relative to that object. Paths
// are applied to the current state before the rest of the update is
// merged, so deleting a key and sending it again replaces it wholesale
// instead of merging into it.
const DeleteKey = "$delete"

// PreviousKey is where the old text goes when a text state receives an
// object update: the state becomes the update plus {"_previous": <text>},
// so nothing the model wrote before is lost. The old text wins over a
// "_previous" key in the update.
const PreviousKey = "_previous"

// forbidden reports whether key is dropped from every update at every
// depth: the keys that pollute prototypes when the state is handed to
// JavaScript tooling, and that no scratchpad needs.
func forbidden(key string) bool {
	switch key {
	case "__proto__", "constructor", "prototype":
		return true
	}
	return false
}

// merger merges an update into a state. Values are immutable: merge never
// modifies dst or src; the result shares dst's unchanged subtrees and
// src's new ones. Nothing outside the package holds these values (State
// and the provided data hand out copies), so no reference is shared with a
// caller.
type merger struct {
	nullReplaces bool
}

// mergeState merges the update object into the state (text or object) and
// returns the new state. A text state becomes an object holding the old
// text under PreviousKey.
func (m merger) mergeState(st any, update *jsonx.Object) (any, error) {
	base, _ := st.(*jsonx.Object)
	out, err := m.mergeObject(base, update)
	if prev, _ := st.(string); prev != "" && err == nil {
		// The old text, merged last, wins over a PreviousKey in update.
		out, err = m.mergeObject(out, &jsonx.Object{Members: []jsonx.Member{{Key: PreviousKey, Value: prev}}})
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// skip reports whether a member of an update is not merged: the delete
// list, the reserved write log key, a forbidden key, or (by default) a
// null.
func (m merger) skip(e jsonx.Member) bool {
	return reserved(e.Key) || e.Value == nil && !m.nullReplaces
}

// reserved reports whether key is never kept in a state: a forbidden
// key, DeleteKey or the write log's key.
func reserved(key string) bool {
	return forbidden(key) || key == DeleteKey || key == writesKey
}

// mergeObject returns dst (nil means {}) with src merged in: src's
// DeleteKey paths removed first, then every other member of src merged.
// Both are sorted, so this is one merge-join.
func (m merger) mergeObject(dst, src *jsonx.Object) (*jsonx.Object, error) {
	dst, err := applyDeletes(dst, src)
	if err != nil {
		return nil, err
	}
	var d []jsonx.Member
	if dst != nil {
		d = dst.Members
	}
	s := src.Members
	out := make([]jsonx.Member, 0, len(d)+len(s))
	i, j := 0, 0
	for i < len(d) || j < len(s) {
		switch {
		case j == len(s) || i < len(d) && d[i].Key < s[j].Key:
			out = append(out, d[i])
			i++
		case i == len(d) || s[j].Key < d[i].Key:
			out, err = m.appendMerged(out, nil, s[j])
			j++
		default: // same key
			out, err = m.appendMerged(out, &d[i], s[j])
			i++
			j++
		}
		if err != nil {
			return nil, err
		}
	}
	return &jsonx.Object{Members: out}, nil
}

// applyDeletes returns dst without the paths src lists under DeleteKey.
func applyDeletes(dst, src *jsonx.Object) (*jsonx.Object, error) {
	del, ok := src.Get(DeleteKey)
	if !ok {
		return dst, nil
	}
	paths, err := parseDeletes(del)
	if err != nil || dst == nil {
		return dst, err
	}
	return deleteFrom(dst, paths).(*jsonx.Object), nil
}

// appendMerged appends to out the member src merged into old (nil when
// the state lacks the key). A skipped member leaves old as it was.
func (m merger) appendMerged(out []jsonx.Member, old *jsonx.Member, src jsonx.Member) ([]jsonx.Member, error) {
	if m.skip(src) {
		if old != nil {
			out = append(out, *old)
		}
		return out, nil
	}
	var prev any
	if old != nil {
		prev = old.Value
	}
	v, err := m.mergeValue(prev, src.Value)
	if err != nil {
		return out, err
	}
	return append(out, jsonx.Member{Key: src.Key, Value: v}), nil
}

// mergeValue returns dst with src merged in: an object recursively,
// anything else replacing dst.
func (m merger) mergeValue(dst, src any) (any, error) {
	if s, ok := src.(*jsonx.Object); ok {
		d, _ := dst.(*jsonx.Object)
		return m.mergeObject(d, s)
	}
	v, _ := cleanValue(src) // an array replaces whole, cleaned
	if a, ok := v.([]any); ok {
		if u, ok := unfold(dst, a); ok {
			return u, nil // with a fold's items back
		}
	}
	return v, nil
}

// cleanValue returns v with forbidden keys (and DeleteKey and writesKey
// keys, which mean nothing inside a replaced array or a state) removed from
// the objects it holds, at every depth, and whether anything was removed;
// unchanged, it returns v itself. Arrays replace whole, so nulls inside
// them are data.
func cleanValue(v any) (any, bool) {
	switch t := v.(type) {
	case []any:
		// v itself when unchanged: boxing t again would allocate.
		if out, changed := cleanArray(t); changed {
			return out, true
		}
	case *jsonx.Object:
		return cleanObject(t)
	}
	return v, false
}

// cleanArray is cleanValue of an array: its elements cleaned, in a copy
// made at the first that changes, and whether one did (nil when none did).
func cleanArray(t []any) ([]any, bool) {
	var out []any
	for i, e := range t {
		c, changed := cleanValue(e)
		if changed && out == nil {
			out = slices.Clone(t)
		}
		if out != nil {
			out[i] = c
		}
	}
	return out, out != nil
}

// cleanObject is cleanValue of an object: its members cleaned and those
// of the keys cleanValue removes left out, in a copy made at the first
// member that changes.
func cleanObject(t *jsonx.Object) (any, bool) {
	var out []jsonx.Member
	for i, e := range t.Members {
		drop := reserved(e.Key)
		c, changed := e.Value, false
		if !drop {
			c, changed = cleanValue(e.Value)
		}
		if (drop || changed) && out == nil {
			out = make([]jsonx.Member, i, len(t.Members))
			copy(out, t.Members[:i])
		}
		if out != nil && !drop {
			out = append(out, jsonx.Member{Key: e.Key, Value: c})
		}
	}
	if out == nil {
		return t, false
	}
	return &jsonx.Object{Members: out}, true
}

// parseDeletes reads the value of a DeleteKey: a path or a list of paths.
// A path holding a '/' is a JSON Pointer, its leading '/' optional
// ("/contact/phone", "contact/phone"; "~1" stands for '/' in a key, "~0"
// for '~'); any other path is dotted ("contact.phone"), so a key holding a
// '.' is named in pointer form ("/a.b"). Array elements are named by
// index.
func parseDeletes(v any) ([][]string, error) {
	var list []any
	switch v := v.(type) {
	case string:
		list = []any{v}
	case []any:
		list = v
	case nil:
		return nil, nil
	default:
		return nil, fmt.Errorf("%w: %q must be a list of paths such as [\"contact/phone\", \"openTasks/0\"]", ErrInvalidUpdate, DeleteKey)
	}
	paths := make([][]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("%w: %q entries must be strings, got %s", ErrInvalidUpdate, DeleteKey, kindOf(e))
		}
		p, err := parsePath(s)
		if err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

func parsePath(s string) ([]string, error) {
	if s == "" {
		return nil, fmt.Errorf("%w: empty %s path; to empty the whole memory, delete its keys", ErrInvalidUpdate, DeleteKey)
	}
	if strings.Contains(s, "/") {
		parts := strings.Split(strings.TrimPrefix(s, "/"), "/")
		for i, p := range parts {
			if strings.Contains(p, "~") {
				parts[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(p)
			}
		}
		return parts, nil
	}
	return strings.Split(s, "."), nil
}

// deleteFrom returns v without the paths (v is not modified). Missing
// paths are ignored, so a retried update deletes idempotently. Indexes of
// one array all refer to the array before any deletion.
func deleteFrom(v any, paths [][]string) any {
	switch v := v.(type) {
	case *jsonx.Object:
		return deleteFromObject(v, splitPaths(paths))
	case []any:
		return deleteFromArray(v, splitPaths(paths))
	}
	return v
}

// deletion is a list of paths to delete from one value, by its first
// step: the keys or indexes to drop, and the paths to delete inside what
// is kept. Indexes are in canonical form ("0", not "00" or "-0").
type deletion struct {
	drop map[string]bool
	rest map[string][][]string
}

func splitPaths(paths [][]string) deletion {
	d := deletion{drop: map[string]bool{}, rest: map[string][][]string{}}
	for _, p := range paths {
		if len(p) == 1 {
			d.drop[p[0]] = true
		} else {
			d.rest[p[0]] = append(d.rest[p[0]], p[1:])
		}
	}
	return d
}

func deleteFromObject(v *jsonx.Object, d deletion) *jsonx.Object {
	out := make([]jsonx.Member, 0, len(v.Members))
	for _, e := range v.Members {
		if d.drop[e.Key] {
			continue
		}
		if sub, ok := d.rest[e.Key]; ok {
			e.Value = deleteFrom(e.Value, sub)
		}
		out = append(out, e)
	}
	return &jsonx.Object{Members: out}
}

func deleteFromArray(v []any, d deletion) []any {
	out := make([]any, 0, len(v))
	var buf [20]byte
	for i, e := range v {
		// (A map index of string(bytes) does not allocate.)
		key := strconv.AppendInt(buf[:0], int64(i), 10)
		if d.drop[string(key)] {
			continue
		}
		if sub, ok := d.rest[string(key)]; ok {
			e = deleteFrom(e, sub)
		}
		out = append(out, e)
	}
	return out
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case *jsonx.Object, map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return "a number"
}

// rebase applies to cur the changes that took base to child, and returns
// the result. Objects present on all three sides are rebased member by
// member, so changes on different keys, at any depth, all survive; any
// other value the child changed (a scalar, an array, a key added or
// deleted) replaces cur's. Where cur had also changed that value since
// base, to something else than the child's, the child's value wins and
// the value's JSON Pointer is added to conflicts ("" for the root).
func rebase(base, child, cur any, path []string, conflicts *[]string) any {
	if equalJSON(base, child) {
		return cur
	}
	bo, bok := base.(*jsonx.Object)
	co, cok := child.(*jsonx.Object)
	uo, uok := cur.(*jsonx.Object)
	if !bok || !cok || !uok {
		if !equalJSON(cur, base) && !equalJSON(cur, child) {
			*conflicts = append(*conflicts, pointer(path))
		}
		return child
	}
	return rebaseObject(bo, co, uo, path, conflicts)
}

// rebaseObject is rebase of three objects, member by member.
func rebaseObject(bo, co, uo *jsonx.Object, path []string, conflicts *[]string) *jsonx.Object {
	out := make([]jsonx.Member, 0, len(uo.Members)+len(co.Members))
	for _, k := range unionKeys(bo, co, uo) {
		if v, ok := rebaseMember(bo, co, uo, k, path, conflicts); ok {
			out = append(out, jsonx.Member{Key: k, Value: v})
		}
	}
	return &jsonx.Object{Members: out}
}

// rebaseMember is rebase of the member k of three objects: its value in
// the result, and whether the result has it.
func rebaseMember(bo, co, uo *jsonx.Object, k string, path []string, conflicts *[]string) (any, bool) {
	b, inB := bo.Get(k)
	c, inC := co.Get(k)
	u, inU := uo.Get(k)
	at := append(path[:len(path):len(path)], k)
	switch {
	case inB == inC && equalJSON(b, c): // the child left it alone
		return u, inU
	case inB && inC && inU:
		return rebase(b, c, u, at, conflicts), true
	}
	// Added or deleted by the child, or gone from cur.
	if differs(inU, u, inB, b) && differs(inU, u, inC, c) {
		*conflicts = append(*conflicts, pointer(at))
	}
	return c, inC
}

// unionKeys returns the keys of the objects, sorted, each once.
func unionKeys(objs ...*jsonx.Object) []string {
	var keys []string
	for _, o := range objs {
		for _, e := range o.Members {
			keys = append(keys, e.Key)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// differs reports whether a member that has value x when inX differs
// from one that has value y when inY: one is absent and the other is
// not, or both are present with different values.
func differs(inX bool, x any, inY bool, y any) bool {
	return inX != inY || inX && !equalJSON(x, y)
}

// equalJSON reports whether two values are the same JSON, numbers
// compared as written (1 and 1.0 differ: the three-way merge only needs
// to know whether a value was touched).
func equalJSON(a, b any) bool {
	if jsonx.Same(a, b) {
		return true
	}
	switch a := a.(type) {
	case *jsonx.Object:
		bo, ok := b.(*jsonx.Object)
		return ok && slices.EqualFunc(a.Members, bo.Members, func(x, y jsonx.Member) bool {
			return x.Key == y.Key && equalJSON(x.Value, y.Value)
		})
	case []any:
		ba, ok := b.([]any)
		return ok && slices.EqualFunc(a, ba, equalJSON)
	}
	return false
}
