package prompt

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/layer"
)

// Budget shorthands in noetic's vocabulary: 'auto' is the zero Budget, a
// plain number N is Budget{Max: N}, {min,max} is Budget{Min, Max}.
func auto(id string) layer.Spec { return layer.Spec{ID: id} }
func num(id string, n int) layer.Spec {
	return layer.Spec{ID: id, Budget: layer.Budget{Max: n}}
}
func minMax(id string, lo, hi int) layer.Spec {
	return layer.Spec{ID: id, Budget: layer.Budget{Min: lo, Max: hi}}
}

// TestAllocateNoetic mirrors noetic's budget checklist B1–B15 (see
// shared/reference/noetic.md §4). Unless a case says otherwise the
// window is 10000 with no reserve and no system prompt.
func TestAllocateNoetic(t *testing.T) {
	inf := layer.Unbounded
	tests := []struct {
		name    string
		req     Request
		want    map[string]int // exact allocations; nil = not checked
		history int            // checked when want is set
		check   func(t *testing.T, a Allocation)
	}{
		{
			name:    "B1 minimums are guaranteed",
			req:     Request{Total: 10000, System: 500, Reserve: 1000, Layers: []layer.Spec{minMax("a", 200, 1000), minMax("b", 300, 1000)}},
			want:    map[string]int{"a": 1000, "b": 1000},
			history: 3200,
			check: func(t *testing.T, a Allocation) {
				if a.Layers["a"] < 200 || a.Layers["b"] < 300 {
					t.Errorf("minimums not met: %v", a.Layers)
				}
			},
		},
		{
			name:    "B2 single bounded layer leaves history 40%",
			req:     Request{Total: 10000, Layers: []layer.Spec{minMax("a", 0, 5000)}},
			want:    map[string]int{"a": 5000},
			history: 4000,
		},
		{
			name:    "B3 total minus reserve minus system is zero",
			req:     Request{Total: 100, Reserve: 50, System: 50, Layers: []layer.Spec{minMax("a", 10, 20), auto("b")}},
			want:    map[string]int{"a": 0, "b": 0},
			history: 0,
		},
		{
			name:    "B3 reserve and system exceed total",
			req:     Request{Total: 100, Reserve: 5000, System: 5000, Layers: []layer.Spec{auto("a")}},
			want:    map[string]int{"a": 0},
			history: 0,
		},
		{
			name:    "B3 zero total",
			req:     Request{Total: 0, Layers: []layer.Spec{auto("a"), num("b", 10)}},
			want:    map[string]int{"a": 0, "b": 0},
			history: 0,
		},
		{
			name:    "B4 bounded layers get their max",
			req:     Request{Total: 10000, Layers: []layer.Spec{minMax("a", 0, 3000), minMax("b", 0, 1000)}},
			want:    map[string]int{"a": 3000, "b": 1000},
			history: 4000,
		},
		{
			name:    "B5 plain number",
			req:     Request{Total: 10000, Layers: []layer.Spec{num("a", 500)}},
			want:    map[string]int{"a": 500},
			history: 4000,
		},
		{
			name:    "B6 one auto layer takes the pool",
			req:     Request{Total: 10000, Layers: []layer.Spec{auto("a")}},
			want:    map[string]int{"a": 6000},
			history: 4000,
		},
		{
			name:    "B6 two auto layers split the pool",
			req:     Request{Total: 10000, Layers: []layer.Spec{auto("a"), auto("b")}},
			want:    map[string]int{"a": 3000, "b": 3000},
			history: 4000,
		},
		{
			name: "B6 omitted budget and auto are the same",
			// An omitted budget and 'auto' are both the zero Budget here;
			// Max layer.Unbounded is the other spelling of unbounded.
			req:     Request{Total: 10000, Layers: []layer.Spec{{ID: "a", Budget: layer.Budget{Max: inf}}, auto("b")}},
			want:    map[string]int{"a": 3000, "b": 3000},
			history: 4000,
		},
		{
			name:    "B6 three auto layers with system and reserve",
			req:     Request{Total: 10000, System: 1000, Reserve: 1000, Layers: []layer.Spec{auto("a"), auto("b"), auto("c")}},
			want:    map[string]int{"a": 1600, "b": 1600, "c": 1600},
			history: 3200,
		},
		{
			name:    "B7 bounded and auto share the pool",
			req:     Request{Total: 10000, Layers: []layer.Spec{minMax("a", 0, 4800), auto("b")}},
			want:    map[string]int{"a": 3000, "b": 3000},
			history: 4000,
		},
		{
			name:    "B7 finite max 2999",
			req:     Request{Total: 10000, Layers: []layer.Spec{num("a", 2999), auto("b")}},
			want:    map[string]int{"a": 2999, "b": 3001},
			history: 4000,
		},
		{
			name:    "B7 finite max 3000",
			req:     Request{Total: 10000, Layers: []layer.Spec{num("a", 3000), auto("b")}},
			want:    map[string]int{"a": 3000, "b": 3000},
			history: 4000,
		},
		{
			name:    "B7 finite max 3001",
			req:     Request{Total: 10000, Layers: []layer.Spec{num("a", 3001), auto("b")}},
			want:    map[string]int{"a": 3000, "b": 3000},
			history: 4000,
		},
		{
			name:    "B8 min plus proportional headroom",
			req:     Request{Total: 10000, System: 1000, Reserve: 1000, Layers: []layer.Spec{minMax("a", 100, 5000)}},
			want:    map[string]int{"a": 4840},
			history: 3160,
		},
		{
			name: "B9 bounded layer capped, auto gets the rest",
			req:  Request{Total: 10000, System: 1000, Reserve: 1000, Layers: []layer.Spec{minMax("a", 0, 1000), auto("b")}},
			check: func(t *testing.T, a Allocation) {
				if a.Layers["a"] > 1000 || a.Layers["b"] <= 0 || a.Layers["a"]+a.Layers["b"] > 4800 {
					t.Errorf("got %v, want a <= 1000, b > 0, sum <= 4800", a.Layers)
				}
			},
		},
		{
			name:    "B11 infinite window",
			req:     Request{Total: inf, Reserve: 4000, Layers: []layer.Spec{minMax("a", 100, 1000), auto("b")}},
			want:    map[string]int{"a": 1000, "b": inf},
			history: inf,
		},
		{
			name:    "B12 small window: the layers' 60% is rounded down",
			req:     Request{Total: 1, Layers: []layer.Spec{auto("a")}},
			want:    map[string]int{"a": 0},
			history: 1,
		},
		{
			name: "B13 high minimum wins",
			req:  Request{Total: 20000, Layers: []layer.Spec{minMax("lo", 1, 16000), minMax("hi", 15999, 16000)}},
			check: func(t *testing.T, a Allocation) {
				if !(a.Layers["hi"] > a.Layers["lo"]) {
					t.Errorf("hi %v <= lo %v", a.Layers["hi"], a.Layers["lo"])
				}
			},
		},
		{
			name: "B14 hundred auto layers stay within the window",
			req: func() Request {
				r := Request{Total: 1e6}
				for i := range 100 {
					r.Layers = append(r.Layers, auto(fmt.Sprintf("l%d", i)))
				}
				return r
			}(),
			check: func(t *testing.T, a Allocation) {
				total := a.History
				for _, v := range a.Layers {
					total += v
				}
				if total > 1e6 {
					t.Errorf("sum %v > 1e6", total)
				}
				if a.Layers["l0"] != 6000 || a.Layers["l99"] != 6000 {
					t.Errorf("l0 %v, l99 %v, want 6000 each", a.Layers["l0"], a.Layers["l99"])
				}
			},
		},
		{
			name:    "B15 minimums above the window scale down, floored",
			req:     Request{Total: 1000, Layers: []layer.Spec{minMax("a", 700, 0), minMax("b", 800, 900), auto("c")}},
			want:    map[string]int{"a": 466, "b": 533, "c": 0}, // floor(700*1000/1500), floor(800*1000/1500)
			history: 0,
		},
		{
			name:    "no layers: history takes everything",
			req:     Request{Total: 8000, Reserve: 1000},
			want:    map[string]int{},
			history: 7000,
		},
		{
			name:    "infinite reserve leaves nothing",
			req:     Request{Total: inf, Reserve: inf, Layers: []layer.Spec{auto("a")}},
			want:    map[string]int{"a": 0},
			history: 0,
		},
		{
			name:    "zero headroom layer gets its min under an infinite window",
			req:     Request{Total: inf, Layers: []layer.Spec{minMax("a", 50, 50)}},
			want:    map[string]int{"a": 50},
			history: inf,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Allocate(tt.req)
			if err != nil {
				t.Fatalf("Allocate: %v", err)
			}
			if tt.want != nil {
				if len(a.Layers) != len(tt.want) {
					t.Errorf("got %d layers %v, want %d", len(a.Layers), a.Layers, len(tt.want))
				}
				for id, w := range tt.want {
					if g, ok := a.Layers[id]; !ok || g != w {
						t.Errorf("layer %s = %v (present %v), want %v", id, g, ok, w)
					}
				}
			}
			if tt.want != nil && a.History != tt.history {
				t.Errorf("history = %v, want %v", a.History, tt.history)
			}
			assertSane(t, tt.req, a)
			if tt.check != nil {
				tt.check(t, a)
			}
		})
	}
}

// assertSane checks the invariants every allocation keeps: nothing
// negative, capped layers within Max, and, for a bounded window, no more
// than available in total (counted without overflow).
func assertSane(t *testing.T, r Request, a Allocation) {
	t.Helper()
	if a.History < 0 {
		t.Errorf("history = %d", a.History)
	}
	unbounded := r.Reserve == layer.Unbounded || r.System == layer.Unbounded
	if r.Total == layer.Unbounded && !unbounded {
		return // an unbounded window: nothing to add up
	}
	avail := big.NewInt(int64(r.Total))
	avail.Sub(avail, big.NewInt(int64(r.Reserve)))
	avail.Sub(avail, big.NewInt(int64(r.System)))
	if unbounded || avail.Sign() < 0 {
		avail.SetInt64(0)
	}
	if avail.Cmp(big.NewInt(int64(a.Available))) != 0 {
		t.Errorf("Available = %d, want %v", a.Available, avail)
	}
	total := big.NewInt(int64(a.History))
	for _, s := range r.Layers {
		v, ok := a.Layers[s.ID]
		if !ok {
			t.Errorf("layer %s missing", s.ID)
		}
		if v < 0 {
			t.Errorf("layer %s = %d", s.ID, v)
		}
		if capped(s.Budget) && v > s.Budget.Max {
			t.Errorf("layer %s = %d > Max %d", s.ID, v, s.Budget.Max)
		}
		total.Add(total, big.NewInt(int64(v)))
	}
	if total.Cmp(avail) > 0 {
		t.Errorf("allocated %v > available %v", total, avail)
	}
}

// TestAllocateInvalid covers the rejected inputs (B10's NaN cannot be
// written with integer sizes): each error wraps ErrInvalidBudget and names
// the field.
func TestAllocateInvalid(t *testing.T) {
	tests := []struct {
		name  string
		req   Request
		field string
	}{
		{"negative total", Request{Total: -1}, "Total"},
		{"negative reserve", Request{Total: 1, Reserve: -5}, "Reserve"},
		{"negative system", Request{Total: 1, System: -5}, "System"},
		{"negative min", Request{Total: 100, Layers: []layer.Spec{auto("ok"), minMax("bad", -1, 10)}}, `Layers[1]: layer bad: budget Min is -1`},
		{"negative max", Request{Total: 100, Layers: []layer.Spec{num("bad", -1)}}, `Layers[0]: layer bad: budget Max is -1`},
		{"min above max", Request{Total: 100, Layers: []layer.Spec{minMax("a", 20, 10)}}, "Min 20 exceeds Max 10"},
		{"budgets add up past Unbounded", Request{Total: 100, Layers: []layer.Spec{minMax("a", layer.Unbounded-1, layer.Unbounded-1), minMax("b", 2, 0)}}, `Layers[1] ("b"): the layers' budgets add up`},
		{"duplicate id", Request{Total: 100, Layers: []layer.Spec{auto("a"), auto("a")}}, `"a" listed twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Allocate(tt.req)
			if !errors.Is(err, ErrInvalidBudget) {
				t.Fatalf("err = %v, want ErrInvalidBudget", err)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Errorf("error %q does not name %q", err, tt.field)
			}
			if a.Layers != nil || a.History != 0 {
				t.Errorf("got allocation %+v with the error", a)
			}
		})
	}
}

// Issue 10: Allocate works in integer tokens. layer.Unbounded is the one
// "no limit" (a window, a reserve, a cap); shares near the top of the int
// range are computed without overflow; budgets adding up past
// layer.Unbounded are refused with an error that says so.
func TestPlain25_AllocateInIntegers(t *testing.T) {
	huge := layer.Unbounded - 1
	// floor(m·w/(2m)) for the two equal minimums m above the window w
	m, w := huge/4+1, huge/2
	share := new(big.Int).Div(new(big.Int).Mul(big.NewInt(int64(m)), big.NewInt(int64(w))), big.NewInt(int64(2*m))).Int64()
	tests := []struct {
		name    string
		req     Request
		want    map[string]int
		history int
	}{
		{"unbounded window", Request{Total: layer.Unbounded, Reserve: 4000, Layers: []layer.Spec{num("capped", 700), auto("open")}},
			map[string]int{"capped": 700, "open": layer.Unbounded}, layer.Unbounded},
		{"unbounded reserve", Request{Total: layer.Unbounded, Reserve: layer.Unbounded, Layers: []layer.Spec{auto("a")}},
			map[string]int{"a": 0}, 0},
		{"huge minimums scale down exactly", Request{Total: w, Layers: []layer.Spec{minMax("a", m, 0), minMax("b", m, 0)}},
			map[string]int{"a": int(share), "b": int(share)}, 0},
		{"huge window split 60/40", Request{Total: huge, Layers: []layer.Spec{auto("a")}},
			map[string]int{"a": int(new(big.Int).Div(new(big.Int).Mul(big.NewInt(int64(huge)), big.NewInt(3)), big.NewInt(5)).Int64())},
			huge - int(new(big.Int).Div(new(big.Int).Mul(big.NewInt(int64(huge)), big.NewInt(3)), big.NewInt(5)).Int64())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Allocate(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			for id, w := range tt.want {
				if a.Layers[id] != w {
					t.Errorf("layer %s = %d, want %d", id, a.Layers[id], w)
				}
			}
			if a.History != tt.history {
				t.Errorf("history = %d, want %d", a.History, tt.history)
			}
			assertSane(t, tt.req, a)
		})
	}
	_, err := Allocate(Request{Total: 10, Layers: []layer.Spec{num("a", huge), num("b", 2)}})
	if !errors.Is(err, ErrInvalidBudget) || !strings.Contains(err.Error(), "add up to more than layer.Unbounded") {
		t.Errorf("Allocate with budgets past Unbounded = %v", err)
	}
}
