package thread_test

import (
	"fmt"
	"testing"

	"github.com/memlayer/memlayer/inspect"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/sqlite"
	"github.com/memlayer/memlayer/thread"
)

// BenchmarkCatalogList lists the newest 20 threads of one resource in a
// store of 20 resources with 50 threads each, through the resource's
// list (Catalog.List) and, as the baseline, through the scan of every
// thread the operator API does (inspect.Inspector.Threads).
func BenchmarkCatalogList(b *testing.B) {
	sq, err := sqlite.Open(b.Context(), sqlite.Config{Path: b.TempDir() + "/bench.db"})
	if err != nil {
		b.Fatal(err)
	}
	defer sq.Close()
	for _, be := range []struct {
		name string
		st   storage.Store
	}{{"memory", storage.NewMemoryStore()}, {"sqlite", sq}} {
		st := be.st
		ctx := b.Context()
		for r := range 20 {
			for i := range 50 {
				w := thread.NewWriter(st, fmt.Sprintf("r%d-t%d", r, i), nil)
				err := w.Write(ctx, thread.Step{ResourceID: fmt.Sprint("r", r), Messages: []thread.Message{{Role: thread.RoleUser, Text: "hello there"}}})
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		c := thread.Catalog{Store: st}
		b.Run(be.name+"/catalog", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if p, err := c.List(ctx, "r7", thread.ListQuery{Limit: 20}); err != nil || len(p.Threads) != 20 {
					b.Fatal(err)
				}
			}
		})
		b.Run(be.name+"/scan", func(b *testing.B) {
			b.ReportAllocs()
			in := inspect.Inspector{Store: st}
			for b.Loop() {
				if ts, err := in.Threads(ctx, inspect.ThreadQuery{ResourceID: "r7", Limit: 20}); err != nil || len(ts) != 20 {
					b.Fatal(err)
				}
			}
		})
	}
}
