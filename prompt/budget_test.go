package prompt

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/layer"
)

// Budget shorthands in noetic's vocabulary: 'auto' is the zero Budget, a
// plain number N is Budget{Max: N}, {min,max} is Budget{Min, Max}.
func auto(id string) layer.Spec { return layer.Spec{ID: id} }
func num(id string, n float64) layer.Spec {
	return layer.Spec{ID: id, Budget: layer.Budget{Max: n}}
}
func minMax(id string, lo, hi float64) layer.Spec {
	return layer.Spec{ID: id, Budget: layer.Budget{Min: lo, Max: hi}}
}

const eps = 1e-9

func near(a, b float64) bool {
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= eps*math.Max(1, math.Abs(b))
}

// TestAllocateNoetic mirrors noetic's budget checklist B1–B15 (see
// shared/reference/noetic.md §4). Unless a case says otherwise the
// window is 10000 with no reserve and no system prompt.
func TestAllocateNoetic(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name    string
		req     Request
		want    map[string]float64 // exact allocations; nil = not checked
		history float64            // checked when want is set
		check   func(t *testing.T, a Allocation)
	}{
		{
			name:    "B1 minimums are guaranteed",
			req:     Request{Total: 10000, System: 500, Reserve: 1000, Layers: []layer.Spec{minMax("a", 200, 1000), minMax("b", 300, 1000)}},
			want:    map[string]float64{"a": 1000, "b": 1000},
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
			want:    map[string]float64{"a": 5000},
			history: 4000,
		},
		{
			name:    "B3 total minus reserve minus system is zero",
			req:     Request{Total: 100, Reserve: 50, System: 50, Layers: []layer.Spec{minMax("a", 10, 20), auto("b")}},
			want:    map[string]float64{"a": 0, "b": 0},
			history: 0,
		},
		{
			name:    "B3 reserve and system exceed total",
			req:     Request{Total: 100, Reserve: 5000, System: 5000, Layers: []layer.Spec{auto("a")}},
			want:    map[string]float64{"a": 0},
			history: 0,
		},
		{
			name:    "B3 zero total",
			req:     Request{Total: 0, Layers: []layer.Spec{auto("a"), num("b", 10)}},
			want:    map[string]float64{"a": 0, "b": 0},
			history: 0,
		},
		{
			name:    "B4 bounded layers get their max",
			req:     Request{Total: 10000, Layers: []layer.Spec{minMax("a", 0, 3000), minMax("b", 0, 1000)}},
			want:    map[string]float64{"a": 3000, "b": 1000},
			history: 4000,
		},
		{
			name:    "B5 plain number",
			req:     Request{Total: 10000, Layers: []layer.Spec{num("a", 500)}},
			want:    map[string]float64{"a": 500},
			history: 4000,
		},
		{
			name:    "B6 one auto layer takes the pool",
			req:     Request{Total: 10000, Layers: []layer.Spec{auto("a")}},
			want:    map[string]float64{"a": 6000},
			history: 4000,
		},
		{
			name:    "B6 two auto layers split the pool",
			req:     Request{Total: 10000, Layers: []layer.Spec{auto("a"), auto("b")}},
			want:    map[string]float64{"a": 3000, "b": 3000},
			history: 4000,
		},
		{
			name: "B6 omitted budget and auto are the same",
			// An omitted budget and 'auto' are both the zero Budget here;
			// Max +Inf is the other spelling of unbounded.
			req:     Request{Total: 10000, Layers: []layer.Spec{{ID: "a", Budget: layer.Budget{Max: inf}}, auto("b")}},
			want:    map[string]float64{"a": 3000, "b": 3000},
			history: 4000,
		},
		{
			name:    "B6 three auto layers with system and reserve",
			req:     Request{Total: 10000, System: 1000, Reserve: 1000, Layers: []layer.Spec{auto("a"), auto("b"), auto("c")}},
			want:    map[string]float64{"a": 1600, "b": 1600, "c": 1600},
			history: 3200,
		},
		{
			name:    "B7 bounded and auto share the pool",
			req:     Request{Total: 10000, Layers: []layer.Spec{minMax("a", 0, 4800), auto("b")}},
			want:    map[string]float64{"a": 3000, "b": 3000},
			history: 4000,
		},
		{
			name:    "B7 finite max 2999",
			req:     Request{Total: 10000, Layers: []layer.Spec{num("a", 2999), auto("b")}},
			want:    map[string]float64{"a": 2999, "b": 3001},
			history: 4000,
		},
		{
			name:    "B7 finite max 3000",
			req:     Request{Total: 10000, Layers: []layer.Spec{num("a", 3000), auto("b")}},
			want:    map[string]float64{"a": 3000, "b": 3000},
			history: 4000,
		},
		{
			name:    "B7 finite max 3001",
			req:     Request{Total: 10000, Layers: []layer.Spec{num("a", 3001), auto("b")}},
			want:    map[string]float64{"a": 3000, "b": 3000},
			history: 4000,
		},
		{
			name:    "B8 min plus proportional headroom",
			req:     Request{Total: 10000, System: 1000, Reserve: 1000, Layers: []layer.Spec{minMax("a", 100, 5000)}},
			want:    map[string]float64{"a": 4840},
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
			want:    map[string]float64{"a": 1000, "b": inf},
			history: inf,
		},
		{
			name:    "B12 fractional window",
			req:     Request{Total: 0.5, Layers: []layer.Spec{auto("a")}},
			want:    map[string]float64{"a": 0.3},
			history: 0.2,
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
			want:    map[string]float64{"a": 466, "b": 533, "c": 0}, // floor(700*1000/1500), floor(800*1000/1500)
			history: 0,
		},
		{
			name:    "no layers: history takes everything",
			req:     Request{Total: 8000, Reserve: 1000},
			want:    map[string]float64{},
			history: 7000,
		},
		{
			name:    "infinite reserve leaves nothing",
			req:     Request{Total: inf, Reserve: inf, Layers: []layer.Spec{auto("a")}},
			want:    map[string]float64{"a": 0},
			history: 0,
		},
		{
			name:    "zero headroom layer gets its min under an infinite window",
			req:     Request{Total: inf, Layers: []layer.Spec{minMax("a", 50, 50)}},
			want:    map[string]float64{"a": 50},
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
					if g, ok := a.Layers[id]; !ok || !near(g, w) {
						t.Errorf("layer %s = %v (present %v), want %v", id, g, ok, w)
					}
				}
			}
			if tt.want != nil && !near(a.History, tt.history) {
				t.Errorf("history = %v, want %v", a.History, tt.history)
			}
			assertSane(t, tt.req, a)
			if tt.check != nil {
				tt.check(t, a)
			}
		})
	}
}

// assertSane checks the invariants every allocation keeps: no NaN, nothing
// negative, bounded layers within Max, and no more than available in total.
func assertSane(t *testing.T, r Request, a Allocation) {
	t.Helper()
	total := a.History
	if math.IsNaN(a.History) || a.History < 0 {
		t.Errorf("history = %v", a.History)
	}
	for _, s := range r.Layers {
		v, ok := a.Layers[s.ID]
		if !ok {
			t.Errorf("layer %s missing", s.ID)
		}
		if math.IsNaN(v) || v < 0 {
			t.Errorf("layer %s = %v", s.ID, v)
		}
		if !s.Budget.Unbounded() && v > s.Budget.Max {
			t.Errorf("layer %s = %v > Max %v", s.ID, v, s.Budget.Max)
		}
		total += v
	}
	avail := r.Total - r.Reserve - r.System
	if math.IsInf(r.Reserve, 1) || math.IsInf(r.System, 1) || avail < 0 {
		avail = 0
	}
	if !math.IsInf(avail, 1) && total > avail*(1+eps)+eps {
		t.Errorf("allocated %v > available %v", total, avail)
	}
}

// TestAllocateInvalid covers B10 and the other rejected inputs: each error
// wraps ErrInvalidBudget and names the field.
func TestAllocateInvalid(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name  string
		req   Request
		field string
	}{
		{"B10 NaN total", Request{Total: nan}, "Total"},
		{"B10 NaN reserve", Request{Total: 100, Reserve: nan}, "Reserve"},
		{"B10 NaN system", Request{Total: 100, System: nan}, "System"},
		{"B10 NaN min", Request{Total: 100, Layers: []layer.Spec{auto("ok"), {ID: "bad", Budget: layer.Budget{Min: nan}}}}, `Layers[1] ("bad").Budget.Min`},
		{"B10 NaN max", Request{Total: 100, Layers: []layer.Spec{{ID: "bad", Budget: layer.Budget{Max: nan}}}}, `Layers[0] ("bad").Budget.Max`},
		{"negative total", Request{Total: -1}, "Total"},
		{"negative infinite reserve", Request{Total: 1, Reserve: math.Inf(-1)}, "Reserve"},
		{"negative min", Request{Total: 100, Layers: []layer.Spec{minMax("a", -1, 10)}}, "Budget.Min"},
		{"infinite min", Request{Total: 100, Layers: []layer.Spec{minMax("a", math.Inf(1), 0)}}, "Budget.Min"},
		{"min above max", Request{Total: 100, Layers: []layer.Spec{minMax("a", 20, 10)}}, "Min 20 exceeds Max 10"},
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
