package service_test

import (
	"fmt"
	"testing"

	"github.com/memlayer/memlayer/service"
	"github.com/memlayer/memlayer/storage"
)

// seeded returns a Memory on the in-memory store whose user "ada" has n
// facts.
func seeded(b *testing.B, n int) *service.Memory {
	b.Helper()
	mem, err := service.New(storage.NewMemoryStore(), service.Config{})
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if _, err := mem.Add(b.Context(), "ada", service.Memo{Text: fmt.Sprintf("Fact number %d is about topic t%d.", i, i)}); err != nil {
			b.Fatal(err)
		}
	}
	return mem
}

// BenchmarkAdd adds a new fact to a user who has 1,000: one bound
// layer, one route, one record, one index write per call.
func BenchmarkAdd(b *testing.B) {
	mem := seeded(b, 1000)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := mem.Add(b.Context(), "ada", service.Memo{Text: fmt.Sprintf("New fact %d on subject s%d.", i, i)}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkSearch searches a user's 1,000 facts for the 10 best.
func BenchmarkSearch(b *testing.B) {
	mem := seeded(b, 1000)
	b.ReportAllocs()
	for b.Loop() {
		hits, err := mem.Search(b.Context(), "ada", service.Query{Text: "topic t500", K: 10})
		if err != nil || len(hits) == 0 {
			b.Fatal(hits, err)
		}
	}
}

// BenchmarkGet gets one of a user's 1,000 facts by ID.
func BenchmarkGet(b *testing.B) {
	mem := seeded(b, 1000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := mem.Get(b.Context(), "ada", "f500"); err != nil {
			b.Fatal(err)
		}
	}
}
