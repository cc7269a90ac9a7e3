package episodicmemory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// fixed is a clock that does not move.
func fixed() time.Time { return time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) }

// bound returns a layer bound to thread in store.
func bound(t testing.TB, cfg episodicmemory.Config, store storage.Store, thread, resource string) *episodicmemory.Layer {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = fixed
	}
	tmpl, err := episodicmemory.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tmpl.Init(context.Background(), layer.Env{ThreadID: thread, ResourceID: resource, Store: store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	return l.(*episodicmemory.Layer)
}

// toolStep is a step that called one tool.
func toolStep(step int, id, tool, args, result string) layer.Turn {
	return layer.Turn{
		Step:      step,
		Query:     "q",
		ToolCalls: []layer.ToolCall{{ID: id, Name: tool, Arguments: args}},
		Results:   []layer.ToolResult{{ToolCall: layer.ToolCall{ID: id, Name: tool, Arguments: args}, Content: result, Duration: 3 * time.Millisecond}},
	}
}

// pageStep creates page n.
func pageStep(n int) layer.Turn {
	return toolStep(n, fmt.Sprintf("call-%d", n), "cms_createPage", fmt.Sprintf(`{"title":"Page %d"}`, n),
		fmt.Sprintf(`{"page":{"id":"page-%d","title":"Page %d","slug":"page-%d"}}`, n, n, n))
}

func recall(t testing.TB, l layer.Layer, text string) string {
	t.Helper()
	items, err := l.Recall(context.Background(), layer.Query{Text: text})
	if err != nil {
		t.Fatalf("Recall: %v", err)
	}
	if len(items) == 0 {
		return ""
	}
	return items[0].Text
}

func store(t testing.TB, l layer.Storer, turns ...layer.Turn) {
	t.Helper()
	for _, turn := range turns {
		if err := l.Store(context.Background(), turn); err != nil {
			t.Fatalf("Store(step %d): %v", turn.Step, err)
		}
	}
}

// pageNote matches the note that ends a page of the read tool.
var pageNote = regexp.MustCompile(`\n\[episodic_memory: bytes (\d+)-(\d+) of (\d+)(?:; read on with \{.*\})?\]$`)

// readAll calls the read tool for ref until it has every page, and
// returns the pages joined and how many calls it took.
func readAll(t testing.TB, call func(context.Context, json.RawMessage) (string, error), ref string) (string, int) {
	t.Helper()
	var out string
	for n := 1; ; n++ {
		args, _ := json.Marshal(map[string]any{"ref": ref, "offset": len(out)})
		page, err := call(context.Background(), args)
		if err != nil {
			t.Fatalf("read %s at %d: %v", ref, len(out), err)
		}
		m := pageNote.FindStringSubmatchIndex(page)
		if m == nil {
			return out + page, n
		}
		out += page[:m[0]]
		if end, _ := strconv.Atoi(page[m[4]:m[5]]); end == len(out) && page[m[4]:m[5]] == page[m[6]:m[7]] {
			return out, n
		}
	}
}

// setBudget sets a Query's budget to n tokens, whatever its numeric type.
func setBudget[B int | float64](p *B, n int) { *p = B(n) }

// turnStep is the step that ends a turn with an answer.
func turnStep(step int, query, answer string) layer.Turn {
	return layer.Turn{Step: step, Query: query, Response: answer}
}
