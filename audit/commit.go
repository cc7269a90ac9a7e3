package audit

// Commit is what one turn did to memory, sorted by what it did: the
// writes it made, where each write was routed (or why it was refused),
// and what was evicted to make room. The agent loop returns the commit
// of each run (agentloop.Result.Commit). [CommitOf] makes one from any
// entries, and [Turn.Commit] from a committed turn, so code that writes
// through the layers outside the loop (package service, a layer.Stack of
// its own) has the same value: the entries it records, or the turns its
// audit keeps.
//
// A Commit holds no more than its entries do: texts as stored (masked)
// and at most MaxTextBytes; what a turn recorded and a commit dropped
// (past MaxEntries) is not in it.
type Commit struct {
	// Writes are the changes to what a layer holds, in order: writes,
	// supersedes and forgets.
	Writes []Write `json:"writes,omitempty"`
	// Routes are the router's decisions, in order: one per write asked
	// for, kept or refused.
	Routes []Route `json:"routes,omitempty"`
	// Evictions are the records layers pushed out to make room, in
	// order.
	Evictions []Eviction `json:"evictions,omitempty"`
}

// Write is one change to what a layer holds.
type Write struct {
	// Op is OpWrite, OpSupersede or OpForget.
	Op Op `json:"op"`
	// Layer is the ID of the layer written.
	Layer string `json:"layer"`
	// Kind is the write's kind ("preference", "decision", "extracted").
	Kind string `json:"kind,omitempty"`
	// Key and Version identify the record (a fact's ID and version);
	// empty for what a layer's Store kept without naming it.
	Key     string `json:"key,omitempty"`
	Version int    `json:"version,omitempty"`
	// Bytes is the size of the text as stored; zero for a forget, and
	// for what a layer's Store kept without saying what.
	Bytes int `json:"bytes,omitempty"`
	// Count is how many records a layer's Store kept without naming
	// them (the entities it extracted); zero for a named record.
	Count int `json:"count,omitempty"`
	// Source says who asked ("by=model step=2 tool=semantic_memory_memorize").
	Source string `json:"source,omitempty"`
	// Step and Depth place it in the run.
	Step  int `json:"step"`
	Depth int `json:"depth,omitempty"`
}

// Route is one decision of the router: where a write went, or why it
// was refused.
type Route struct {
	// Kind, Text (at most MaxTextBytes), Importance and Source are the
	// write's.
	Kind       string  `json:"kind,omitempty"`
	Text       string  `json:"text,omitempty"`
	Importance float64 `json:"importance,omitempty"`
	Source     string  `json:"source,omitempty"`
	// Layer is the layer the write went to; empty when it was refused.
	Layer string `json:"layer,omitempty"`
	// Refused marks a write that was not kept; Reason says why, or why
	// the write went to Layer.
	Refused bool   `json:"refused,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Step and Depth place it in the run.
	Step  int `json:"step"`
	Depth int `json:"depth,omitempty"`
}

// Eviction is what a layer pushed out to make room for new records.
type Eviction struct {
	// Layer is the ID of the layer that evicted.
	Layer string `json:"layer"`
	// Key is the ID of the record evicted; empty when the layer only
	// counted its evictions (Count of them).
	Key string `json:"key,omitempty"`
	// Count is how many records it concerns: 1 for a named one.
	Count int `json:"count"`
	// Step and Depth place it in the run.
	Step  int `json:"step"`
	Depth int `json:"depth,omitempty"`
}

// CommitOf sorts entries into a Commit: the writes, supersedes and
// forgets, the routes and the evictions, each in the entries' order.
// Recalls and redactions are not part of it.
func CommitOf(entries []Entry) Commit {
	var c Commit
	for _, e := range entries {
		switch {
		case e.IsWrite():
			c.Writes = append(c.Writes, Write{Op: e.Op, Layer: e.Layer, Kind: e.Kind, Key: e.Key, Version: e.Version,
				Bytes: e.Bytes, Count: e.Count, Source: e.Source, Step: e.Step, Depth: e.Depth})
		case e.Op == OpRoute:
			c.Routes = append(c.Routes, Route{Kind: e.Kind, Text: e.Text, Importance: e.Importance, Source: e.Source,
				Layer: e.Layer, Refused: e.Refused, Reason: e.Reason, Step: e.Step, Depth: e.Depth})
		case e.Op == OpEvict:
			c.Evictions = append(c.Evictions, Eviction{Layer: e.Layer, Key: e.Key, Count: max(e.Count, 1), Step: e.Step, Depth: e.Depth})
		}
	}
	return c
}

// Commit returns the turn's commit (see [CommitOf]).
func (t Turn) Commit() Commit { return CommitOf(t.Entries) }

// Empty reports whether c records nothing.
func (c Commit) Empty() bool {
	return len(c.Writes) == 0 && len(c.Routes) == 0 && len(c.Evictions) == 0
}

// Refused returns the routes that were refused, in order.
func (c Commit) Refused() []Route {
	var out []Route
	for _, r := range c.Routes {
		if r.Refused {
			out = append(out, r)
		}
	}
	return out
}
