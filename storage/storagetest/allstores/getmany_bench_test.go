package allstores_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/storagetest/allstores"
)

// BenchmarkGetMany reads 40 stored records of 1 KB (a run's raw episodic
// segments) and 1 missing one on each backend: one Get per key, and one
// storage.GetMany.
func BenchmarkGetMany(b *testing.B) {
	ctx := context.Background()
	for _, be := range allstores.Backends("bench-getmany") {
		st := be.Open(b, 0)
		scope := storage.ResourceScope("user-1")
		keys := make([]string, 41)
		value := make([]byte, 1024)
		for i := range keys {
			keys[i] = storage.LayerKey("episodic", scope, fmt.Sprintf("seg/%d", i))
			if i < 40 {
				if _, err := st.Put(ctx, keys[i], value, storage.AnyVersion); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.Run(be.Name+"/Get", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, k := range keys {
					if _, err := st.Get(ctx, k); err != nil && !errors.Is(err, storage.ErrNotFound) {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run(be.Name+"/GetMany", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if items, err := storage.GetMany(ctx, st, keys); err != nil || len(items) != 40 {
					b.Fatalf("GetMany = %d items, %v", len(items), err)
				}
			}
		})
	}
}
