package prompt

import (
	"fmt"
	"math/bits"

	"github.com/memlayer/memlayer/layer"
)

// Request is the input of [Allocate]. All sizes are in tokens;
// [layer.Unbounded] means no limit.
type Request struct {
	// Total is the model's context window.
	Total int
	// Reserve is kept free for the model's response.
	Reserve int
	// System is what the system prompt's fixed part (instructions and
	// template text) costs.
	System int
	// Layers are the layers to allocate for, usually the specs of
	// [layer.Stack.Layers]. Each one's budget is Spec.Budget: Min is
	// guaranteed when the window allows it, Max caps it, and a Max of 0
	// or layer.Unbounded means no cap (noetic's 'auto').
	Layers []layer.Spec
}

// Allocation is the output of [Allocate]: the tokens each layer may fill
// and what is left for the conversation history.
type Allocation struct {
	// Layers maps every requested layer's ID to its allocation.
	Layers map[string]int
	// History is the budget of the message history.
	History int
	// Available is Total − Reserve − System (0 when that is negative):
	// the sum of Layers and History never exceeds it.
	Available int
}

// Allocate divides a context window among layers and history, the way
// noetic's budget.ts does (the package tests mirror its cases):
//
//  1. available = Total − Reserve − System, or 0 when that is negative.
//  2. If the layers' minimums add up to more than available, each layer
//     gets floor(Min·available/ΣMin) and history gets nothing.
//  3. Otherwise every layer gets its Min, and of the rest 60% is the layer
//     pool and 40% goes to history.
//  4. The pool is shared by headroom (Max − Min). A capped layer gets
//     pool·headroom/Σheadroom, at most its headroom; when some layers have
//     no cap, the capped ones share only half the pool that way, and the
//     uncapped ones split equally what the capped ones left.
//
// Pool left unused by capped layers is not given to history (noetic's
// behaviour: a single {0,5000} layer on 10000 tokens leaves history 4000).
// With no layers, history gets everything available. An unbounded window
// (Total is layer.Unbounded, Reserve and System are not) gives each
// capped layer its Max and the others and history layer.Unbounded.
//
// A negative size, an invalid layer budget (see [layer.Spec.Validate]), a
// duplicate layer ID, and budgets adding up past layer.Unbounded return
// an error wrapping [ErrInvalidBudget] that names the field.
func Allocate(r Request) (Allocation, error) {
	if err := validate(r); err != nil {
		return Allocation{}, err
	}
	avail := available(r)
	a := Allocation{Layers: make(map[string]int, len(r.Layers)), Available: avail}
	sums := sumBudgets(r.Layers)
	for _, s := range r.Layers {
		a.Layers[s.ID] = unshared(s.Budget, avail, sums)
	}
	switch {
	case len(r.Layers) == 0, avail == layer.Unbounded:
		a.History = avail
	case avail > 0 && sums.min <= avail:
		a.share(r.Layers, sums, avail-sums.min)
	}
	return a, nil
}

// unshared returns what Allocate gives a layer of budget b before any
// sharing: with an unbounded window, its Max when capped, else
// layer.Unbounded; when the Mins do not fit, its Min scaled down to fit;
// else nothing yet.
func unshared(b layer.Budget, avail int, sums budgetSums) int {
	switch {
	case avail == layer.Unbounded && capped(b):
		return b.Max
	case avail == layer.Unbounded:
		return layer.Unbounded
	case sums.min > avail:
		return mulDiv(b.Min, avail, sums.min)
	}
	return 0
}

// budgetSums are the sums of the layers' budgets Allocate needs: their
// Mins, the headroom (Max − Min) of the capped ones, and how many have
// no cap.
type budgetSums struct{ min, head, uncapped int }

func sumBudgets(specs []layer.Spec) (s budgetSums) {
	for _, l := range specs {
		s.min += l.Budget.Min
		if capped(l.Budget) {
			s.head += l.Budget.Max - l.Budget.Min
		} else {
			s.uncapped++
		}
	}
	return s
}

// share gives each layer its Min and shares rest, what is left after
// the Mins: 60% to the layers, the capped ones taking at most their
// headroom in proportion to it (of half of that when some layers have no
// cap, which share the remainder equally), and 40% to history.
func (a *Allocation) share(specs []layer.Spec, sums budgetSums, rest int) {
	pool := mulDiv(3, rest, 5) // the layers' 60%
	a.History = rest - pool
	share := pool // what the capped layers share
	if sums.uncapped > 0 {
		share = pool / 2
	}
	given := 0
	for _, s := range specs {
		a.Layers[s.ID] = s.Budget.Min
		if head := s.Budget.Max - s.Budget.Min; capped(s.Budget) && head > 0 {
			g := min(head, mulDiv(head, share, sums.head))
			a.Layers[s.ID] += g
			given += g
		}
	}
	for _, s := range specs {
		if !capped(s.Budget) {
			a.Layers[s.ID] += (pool - given) / sums.uncapped
		}
	}
}

// capped reports whether b has a Max (neither 0 nor layer.Unbounded).
func capped(b layer.Budget) bool { return b.Max != 0 && b.Max != layer.Unbounded }

// available returns Total − Reserve − System, at least 0, or
// layer.Unbounded for an unbounded window.
func available(r Request) int {
	switch {
	case r.Reserve == layer.Unbounded || r.System == layer.Unbounded:
		return 0
	case r.Total == layer.Unbounded:
		return layer.Unbounded
	}
	avail := r.Total - r.Reserve // no overflow: both are >= 0
	if avail <= r.System {
		return 0
	}
	return avail - r.System
}

// mulDiv returns floor(a·b/c) for 0 <= a <= c, 0 < c and 0 <= b, without
// overflow (the result is at most b).
func mulDiv(a, b, c int) int {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	q, _ := bits.Div64(hi, lo, uint64(c))
	return int(q)
}

func validate(r Request) error {
	for _, f := range [...]struct {
		name string
		v    int
	}{{"Total", r.Total}, {"Reserve", r.Reserve}, {"System", r.System}} {
		if f.v < 0 {
			return fmt.Errorf("%w: %s is %d, want >= 0", ErrInvalidBudget, f.name, f.v)
		}
	}
	return validateLayers(r.Layers)
}

// validateLayers checks the layers of a Request: valid specs, no ID
// twice, and budgets that add up to no more than layer.Unbounded.
func validateLayers(layers []layer.Spec) error {
	seen := make(map[string]bool, len(layers))
	sum := 0 // of each layer's Max, or Min when it has no cap
	for i, s := range layers {
		if err := s.Validate(); err != nil {
			return fmt.Errorf("%w: Layers[%d]: %w", ErrInvalidBudget, i, err)
		}
		if seen[s.ID] {
			return fmt.Errorf("%w: Layers[%d]: layer %q listed twice", ErrInvalidBudget, i, s.ID)
		}
		seen[s.ID] = true
		most := s.Budget.Min
		if capped(s.Budget) {
			most = s.Budget.Max
		}
		if most > layer.Unbounded-sum {
			return fmt.Errorf("%w: Layers[%d] (%q): the layers' budgets add up to more than layer.Unbounded", ErrInvalidBudget, i, s.ID)
		}
		sum += most
	}
	return nil
}
