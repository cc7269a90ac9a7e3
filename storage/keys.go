package storage

import (
	"fmt"
	"strings"
)

// Escape encodes one part of a key so that it contains no '/', is never
// "." or "..", and holds only printable ASCII: bytes outside
// [A-Za-z0-9._-] become %XX, a part made only of dots has its dots encoded,
// and the empty part becomes "%". Escape is injective, so two different
// parts never share an escaped form, and [Unescape] reverses it.
func Escape(part string) string {
	if part == "" {
		return "%"
	}
	allDots := strings.Trim(part, ".") == ""
	if !allDots && strings.Trim(part, unreservedBytes) == "" {
		return part
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(part) * 3)
	for i := 0; i < len(part); i++ {
		c := part[i]
		if unreserved(c) && !(allDots && c == '.') {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// Unescape reverses [Escape]. It fails with an error that is
// [ErrInvalidKey] on text Escape cannot produce (a bad or non-canonical
// escape such as "%2f" or "%41", a raw byte Escape would have encoded, "",
// "." or ".."), so every accepted part has exactly one escaped form and two
// different stored parts never decode to the same value.
func Unescape(s string) (string, error) {
	out, err := decodePercent(s)
	if err != nil {
		return "", err
	}
	if Escape(out) != s {
		return "", fmt.Errorf("storage: %s is not an escaped key part: %w", Quote(s), ErrInvalidKey)
	}
	return out, nil
}

// decodePercent decodes the %XX escapes of s, and "%" to the empty
// part. It checks only that each escape is well formed; [Unescape] checks
// that s is the one escaped form of the result.
func decodePercent(s string) (string, error) {
	switch {
	case !strings.Contains(s, "%"):
		return s, nil
	case s == "%":
		return "", nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) || unhex(s[i+1]) < 0 || unhex(s[i+2]) < 0 {
			return "", fmt.Errorf("storage: bad escape in %s: %w", Quote(s), ErrInvalidKey)
		}
		b.WriteByte(byte(unhex(s[i+1])<<4 | unhex(s[i+2])))
		i += 2
	}
	return b.String(), nil
}

// unreservedBytes are the bytes Escape keeps as they are.
const unreservedBytes = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"

func unreserved(c byte) bool {
	return strings.IndexByte(unreservedBytes, c) >= 0
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}

// LayerPrefix is the prefix of every key of one layer in one scope:
// "layers/{layerID}/{scopeKey}/". A typed scope key (see [ScopeKind],
// built by [ThreadScope] and the others, as layer.Env.ScopeKey returns
// them) is the key's part as it is: it holds a ':', which no escaped part
// does. Any other scope key is escaped: that is the layout of stored
// data from before scope keys were typed (see [LegacyLayerPrefix]), so a
// typed key never names an untyped one's records.
func LayerPrefix(layerID, scopeKey string) string {
	if _, ok := ParseScopeKey(scopeKey); ok {
		return "layers/" + Escape(layerID) + "/" + scopeKey + "/"
	}
	return LegacyLayerPrefix(layerID, scopeKey)
}

// LayerKey is the key of one named value of a layer in a scope:
// "layers/{layerID}/{scopeKey}/{name}", the layer ID and the name
// escaped, the scope key as [LayerPrefix] writes it.
func LayerKey(layerID, scopeKey, name string) string {
	return LayerPrefix(layerID, scopeKey) + Escape(name)
}

// LegacyLayerPrefix is the prefix of a layer's records in an untyped
// scope key, the layout of memlayer before scope keys were typed:
// "layers/{layerID}/{scopeKey}/" with both parts escaped, whatever
// scopeKey holds. It is what migration and erase read old data by.
func LegacyLayerPrefix(layerID, scopeKey string) string {
	return "layers/" + Escape(layerID) + "/" + Escape(scopeKey) + "/"
}

// ScopeKind says whose memory a typed scope key names. Kinds never share
// keys: no thread ID gives a resource's key, no resource ID a thread's.
type ScopeKind string

// The kinds of typed scope keys. A key is the kind, ':', then its parts,
// each escaped and joined by ':' (see [ScopeKeyOf]).
const (
	// KindThread is a thread's own memory: "thread:{thread}", or for a
	// child agent's thread "thread:{root thread}:{child thread}", where
	// the root is the thread of the top-level run that spawned it.
	KindThread ScopeKind = "thread"
	// KindResource is a resource's (a user's, a project's) memory,
	// shared by its threads: "resource:{resource}".
	KindResource ScopeKind = "resource"
	// KindAnonymous is the resource-scoped memory of a thread that runs
	// without a resource: "anon:{thread}" (or "anon:{root}:{child}").
	// It belongs to the thread, and no resource ID can name it.
	KindAnonymous ScopeKind = "anon"
	// KindGlobal is memory shared by every run: "global:".
	KindGlobal ScopeKind = "global"
	// KindExecution is one run's memory: "execution:{execution ID}".
	KindExecution ScopeKind = "execution"
)

// ScopeKeyParts is a typed scope key taken apart by [ParseScopeKey].
type ScopeKeyParts struct {
	Kind ScopeKind
	// ID is the thread, resource or execution ID; empty for KindGlobal.
	ID string
	// Child is, for a child agent's thread (KindThread, KindAnonymous),
	// the child's thread ID; ID is then its root thread. Empty otherwise.
	Child string
}

// GlobalScope is the scope key of memory shared by every run.
const GlobalScope = string(KindGlobal) + ":"

// ThreadScope returns the scope key of a thread's own memory.
func ThreadScope(threadID string) string {
	return ScopeKeyOf(ScopeKeyParts{Kind: KindThread, ID: threadID})
}

// ResourceScope returns the scope key of a resource's memory.
func ResourceScope(resourceID string) string {
	return ScopeKeyOf(ScopeKeyParts{Kind: KindResource, ID: resourceID})
}

// AnonymousScope returns the scope key of the resource-scoped memory of a
// thread that has no resource.
func AnonymousScope(threadID string) string {
	return ScopeKeyOf(ScopeKeyParts{Kind: KindAnonymous, ID: threadID})
}

// ExecutionScope returns the scope key of one run's memory.
func ExecutionScope(executionID string) string {
	return ScopeKeyOf(ScopeKeyParts{Kind: KindExecution, ID: executionID})
}

// ScopeKeyOf builds the typed scope key of p. Every ScopeKeyParts maps to
// its own key, which [ParseScopeKey] takes apart again; Child is kept
// only for KindThread and KindAnonymous, ID is dropped for KindGlobal.
func ScopeKeyOf(p ScopeKeyParts) string {
	switch p.Kind {
	case KindGlobal:
		return GlobalScope
	case KindThread, KindAnonymous:
		if p.Child != "" {
			return string(p.Kind) + ":" + Escape(p.ID) + ":" + Escape(p.Child)
		}
	}
	return string(p.Kind) + ":" + Escape(p.ID)
}

// ParseScopeKey takes a typed scope key apart. ok is false for any string
// [ScopeKeyOf] does not return, such as an untyped scope key of stored
// data from before scope keys were typed (a bare thread or resource ID,
// "__global__").
func ParseScopeKey(key string) (p ScopeKeyParts, ok bool) {
	kind, rest, found := strings.Cut(key, ":")
	if !found {
		return p, false
	}
	p.Kind = ScopeKind(kind)
	switch p.Kind {
	case KindGlobal:
		return p, rest == ""
	case KindResource, KindExecution:
		// One part: Unescape refuses a ':', which Escape encodes.
		var err error
		p.ID, err = Unescape(rest)
		ok = err == nil
	case KindThread, KindAnonymous:
		p.ID, p.Child, ok = threadParts(rest)
	}
	if !ok {
		return ScopeKeyParts{}, false
	}
	return p, true
}

// threadParts takes apart the parts of a thread's scope key: its thread
// ID, or its root and child thread IDs.
func threadParts(rest string) (id, child string, ok bool) {
	id, child, two := strings.Cut(rest, ":")
	id, err := Unescape(id)
	if err != nil {
		return "", "", false
	}
	if !two {
		return id, "", true
	}
	// A child's thread ID is never empty (ScopeKeyOf drops it).
	child, err = Unescape(child)
	return id, child, err == nil && child != ""
}

// ThreadPrefix is the prefix of every key of one thread's checkpoints:
// "threads/{threadID}/".
func ThreadPrefix(threadID string) string {
	return "threads/" + Escape(threadID) + "/"
}

// ThreadKey is the key of one named value of a thread, such as its
// checkpoint: "threads/{threadID}/{name}", every part escaped.
func ThreadKey(threadID, name string) string {
	return ThreadPrefix(threadID) + Escape(name)
}

// ResourcePrefix is the prefix of the records a resource keeps apart
// from any layer or thread, such as the list of its threads:
// "resources/{resourceID}/".
func ResourcePrefix(resourceID string) string {
	return "resources/" + Escape(resourceID) + "/"
}

// ResourceKey is the key of one named record of a resource:
// "resources/{resourceID}/{name}", every part escaped.
func ResourceKey(resourceID, name string) string {
	return ResourcePrefix(resourceID) + Escape(name)
}
