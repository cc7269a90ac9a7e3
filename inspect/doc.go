// Package inspect is the operator API: it lists, reads, exports and
// erases what agents stored, from the store alone. It needs no layers and
// no model, and links no model library.
//
//	in := inspect.Inspector{Store: store}
//	threads, err := in.Threads(ctx, inspect.ThreadQuery{ResourceID: "user-7"})
//	if err != nil {
//		return err
//	}
//	erased, err := in.EraseResource(ctx, "user-7") // every record of the user
//
// It reads the key layout of package storage and the thread records of
// package thread. The command cmd/memlayer is built on it.
package inspect
