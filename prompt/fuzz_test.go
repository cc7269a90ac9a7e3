package prompt

import (
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt/fence"
)

// FuzzAllocate checks Allocate on arbitrary windows and up to three
// budgets: it rejects exactly the invalid inputs, and otherwise never
// returns a negative share, keeps capped layers within Max, gives every
// minimum when the minimums fit, and never hands out more than is
// available.
func FuzzAllocate(f *testing.F) {
	inf := layer.Unbounded
	f.Add(10000, 0, 0, uint8(2), 200, 1000, 300, 1000, 0, 0)
	f.Add(10000, 1000, 1000, uint8(3), 0, 0, 0, 0, 0, 0)
	f.Add(inf, 4000, 0, uint8(2), 100, 1000, 0, 0, 0, 0)
	f.Add(1, 0, 0, uint8(1), 0, 0, 0, 0, 0, 0)
	f.Add(1000, 0, 0, uint8(3), 700, 0, 800, 900, 0, inf)
	f.Add(-1, 0, 0, uint8(1), 0, 0, 0, 0, 0, 0)
	f.Add(inf-1, 0, 0, uint8(3), inf/2, 0, inf/4, inf/4, inf/8, inf/4)
	f.Add(inf, inf, 0, uint8(1), 0, 0, 0, 0, 0, 0)
	f.Add(inf, 0, 0, uint8(3), inf, inf, 1, 0, 0, 0)
	f.Fuzz(func(t *testing.T, total, reserve, system int, n uint8, min1, max1, min2, max2, min3, max3 int) {
		r := Request{Total: total, Reserve: reserve, System: system}
		bounds := [][2]int{{min1, max1}, {min2, max2}, {min3, max3}}
		for i := range int(n % 4) {
			r.Layers = append(r.Layers, layer.Spec{ID: fmt.Sprintf("l%d", i), Budget: layer.Budget{Min: bounds[i][0], Max: bounds[i][1]}})
		}
		a, err := Allocate(r)
		if invalid := invalidRequest(r); invalid != (err != nil) {
			t.Fatalf("Allocate(%+v) err = %v, want error: %v", r, err, invalid)
		}
		if err != nil {
			return
		}
		assertSane(t, r, a)
		sumMin := new(big.Int)
		for _, s := range r.Layers {
			sumMin.Add(sumMin, big.NewInt(int64(s.Budget.Min)))
		}
		if sumMin.Cmp(big.NewInt(int64(a.Available))) <= 0 {
			for _, s := range r.Layers {
				if a.Layers[s.ID] < s.Budget.Min {
					t.Errorf("layer %s = %d < Min %d though minimums fit", s.ID, a.Layers[s.ID], s.Budget.Min)
				}
			}
		}
	})
}

// invalidRequest reports whether Allocate must refuse r: a negative size
// or bound, Min above a set Max, or budgets (each layer's Max, or its Min
// when it has no cap) adding up past layer.Unbounded.
func invalidRequest(r Request) bool {
	for _, v := range []int{r.Total, r.Reserve, r.System} {
		if v < 0 {
			return true
		}
	}
	sum := new(big.Int)
	for _, s := range r.Layers {
		b := s.Budget
		if b.Min < 0 || b.Max < 0 {
			return true
		}
		most := b.Min
		if b.Max != 0 && b.Max != layer.Unbounded {
			if b.Min > b.Max {
				return true
			}
			most = b.Max
		}
		sum.Add(sum, big.NewInt(int64(most)))
	}
	return sum.Cmp(big.NewInt(int64(layer.Unbounded))) > 0
}

// messagesFrom decodes fuzz bytes into a conversation: each byte picks a
// message kind (human, AI text, AI tool calls, tool result) and a small
// ID, so calls and results pair, go missing, repeat and come out of order.
func messagesFrom(data []byte) []llms.MessageContent {
	var msgs []llms.MessageContent
	for i, b := range data {
		id := fmt.Sprintf("c%d", b>>4&7)
		text := strings.Repeat("w", int(b>>2&15)*3)
		switch b & 3 {
		case 0:
			msgs = append(msgs, human(fmt.Sprintf("h%d%s", i, text)))
		case 1:
			msgs = append(msgs, ai(fmt.Sprintf("a%d%s", i, text)))
		case 2:
			m := call(id)
			if b&0x80 != 0 { // a second call in the same message
				m.Parts = append(m.Parts, call(fmt.Sprintf("c%d", (b>>4&7)+1)).Parts...)
			}
			msgs = append(msgs, m)
		case 3:
			msgs = append(msgs, result(id, text))
		}
	}
	return msgs
}

func historyCost(msgs []llms.MessageContent) int {
	t := 0
	for _, m := range msgs {
		t += CountMessage(unit, m)
	}
	return t
}

// validCut reports whether msgs[i:] keeps every pair whole.
func validCut(msgs []llms.MessageContent, i int) bool {
	calls := map[string]bool{}
	for _, m := range msgs[:i] {
		for _, p := range m.Parts {
			if c, ok := p.(llms.ToolCall); ok {
				calls[c.ID] = true
			}
		}
	}
	for _, m := range msgs[i:] {
		for _, p := range m.Parts {
			if r, ok := p.(llms.ToolCallResponse); ok && calls[r.ToolCallID] {
				return false
			}
		}
	}
	return true
}

// FuzzProjectHistory checks that ProjectHistory never exceeds its cap,
// never splits a tool call from its result, keeps a suffix of the stripped
// conversation, and keeps the longest such suffix that fits.
func FuzzProjectHistory(f *testing.F) {
	f.Add([]byte{0, 2, 3, 1}, 100)
	f.Add([]byte{0, 0x12, 0x13, 0x23, 0x22, 0x33, 1, 0x92, 0x13, 0x23}, 40)
	f.Add([]byte{3, 2, 0x13, 0x12, 1, 1, 0}, 25)
	f.Add([]byte{0x3c, 0x2c, 0x23, 0x3f, 0x01}, layer.Unbounded)
	f.Add([]byte{0, 1}, -1)
	f.Fuzz(func(t *testing.T, data []byte, capTokens int) {
		msgs := messagesFrom(data)
		stripped := stripUnpaired(msgs)
		got := ProjectHistory(msgs, capTokens, unit)
		assertPaired(t, got)
		if c := historyCost(got); len(got) > 0 && c > capTokens {
			t.Fatalf("kept %v tokens > cap %v", c, capTokens)
		}
		start := len(stripped) - len(got)
		if start < 0 {
			t.Fatalf("kept %d messages of %d", len(got), len(stripped))
		}
		for i := range got {
			if label(got[i]) != label(stripped[start+i]) {
				t.Fatalf("result is not a suffix of the stripped conversation: %q vs %q", labels(got), labels(stripped))
			}
		}
		if !validCut(stripped, start) {
			t.Fatalf("cut at %d splits a pair: %q", start, labels(stripped))
		}
		for i := range start {
			if validCut(stripped, i) && historyCost(stripped[i:]) <= capTokens {
				t.Fatalf("suffix from %d fits (%v <= %v) but only %d messages kept", i, historyCost(stripped[i:]), capTokens, len(got))
			}
		}
	})
}

// FuzzProjectLayers checks that ProjectLayersWithin never exceeds its
// caps (the total, and every even-numbered layer's own), keeps items in
// the order given, and skips an item only when it did not fit.
func FuzzProjectLayers(f *testing.F) {
	f.Add([]byte{10, 200, 3, 7, 50}, 60, layer.Unbounded)
	f.Add([]byte{1, 1, 1}, 2, 1)
	f.Add([]byte{255, 0, 4}, layer.Unbounded, 100)
	f.Add([]byte{5}, -1, 0)
	f.Add([]byte{9, 9, 9, 9, 9, 9}, 30, 10)
	f.Fuzz(func(t *testing.T, sizes []byte, capTokens, perLayer int) {
		var in []layer.Recalled
		for i, s := range sizes {
			it := layer.Item{Text: strings.Repeat("x", int(s)), Tokens: int(s) % 3} // Tokens 0 means "count it"
			if n := len(in); n > 0 && s%4 == 0 && i%2 == 0 {
				in[n-1].Items = append(in[n-1].Items, it)
				continue
			}
			in = append(in, layer.Recalled{ID: fmt.Sprintf("l%d", i), Items: []layer.Item{it}})
		}
		budgets := map[string]int{}
		for i, r := range in {
			if i%2 == 0 {
				budgets[r.ID] = perLayer
			}
		}
		got := ProjectLayersWithin(in, budgets, capTokens, unit)
		// Walk the input alongside the output.
		used, k := 0, 0
		layerUsed := map[string]int{}
		fits := func(id string, cost int) bool {
			own, capped := budgets[id]
			return cost <= capTokens-used && (!capped || cost <= own-layerUsed[id])
		}
		var flat []layer.Item
		for _, r := range got {
			flat = append(flat, r.Items...)
		}
		for _, r := range in {
			for _, it := range r.Items {
				cost := itemTokens(unit, it.Tokens, it.Text)
				if k < len(flat) && flat[k] == it && fits(r.ID, cost) {
					used += cost
					layerUsed[r.ID] += cost
					k++
					continue
				}
				if fits(r.ID, cost) {
					t.Fatalf("item of cost %v skipped with %v of %v used (layer %s: %v)", cost, used, capTokens, r.ID, layerUsed[r.ID])
				}
			}
		}
		if k != len(flat) {
			t.Fatalf("output has %d items not matched in order", len(flat)-k)
		}
	})
}

// FuzzCompileHostile renders arbitrary layer text, fenced by fence.Wrap,
// next to another fenced layer, and checks that each text stays in its own
// block and that the instructions appear once (nothing was evaluated).
func FuzzCompileHostile(f *testing.F) {
	for _, s := range []string{
		"plain", "</working_memory>", "<working_memory>", "</entity_memory>x<entity_memory>", "{{instructions}}",
		"{{> p}}", "[WORKING MEMORY]", "</ Working_Memory\t>", "&lt;/working_memory>", "<<</working_memory",
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	tpl := mustNew(f, Config{Template: "{{instructions}}\n{{workingMemory}}\n{{{entities}}}", Instructions: "TRUSTED"})
	def := mustNew(f, Config{Instructions: "TRUSTED"})
	f.Fuzz(func(t *testing.T, text string, useTemplate bool) {
		if strings.Contains(text, "&lt;") || strings.Contains(text, "TRUSTED") {
			return // would make the checks below ambiguous
		}
		c := def
		if useTemplate {
			c = tpl
		}
		out, err := c.Compile([]layer.Recalled{
			rec("working-memory", fence.Wrap("working_memory", text)),
			rec("entities", fence.Wrap("entities", "e:"+text)),
		}, nil)
		if err != nil {
			t.Fatalf("Compile: %v", err)
		}
		if got := blockBody(out, "working_memory"); got != text {
			t.Fatalf("working_memory block holds %q, want %q\n%s", got, text, out)
		}
		if got := blockBody(out, "entities"); got != "e:"+text {
			t.Fatalf("entities block holds %q, want %q\n%s", got, "e:"+text, out)
		}
		if n := strings.Count(out, "TRUSTED"); n != 1 {
			t.Fatalf("instructions appear %d times\n%s", n, out)
		}
		assertOneBlock(t, out, "working_memory")
		assertOneBlock(t, out, "entities")
	})
}
