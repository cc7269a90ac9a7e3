package episodicmemory

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// FuzzEpisodic15_DecodeLog feeds arbitrary bytes to every decoder of the
// stored log and to a run's Init (as the head, a segment and a digest
// record of a real log). Nothing panics; a record either decodes or fails
// with ErrCorrupt or ErrVersion; a decoded record encodes and decodes to
// the same; Init either fails with ErrVersion or loads (quarantining
// what it cannot read) and the layer still records and recalls.
func FuzzEpisodic15_DecodeLog(f *testing.F) {
	for _, s := range []string{
		`{"version":1,"next":3,"digested":1,"dropped":0,"base":0,"lastDigest":0}`,
		`{"version":1,"seq":1,"episodes":[{"ref":"c","kind":"tool","step":0,"time":"2026-01-01T00:00:00Z","result":"x"}]}`,
		`{"version":1,"from":0,"to":1,"prev":-1,"digests":[{"ref":"c","step":0,"time":"2026-01-01T00:00:00Z","text":"[c]"}]}`,
		`{"version":1,"digests":[],"episodes":[{"ref":"turn-1","kind":"turn","step":2,"time":"2026-01-01T00:00:00Z","size":9,"result":"ab"}]}`,
		`{"version":2}`, `{}`, `[]`, ``, `{"version":1,"next":-1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ok := func(err error) {
			if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
				t.Fatalf("error %v is neither ErrCorrupt nor ErrVersion", err)
			}
		}
		h, err := decodeHead(data)
		if ok(err); err == nil {
			if h2, err := decodeHead(encode(h)); err != nil || h2 != h {
				t.Fatalf("head round trip: %+v → %+v, %v", h, h2, err)
			}
		}
		seg, err := decodeSegment(data, 1)
		if ok(err); err == nil {
			if _, err := decodeSegment(encode(seg), 1); err != nil {
				t.Fatalf("segment round trip: %v", err)
			}
		}
		r, err := decodeDigestRecord(data, 0)
		if ok(err); err == nil {
			if _, err := decodeDigestRecord(encode(r), 0); err != nil {
				t.Fatalf("digest record round trip: %v", err)
			}
		}
		s, err := decodeSnapshot(data)
		if ok(err); err == nil {
			tmpl, _ := New(Config{})
			b, err := tmpl.Init(context.Background(), layer.Env{ThreadID: "t"}) // no store: an in-memory log
			if err != nil {
				t.Fatal(err)
			}
			l := b.(*Layer)
			if err := l.Restore(context.Background(), data); err != nil {
				t.Fatalf("Restore of a decodable snapshot: %v", err)
			}
			snap, _ := l.Snapshot(context.Background())
			if _, err := decodeSnapshot(snap); err != nil {
				t.Fatalf("snapshot of %+v does not decode: %v", s, err)
			}
		}
		// The bytes as each record of a stored log.
		for _, name := range []string{"head", segName(1), digestName(0)} {
			ctx := context.Background()
			st := storage.NewMemoryStore()
			tmpl, _ := New(Config{CompactAfter: 1})
			env := layer.Env{ThreadID: "t", Store: st, Logger: slog.New(slog.DiscardHandler)}
			l0, err := tmpl.Init(ctx, env)
			if err != nil {
				t.Fatal(err)
			}
			for n := range 3 {
				if err := l0.(*Layer).Store(ctx, layer.Turn{Step: n, Results: []layer.ToolResult{{ToolCall: layer.ToolCall{ID: "c", Name: "x"}, Content: "{}"}}}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := st.Put(ctx, storage.LayerKey(DefaultStorageID, storage.ThreadScope("t"), name), data, storage.AnyVersion); err != nil {
				t.Fatal(err)
			}
			l, err := tmpl.Init(ctx, env)
			if err != nil {
				if !errors.Is(err, ErrVersion) {
					t.Fatalf("Init with %s = %q: %v", name, data, err)
				}
				continue
			}
			if err := l.(*Layer).Store(ctx, layer.Turn{Step: 9, Results: []layer.ToolResult{{ToolCall: layer.ToolCall{ID: "new", Name: "x"}, Content: "{}"}}}); err != nil {
				// With the store's index Init reads no digest record: a
				// newer one fails the first write, which reads the view.
				if errors.Is(err, ErrVersion) {
					continue
				}
				t.Fatalf("Store after loading %s = %q: %v", name, data, err)
			}
			if _, err := l.Recall(ctx, layer.Query{Text: "x"}); err != nil {
				t.Fatal(err)
			}
			var raw json.RawMessage
			if raw, err = l.(*Layer).Snapshot(ctx); err != nil || !json.Valid(raw) {
				t.Fatalf("Snapshot: %v", err)
			}
		}
	})
}
