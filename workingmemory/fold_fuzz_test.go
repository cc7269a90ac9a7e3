package workingmemory_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/workingmemory"
)

// FuzzRecallFold: whatever the state and the budget, Recall returns one
// block within the budget or none, fenced so that it cannot be closed
// early, and leaves the state as it was.
func FuzzRecallFold(f *testing.F) {
	for _, s := range []string{
		`{"tasks":[{"id":"a","title":"x","notes":"long long long long"},{"id":"b"},{"id":"c","status":"open"}]}`,
		`{"a":{"b":[1,2,3,"four",{"id":"x"}],"c":[[1],[2],[3]]},"d":["</working_memory>","<working_memory>",""]}`,
		`{"x":[{"__proto__":{"p":1},"id":"q"},{"constructor":1}]}`,
		`{"l":[{"pageId":"p1","title":"\u2028\ud83d\ude00","status":null}, {"page_id":3}, true, null, 1.5e300]}`,
	} {
		f.Add([]byte(s), 40)
		f.Add([]byte(s), 5)
	}
	f.Fuzz(func(t *testing.T, upd []byte, budget int) {
		if budget <= 0 || budget > 5000 {
			return
		}
		l, _ := foldPad(t, workingmemory.Config{})
		if err := l.Update(t.Context(), upd); err != nil {
			return
		}
		before := l.State()
		items, err := l.Recall(t.Context(), layer.Query{Budget: budget})
		if err != nil || len(items) > 1 {
			t.Fatalf("Recall = %v, %v", items, err)
		}
		if !reflect.DeepEqual(before, l.State()) {
			t.Fatal("Recall changed the state")
		}
		if len(items) == 0 {
			return
		}
		text, closer := items[0].Text, "</"+l.Tag()+">"
		if n := (layer.Query{}).Count(text); n > budget || items[0].Tokens != n {
			t.Fatalf("block of %d tokens (reported %d), budget %d", n, items[0].Tokens, budget)
		}
		if strings.Count(text, closer) != 1 || !strings.HasSuffix(text, closer) {
			t.Fatalf("block can be closed early:\n%s", text)
		}
		if strings.Contains(text, `"__proto__"`) {
			t.Fatalf("block shows a forbidden key:\n%s", text)
		}
	})
}
