package storage

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Version numbers as understood by [Store.Put] and [Store.Delete].
const (
	// NoVersion asks Put to create the key: the write fails with
	// [ErrConflict] if the key already exists.
	NoVersion int64 = 0
	// AnyVersion asks Put or Delete to ignore the current version.
	AnyVersion int64 = -1
)

// Errors returned by every [Store]. Check them with [errors.Is]: backends
// wrap them with the operation and key.
var (
	// ErrNotFound means the key does not exist.
	ErrNotFound = errors.New("storage: not found")
	// ErrConflict means a conditional write lost a race: the stored
	// version is not the one the caller named. Read again and retry.
	ErrConflict = errors.New("storage: version conflict")
	// ErrClosed means the store was used after Close.
	ErrClosed = errors.New("storage: store closed")
	// ErrInvalidKey means a key is empty, too long or not valid UTF-8.
	ErrInvalidKey = errors.New("storage: invalid key")
	// ErrNotDurable means a write was, or may have been, applied but is
	// not known to be as durable as the store is configured to make it
	// (for example, Redis with WaitReplicas: too few replicas
	// acknowledged it, or the connection broke before they could). If
	// applied, it stands unless a failure loses it, so its outcome is
	// unknown: a read may find it and it may still be lost. Never report
	// such a write as applied on the strength of reading it back.
	// Backends wrap it in their own error (redis.ErrNotReplicated).
	ErrNotDurable = errors.New("storage: write not durable")
)

// MaxKeyLen is the longest key every backend accepts, in bytes.
const MaxKeyLen = 4096

// firstVersionRange bounds [FirstVersion]: 2^62 values, so that a key can
// be written 2^62 times more before its version could pass the int64
// range.
const firstVersionRange = 1 << 62

// FirstVersion returns the version a backend gives a key it creates (a
// Put to a key that does not exist): a random number in [1, 2^62] drawn
// from math/rand/v2's generator (ChaCha8, seeded from the operating
// system in each process). Each later write of the key adds one. See
// "Versions" in the package documentation for why versions start at
// random; every backend numbers its keys this way.
func FirstVersion() int64 {
	return rand.Int64N(firstVersionRange) + 1
}

// quoteMax is how many bytes of a key or ID [Quote] shows.
const quoteMax = 64

// Quote returns s quoted for an error or log message, as strconv.Quote
// does, but shortened when it is longer than 64 bytes: the first 64 bytes
// (cut before a UTF-8 sequence that would be split) quoted, followed by
// "…(N bytes)" with the length of s. Keys and IDs can be kilobytes long;
// every storage backend names keys in its errors this way, and other
// packages may do the same for thread, resource or entity IDs.
func Quote(s string) string {
	if len(s) <= quoteMax {
		return strconv.Quote(s)
	}
	cut := quoteMax
	for i := 1; i < utf8.UTFMax && !utf8.RuneStart(s[cut]); i++ {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// Item is a stored value with its version.
type Item struct {
	Key   string
	Value []byte
	// Version identifies this write of the key. It is opaque: compare it
	// for equality only, and pass it back to Put or Delete.
	Version int64
}

// Store is a versioned key-value store.
//
// Implementations must be safe for concurrent use by multiple goroutines
// and, for durable backends, by multiple processes sharing the same
// underlying database. Values handed to Put are not retained; values
// returned by Get belong to the caller.
//
// Cancelling ctx abandons the operation: a write either happened completely
// or not at all, and the error wraps ctx.Err().
type Store interface {
	// Get returns the value and version stored under key, or an error
	// that is ErrNotFound.
	Get(ctx context.Context, key string) (Item, error)

	// Put stores value under key if the stored version equals ifVersion
	// (NoVersion: the key must not exist; AnyVersion: unconditional) and
	// returns the new version, a positive number this key was never
	// given before (see "Versions" in the package documentation). A lost
	// race is an error that is ErrConflict and leaves the stored value as
	// it was.
	Put(ctx context.Context, key string, value []byte, ifVersion int64) (int64, error)

	// Delete removes key if its version equals ifVersion (AnyVersion:
	// unconditional). Deleting a missing key with AnyVersion is not an
	// error; with a specific version it is ErrNotFound.
	Delete(ctx context.Context, key string, ifVersion int64) error

	// List returns the keys that start with prefix, sorted. An empty
	// prefix lists every key.
	List(ctx context.Context, prefix string) ([]string, error)
}

// Purger is implemented by stores that can remove deleted bytes from
// their files, such as storage/sqlite. An erase (package inspect) calls
// Purge after deleting. Without it, an erase deletes the keys and the
// backend alone decides when their bytes leave its files.
type Purger interface {
	Purge(ctx context.Context) error
}

// ValidateKey reports whether key is acceptable to every backend: not
// empty, at most MaxKeyLen bytes, valid UTF-8, no NUL byte. Keys built with
// [LayerKey] and [ThreadKey] always are.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("storage: empty key: %w", ErrInvalidKey)
	case len(key) > MaxKeyLen:
		return fmt.Errorf("storage: key of %d bytes exceeds %d: %w", len(key), MaxKeyLen, ErrInvalidKey)
	case !utf8.ValidString(key) || strings.IndexByte(key, 0) >= 0:
		return fmt.Errorf("storage: key %s has a NUL byte or invalid UTF-8: %w", Quote(key), ErrInvalidKey)
	}
	return nil
}
