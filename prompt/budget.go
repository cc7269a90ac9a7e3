package prompt

import (
	"fmt"
	"math"

	"github.com/memlayer/memlayer/layer"
)

// layerShare is the fraction of the headroom (what is left after every
// layer's minimum) that goes to the layers; the rest goes to history.
const layerShare = 0.6

// Request is the input of [Allocate]. All sizes are in tokens.
type Request struct {
	// Total is the model's context window; +Inf means unbounded.
	Total float64
	// Reserve is kept free for the model's response.
	Reserve float64
	// System is what the system prompt's fixed part (instructions and
	// template text) costs.
	System float64
	// Layers are the layers to allocate for, usually [layer.Stack.Specs].
	// Each one's budget is Spec.Budget: Min is guaranteed when the
	// window allows it, Max caps it, and a Max of 0 or +Inf means
	// unbounded (noetic's 'auto').
	Layers []layer.Spec
}

// Allocation is the output of [Allocate]: the tokens each layer may fill
// and what is left for the conversation history.
type Allocation struct {
	// Layers maps every requested layer's ID to its allocation.
	Layers map[string]float64
	// History is the budget of the message history.
	History float64
	// Available is Total − Reserve − System (0 when that is negative):
	// the sum of Layers and History never exceeds it (up to float
	// rounding).
	Available float64
}

// Allocate divides a context window among layers and history. It follows
// noetic's budget.ts, which the package tests mirror case by case:
//
//  1. available = Total − Reserve − System. If it is ≤ 0 everything gets 0.
//     A +Inf Reserve or System leaves nothing available.
//  2. Every layer first gets its Min.
//  3. If the minimums add up to more than available, each layer gets
//     floor(Min·available/ΣMin) instead, and history gets 0.
//  4. Otherwise the rest is split: 60% is the layer pool,
//     the remainder (40%) is history's.
//  5. Each layer's headroom is Max − Min (infinite when unbounded).
//     If every headroom is finite, each layer gets pool·h/Σh, capped at
//     its h. If some are infinite, the finite ones share half the pool
//     that way, and the unbounded ones split what the finite ones left
//     equally.
//
// Pool left unused by capped layers is not given to history (noetic's
// behaviour: a single {0,5000} layer on 10000 tokens leaves history 4000).
// With no layers at all, history gets everything available.
//
// A +Inf Total gives unbounded layers and history +Inf and bounded layers
// their Max; no NaN is ever returned. A NaN anywhere, a negative size, a
// Min above Max or an infinite Min, and a duplicate layer ID return an
// error wrapping [ErrInvalidBudget] that names the field.
func Allocate(r Request) (Allocation, error) {
	if err := validate(r); err != nil {
		return Allocation{}, err
	}
	a := Allocation{Layers: make(map[string]float64, len(r.Layers))}
	for _, s := range r.Layers {
		a.Layers[s.ID] = 0
	}
	if math.IsInf(r.Reserve, 1) || math.IsInf(r.System, 1) {
		return a, nil
	}
	avail := r.Total - r.Reserve - r.System
	if !(avail > 0) {
		return a, nil
	}
	a.Available = avail
	if len(r.Layers) == 0 {
		a.History = avail
		return a, nil
	}

	mins := make([]float64, len(r.Layers))
	for i, s := range r.Layers {
		mins[i] = s.Budget.Min
	}
	sumMin := sum(mins)
	if sumMin > avail {
		ratios := normalised(mins)
		for i, s := range r.Layers {
			v := mins[i] * avail / sumMin
			if math.IsInf(v, 0) || math.IsNaN(v) || math.IsInf(sumMin, 1) {
				v = ratios[i] * avail // the plain formula overflowed
			}
			a.Layers[s.ID] = math.Floor(v)
		}
		return a, nil
	}

	remaining := math.Inf(1)
	if !math.IsInf(avail, 1) {
		remaining = avail - sumMin
	}
	pool := remaining * layerShare
	if math.IsInf(remaining, 1) {
		a.History = remaining
	} else {
		a.History = remaining - pool
	}

	var finite, unbounded []int
	head := make([]float64, len(r.Layers))
	for i, s := range r.Layers {
		a.Layers[s.ID] = mins[i]
		if s.Budget.Unbounded() {
			unbounded = append(unbounded, i)
			continue
		}
		head[i] = s.Budget.Max - s.Budget.Min
		finite = append(finite, i)
	}
	finitePool := pool
	if len(unbounded) > 0 {
		finitePool = pool / 2
	}
	given := 0.0
	if len(finite) > 0 {
		hs := make([]float64, len(finite))
		for j, i := range finite {
			hs[j] = head[i]
		}
		ratios := normalised(hs)
		for j, i := range finite {
			share := 0.0
			if hs[j] > 0 {
				share = math.Min(finitePool*ratios[j], hs[j])
			}
			// Min + (Max − Min) can round to one ulp above Max: clamp.
			id := r.Layers[i].ID
			a.Layers[id] = math.Min(a.Layers[id]+share, r.Layers[i].Budget.Max)
			given += share
		}
	}
	if len(unbounded) > 0 {
		each := (pool - given) / float64(len(unbounded))
		if math.IsInf(pool, 1) {
			each = pool
		}
		for _, i := range unbounded {
			a.Layers[r.Layers[i].ID] += each
		}
	}
	return a, nil
}

func validate(r Request) error {
	for _, f := range [...]struct {
		name string
		v    float64
	}{{"Total", r.Total}, {"Reserve", r.Reserve}, {"System", r.System}} {
		if math.IsNaN(f.v) || f.v < 0 {
			return fmt.Errorf("%w: %s is %v, want a number >= 0", ErrInvalidBudget, f.name, f.v)
		}
	}
	seen := make(map[string]bool, len(r.Layers))
	for i, s := range r.Layers {
		field := func() string { return fmt.Sprintf("Layers[%d] (%q).Budget", i, s.ID) }
		b := s.Budget
		switch {
		case math.IsNaN(b.Min) || b.Min < 0 || math.IsInf(b.Min, 1):
			return fmt.Errorf("%w: %s.Min is %v, want a finite number >= 0", ErrInvalidBudget, field(), b.Min)
		case math.IsNaN(b.Max) || b.Max < 0:
			return fmt.Errorf("%w: %s.Max is %v, want a number >= 0", ErrInvalidBudget, field(), b.Max)
		case !b.Unbounded() && b.Min > b.Max:
			return fmt.Errorf("%w: %s.Min %v exceeds Max %v", ErrInvalidBudget, field(), b.Min, b.Max)
		case seen[s.ID]:
			return fmt.Errorf("%w: Layers[%d]: layer %q listed twice", ErrInvalidBudget, i, s.ID)
		}
		seen[s.ID] = true
	}
	return nil
}

func sum(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t
}

// normalised returns xs[i]/Σxs computed without overflow (all xs are
// finite and >= 0); all zeros when the sum is 0.
func normalised(xs []float64) []float64 {
	m := 0.0
	for _, x := range xs {
		m = math.Max(m, x)
	}
	out := make([]float64, len(xs))
	if m == 0 {
		return out
	}
	t := 0.0
	for i, x := range xs {
		out[i] = x / m
		t += out[i]
	}
	for i := range out {
		out[i] /= t
	}
	return out
}
