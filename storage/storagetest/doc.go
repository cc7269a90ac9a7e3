// Package storagetest is the conformance suite every [storage.Store]
// backend must pass, in the manner of testing/fstest and testing/slogtest.
//
// A backend's test calls [Run] (or [RunWith], to supply the optional
// hooks of [Options], such as Wipe) with a constructor that returns a
// fresh, empty store for each subtest:
//
//	func TestConformance(t *testing.T) {
//		storagetest.Run(t, func(t *testing.T) storage.Store {
//			s, err := mybackend.Open(t.Context(), t.TempDir()+"/db")
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// # What is checked
//
// Every rule of the [storage.Store] documentation, each in its own named
// subtest so a failure says which rule broke:
//
//   - CRUD: a value written is read back byte for byte with the version Put
//     returned; versions are positive and change with every write.
//   - Compare-and-swap: [storage.NoVersion] creates only, a stale version is
//     [storage.ErrConflict] and leaves the stored value intact,
//     [storage.AnyVersion] writes unconditionally; a version named for a
//     missing key is a conflict; of many concurrent creates exactly one wins.
//   - Delete: unconditional delete of a missing key is not an error; a
//     conditional delete of a missing key is [storage.ErrNotFound]; a stale
//     version is a conflict and deletes nothing.
//   - List: sorted, exact prefix match (a prefix "a/b" does not match the
//     sibling "a/bc/x"), metacharacters of SQL LIKE and Redis glob patterns
//     (% _ * ? [ ] \) are literal, and [storage.LayerPrefix] of one scope
//     never lists another scope's keys.
//   - Hostile IDs: layer, scope and name parts holding '/', "..", NUL,
//     newline, '%', unicode or glob syntax, built through
//     [storage.LayerKey], reach only their own keys.
//   - Keys rejected by [storage.ValidateKey] (empty, NUL, invalid UTF-8, too
//     long) are refused with [storage.ErrInvalidKey] and store nothing;
//     keys of exactly [storage.MaxKeyLen] bytes are accepted.
//   - Values: empty, every byte value, and 1.5 MiB values round-trip; the
//     slice passed to Put and the slice returned by Get are copies.
//   - Context: a cancelled or expired context fails every operation with an
//     error wrapping [context.Canceled] or [context.DeadlineExceeded], and a
//     write so refused changes nothing.
//   - Concurrency: 50 goroutines doing read-modify-write increments with
//     retry on conflict lose no update.
//   - Versions (no ABA): a key deleted (conditionally or not) and created
//     again never gets a version it had before, so a Put or Delete naming
//     an old version conflicts; over 40 delete-and-recreate rounds no
//     version repeats; and with [Options.Wipe], the same holds after the
//     backend is emptied behind the store's back ("restarted empty").
//   - Error messages name a 4 KB key through [storage.Quote] (shortened),
//     never whole.
//
// Errors are compared with [errors.Is] only, so a backend is free to wrap
// them with its own context.
//
// # Requirements on the constructor
//
// newStore must return an empty store that shares no keys with any store
// returned earlier (a fresh file, or a fresh key namespace on a shared
// server). It registers its own cleanup with t.Cleanup. The subtests run
// one after another; a store is used concurrently only by the concurrency
// subtests, which is what they test.
package storagetest
