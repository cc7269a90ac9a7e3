package storage_test

import (
	"slices"
	"testing"

	"github.com/memlayer/memlayer/storage"
)

func ranked(id string, seq int64, score float64, vec ...float32) storage.Ranked {
	return storage.Ranked{Hit: storage.Hit{ID: id, Score: score}, Seq: seq, Vector: vec}
}

func ids(rs []storage.Ranked) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

// TestRankByVectorAndFuse: cosine order over distinct documents of the
// right length; fusion sums 1/(RRFK+rank) and breaks ties newest first.
func TestRankByVectorAndFuse(t *testing.T) {
	text := []storage.Ranked{ranked("a", 1, 9, 1, 0), ranked("b", 2, 5, 0, 1), ranked("short", 3, 4, 1)}
	recent := []storage.Ranked{ranked("c", 4, 0, 0.7, 0.7), ranked("b", 2, 0, 0, 1)}
	dense := storage.RankByVector([]float32{0, 1}, text, recent)
	if got := ids(dense); !slices.Equal(got, []string{"b", "c", "a"}) {
		t.Errorf("RankByVector = %v, want [b c a] (distinct, no vector of another length)", got)
	}
	fused := storage.Fuse(text, dense)
	// a: 1/61 + 1/63; b: 1/62 + 1/61; short: 1/63; c: 1/62.
	if got := ids(fused); !slices.Equal(got, []string{"b", "a", "c", "short"}) {
		t.Errorf("Fuse = %v, want [b a c short]", got)
	}
	tie := storage.Fuse([]storage.Ranked{ranked("old", 1, 0)}, []storage.Ranked{ranked("new", 2, 0)})
	if got := ids(tie); !slices.Equal(got, []string{"new", "old"}) {
		t.Errorf("tie = %v, want newest first", got)
	}
	if hits := storage.TopHits(fused, 2); len(hits) != 2 || hits[0].ID != "b" {
		t.Errorf("TopHits = %+v", hits)
	}
	if storage.TopHits(nil, 3) != nil {
		t.Error("TopHits of nothing is not nil")
	}
}
