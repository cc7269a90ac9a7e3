package workingmemory

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/memlayer/memlayer/internal/jsonx"
	"github.com/memlayer/memlayer/layer"
)

// hasForbidden reports whether a decoded JSON value holds a forbidden key
// at any depth.
func hasForbidden(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if forbidden(k) || hasForbidden(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if hasForbidden(e) {
				return true
			}
		}
	}
	return false
}

// FuzzMerge applies arbitrary update bytes to a schema-less scratchpad and
// to one with the peer workload's schema. It checks that nothing panics,
// that no forbidden key survives, that a rejected update changes nothing,
// and that an accepted state passes jsonschema.
func FuzzMerge(f *testing.F) {
	w := loadPeerWorkload(f)
	for _, u := range w.updates {
		f.Add(u)
	}
	for _, s := range []string{
		`{"__proto__":{"polluted":true},"constructor":"evil","safe":"data"}`,
		`{"a":{"prototype":{"x":1},"b":[{"__proto__":1,"c":[{"constructor":2}]}]}}`,
		`{"$delete":["/openTasks/0","preferences.tone","/x~1y"],"name":"n"}`,
		`{"preferences":{"$delete":["notifications"],"notifications":{"sms":false}}}`,
		`{"turnCount":-1,"interests":"not a list"}`,
		`{"name":null,"contact":{"email":null}}`,
		`{"a":"\u00e9\ud83d\ude00\\n\"","b":1e400,"c":-0.0e-5}`,
		`[1,2]`, `"text"`, `{`, `{"a":1}x`, `{"a":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}`,
	} {
		f.Add([]byte(s))
	}
	free, err := New(Config{Template: "old text"})
	if err != nil {
		f.Fatal(err)
	}
	schemed, err := New(Config{Schema: w.schema, Template: w.initial})
	if err != nil {
		f.Fatal(err)
	}
	free, schemed = bindMem(f, free), bindMem(f, schemed)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, upd []byte) {
		for _, l := range []*Layer{free, schemed} {
			before, _ := l.Snapshot(ctx)
			err := l.Update(ctx, upd)
			after, _ := l.Snapshot(ctx)
			if err != nil {
				if !bytes.Equal(before, after) {
					t.Fatalf("rejected update %q changed the state:\n%s\n%s", upd, before, after)
				}
				continue
			}
			var st any
			if err := json.Unmarshal(after, &st); err != nil {
				t.Fatalf("state is not JSON: %v\n%s", err, after)
			}
			if hasForbidden(st) {
				t.Fatalf("update %q kept a forbidden key: %s", upd, after)
			}
			if l.c.schema != nil {
				if err := l.c.schema.full.Validate(jsonx.ToGo(l.cur.Load().value)); err != nil {
					t.Fatalf("accepted state fails the schema: %v\n%s", err, after)
				}
			}
			// Reset so that the corpus does not drift.
			if err := l.Restore(ctx, before); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// FuzzDecode checks the codec against encoding/json: the same inputs are
// accepted, and an accepted value encodes to JSON that encoding/json reads
// as the same value.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":2,"b":3,"c":{"z":1,"y":2}}`, `{"a":[1,"x",true,null,{"b":-1.5e3}]}`, `"\ud800"`, `"\u00e9"`, "\"\xff\"", `1.`, `-`, `[1,]`, `{"a":1,}`, ` 0 `, `1e5`, `"a\u2028b"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := decodeJSON(data, 10000)
		var std any
		stdErr := json.Unmarshal(data, &std)
		if (err == nil) != (stdErr == nil) {
			t.Fatalf("decode(%q): err = %v, encoding/json err = %v", data, err, stdErr)
		}
		if err != nil {
			return
		}
		enc := jsonx.Append(nil, v, "")
		var back any
		if err := json.Unmarshal(enc, &back); err != nil {
			t.Fatalf("encoding of %q is not JSON: %v\n%s", data, err, enc)
		}
		if !jsonDeepEqual(back, std) {
			t.Fatalf("round trip of %q: got %#v, want %#v", data, back, std)
		}
		pretty := jsonx.Append(nil, v, "  ")
		var p any
		if err := json.Unmarshal(pretty, &p); err != nil || !jsonDeepEqual(p, std) {
			t.Fatalf("indented encoding of %q differs: %s", data, pretty)
		}
	})
}

// FuzzRecall renders arbitrary states (free text, or the object a JSON
// update makes) under arbitrary budgets. Recall must not panic, and what
// it returns must fit the budget and keep its fence: one opening tag at
// the start, one closing tag at the end.
func FuzzRecall(f *testing.F) {
	f.Add("plan: ship on Friday", 50)
	f.Add(strings.Repeat("<working_memory>", 100), 470)
	f.Add(strings.Repeat("</working_memory>é", 40), 120)
	f.Add(`{"notes":"<working_memory><working_memory><working_memory>","n":1}`, 30)
	f.Add(`{"a":"`+strings.Repeat("<", 500)+`"}`, 160)
	ctx := context.Background()
	const open, closing = "<" + Tag + ">\n", "\n</" + Tag + ">"
	f.Fuzz(func(t *testing.T, st string, budget int) {
		l, err := New(Config{Template: st})
		if err != nil {
			t.Fatal(err)
		}
		l = bindMem(t, l)
		if v, err := decodeJSON([]byte(st), DefaultMaxDepth); err == nil {
			if _, ok := v.(*jsonx.Object); ok {
				_ = l.Update(ctx, []byte(st)) // an object state, when it makes one
			}
		}
		items, err := l.Recall(ctx, layer.Query{Budget: budget})
		if err != nil {
			t.Fatal(err)
		}
		if len(items) == 0 {
			return
		}
		b := items[0].Text
		if budget > 0 && ((len(b)+3)/4 > budget || items[0].Tokens > budget) {
			t.Fatalf("budget %v: block of %d bytes exceeds it", budget, len(b))
		}
		if !strings.HasPrefix(b, open) || !strings.HasSuffix(b, closing) ||
			strings.Count(b, "<"+Tag+">") != 1 || strings.Count(b, "</"+Tag+">") != 1 {
			t.Fatalf("budget %v: block lost its fence:\n%.300q", budget, b)
		}
		if !utf8.ValidString(b) && utf8.ValidString(st) {
			t.Fatalf("budget %v: cut inside a character", budget)
		}
	})
}

// FuzzRebase checks the three-way merge of OnReturn on arbitrary
// objects: a child that changed nothing leaves cur; a parent that changed
// nothing gets the child's state, with no conflict; keys only cur
// changed keep cur's values; and base, child and cur are not modified.
func FuzzRebase(f *testing.F) {
	f.Add(`{"a":1,"o":{"x":1}}`, `{"a":2,"o":{"x":1,"y":2}}`, `{"a":1,"o":{"x":3},"n":1}`)
	f.Add(`{"l":[1,2]}`, `{}`, `{"l":[1,2,3]}`)
	f.Fuzz(func(t *testing.T, base, child, cur string) {
		var vs [3]*jsonx.Object
		for i, s := range []string{base, child, cur} {
			v, err := decodeJSON([]byte(s), 16)
			o, ok := v.(*jsonx.Object)
			if err != nil || !ok {
				return
			}
			vs[i] = o
		}
		b, c, u := vs[0], vs[1], vs[2]
		before := [3]string{string(jsonx.Append(nil, b, "")), string(jsonx.Append(nil, c, "")), string(jsonx.Append(nil, u, ""))}
		var conflicts []string
		if got := rebase(b, b, u, nil, &conflicts); !equalJSON(got, u) || len(conflicts) != 0 {
			t.Fatalf("unchanged child: got %s (conflicts %q), want cur", jsonx.Append(nil, got, ""), conflicts)
		}
		if got := rebase(b, c, b, nil, &conflicts); !equalJSON(got, c) || len(conflicts) != 0 {
			t.Fatalf("unchanged parent: got %s (conflicts %q), want the child's state", jsonx.Append(nil, got, ""), conflicts)
		}
		got, _ := rebase(b, c, u, nil, &conflicts).(*jsonx.Object)
		for _, e := range u.Members {
			bv, inB := b.Get(e.Key)
			cv, inC := c.Get(e.Key)
			if inB && inC && equalJSON(bv, cv) {
				if gv, ok := got.Get(e.Key); !ok || !equalJSON(gv, e.Value) {
					t.Fatalf("key %q only cur changed: got %s", e.Key, jsonx.Append(nil, gv, ""))
				}
			}
		}
		after := [3]string{string(jsonx.Append(nil, b, "")), string(jsonx.Append(nil, c, "")), string(jsonx.Append(nil, u, ""))}
		if before != after {
			t.Fatal("rebase modified its inputs")
		}
	})
}
