package jsonx

import (
	"encoding/json"
	"slices"
	"strings"
)

// A JSON value in the tree form is *Object (members sorted by key, keys
// unique), []any, string, json.Number, bool or nil; [ToGo] converts to the
// map[string]any form that encoding/json and jsonschema use. Sorted
// members make decode, merge, validate and encode a series of linear
// merge-joins with no map hashing, iteration or key sorting, and objects
// encode with sorted keys, so equal values encode to equal bytes.

// Object is a JSON object: members sorted by key, keys unique. Objects in
// a tree are immutable once built: build a new one instead.
type Object struct {
	Members []Member
}

// Member is one member of an Object.
type Member struct {
	Key   string
	Value any
}

// Get returns the value of key.
func (o *Object) Get(key string) (any, bool) {
	if o == nil {
		return nil, false
	}
	i, ok := o.Find(key)
	if !ok {
		return nil, false
	}
	return o.Members[i].Value, true
}

// Find returns the index of key's member, or where it would be inserted
// and false.
func (o *Object) Find(key string) (int, bool) {
	return slices.BinarySearchFunc(o.Members, key, func(m Member, key string) int { return strings.Compare(m.Key, key) })
}

// SortMembers sorts members by key in place (stable, so that of duplicate
// keys the last one wins) and drops duplicates, returning the prefix of
// ms that holds the result.
func SortMembers(ms []Member) []Member {
	if sortedUnique(ms) {
		return ms
	}
	slices.SortStableFunc(ms, func(a, b Member) int { return strings.Compare(a.Key, b.Key) })
	out := ms[:0]
	for i, e := range ms {
		if i+1 < len(ms) && ms[i+1].Key == e.Key {
			continue // a later duplicate wins
		}
		out = append(out, e)
	}
	clear(ms[len(out):])
	return out
}

func sortedUnique(ms []Member) bool {
	for i := 1; i < len(ms); i++ {
		if ms[i-1].Key >= ms[i].Key {
			return false
		}
	}
	return true
}

// ToGo returns v in the form encoding/json decodes to with UseNumber:
// objects become map[string]any. The result shares no map or slice with
// v.
func ToGo(v any) any {
	switch v := v.(type) {
	case *Object:
		m := make(map[string]any, len(v.Members))
		for _, e := range v.Members {
			m[e.Key] = ToGo(e.Value)
		}
		return m
	case []any:
		a := make([]any, len(v))
		for i, e := range v {
			a[i] = ToGo(e)
		}
		return a
	default:
		return v
	}
}

// Same reports whether a and b are the same value in the sense that
// matters for reusing work: the same object or array (trees share
// unchanged subtrees), or equal scalars.
func Same(a, b any) bool {
	switch a := a.(type) {
	case []any:
		ba, ok := b.([]any)
		return ok && len(a) == len(ba) && (len(a) == 0 || &a[0] == &ba[0])
	case *Object, string, json.Number, bool, nil:
		return a == b // comparable: the same type and pointer or value
	}
	return false
}
