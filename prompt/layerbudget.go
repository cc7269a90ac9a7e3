package prompt

// LayerBudget is what one layer had of a step's prompt, in tokens.
type LayerBudget struct {
	// Layer is the layer's ID.
	Layer string
	// Allocated is what the budget allocation gave it; for the layers in
	// scored assembly, the pool they share (the sum of their allocations,
	// fences included; each says it whole).
	Allocated int
	// Used is what its block took; Left is Allocated − Used (negative
	// never: a block is cut to its allocation).
	Used, Left int
	// Assembled is true for a layer whose block scored assembly chose.
	Assembled bool
}
