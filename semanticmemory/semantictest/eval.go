package semantictest

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Fact is one fact of the evaluation set.
type Fact struct {
	// ID is stable across releases of the set ("pref-alice-theme").
	ID string `json:"id"`
	// Subject is who or what the fact is about: "user:alice",
	// "site:harbor" or "org".
	Subject string `json:"subject"`
	// Kind is one of preference, account, person, project, decision.
	Kind string `json:"kind"`
	// Text is the fact, one sentence.
	Text string `json:"text"`
}

// Query is one query of the evaluation set with the facts that answer it.
type Query struct {
	// ID is stable across releases of the set.
	ID string `json:"id"`
	// Text is the query as a user would ask it.
	Text string `json:"text"`
	// Relevant lists the IDs of the facts that answer the query (one or
	// more).
	Relevant []string `json:"relevant"`
	// Paraphrase marks a query that shares no word with any of its
	// relevant facts (after lowercasing, ignoring the stop words listed in
	// testdata/README.md). Every other query shares at least one word with
	// each of its relevant facts.
	Paraphrase bool `json:"paraphrase"`
}

// Set is the synthetic retrieval evaluation set: facts about the users,
// sites and decisions of a CMS assistant's workspace, and queries with
// their known relevant facts. testdata/README.md describes how it is built.
type Set struct {
	Facts   []Fact
	Queries []Query
}

//go:embed testdata/facts.jsonl testdata/queries.jsonl
var data embed.FS

// Load returns the evaluation set embedded in the package, checked: IDs
// unique and non-empty, texts non-empty, every query with at least one
// relevant fact and only IDs of facts of the set. Each call returns a new
// copy the caller may modify.
func Load() (Set, error) {
	var s Set
	if err := readJSONL("testdata/facts.jsonl", &s.Facts); err != nil {
		return Set{}, err
	}
	if err := readJSONL("testdata/queries.jsonl", &s.Queries); err != nil {
		return Set{}, err
	}
	if err := s.check(); err != nil {
		return Set{}, fmt.Errorf("semantictest: load: %w", err)
	}
	return s, nil
}

// readJSONL decodes one JSON object per line of the embedded file name
// into *out, refusing unknown fields.
func readJSONL[T any](name string, out *[]T) error {
	b, err := data.ReadFile(name)
	if err != nil {
		return fmt.Errorf("semantictest: load %s: %w", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	for {
		var v T
		if err := dec.Decode(&v); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("semantictest: load %s: record %d: %w", name, len(*out)+1, err)
		}
		*out = append(*out, v)
	}
}

// check reports the first inconsistency of s.
func (s Set) check() error {
	facts := make(map[string]bool, len(s.Facts))
	for i, f := range s.Facts {
		if err := checkEntry("fact", i, f.ID, f.Text, facts); err != nil {
			return err
		}
	}
	queries := make(map[string]bool, len(s.Queries))
	for i, q := range s.Queries {
		if err := checkEntry("query", i, q.ID, q.Text, queries); err != nil {
			return err
		}
		if len(q.Relevant) == 0 {
			return fmt.Errorf("query %q has no relevant fact", q.ID)
		}
		if i := slices.IndexFunc(q.Relevant, func(id string) bool { return !facts[id] }); i >= 0 {
			return fmt.Errorf("query %q: relevant fact %q is not in the set", q.ID, q.Relevant[i])
		}
	}
	return nil
}

// checkEntry checks the i-th fact or query (what) of a set: it has an
// ID not in seen, and text. It adds the ID to seen.
func checkEntry(what string, i int, id, text string, seen map[string]bool) error {
	switch {
	case id == "":
		return fmt.Errorf("%s %d has no ID", what, i+1)
	case seen[id]:
		return fmt.Errorf("%s ID %q is used twice", what, id)
	case strings.TrimSpace(text) == "":
		return fmt.Errorf("%s %q has no text", what, id)
	}
	seen[id] = true
	return nil
}

// Recall is the mean recall@k of a group of queries.
type Recall struct {
	// Queries is the number of queries in the group.
	Queries int
	// Mean is the mean over those queries of the fraction of their
	// relevant facts found in the top k; 0 for an empty group.
	Mean float64
}

// Result is what [RecallAtK] measured.
type Result struct {
	// K is the cut-off.
	K int
	// All covers every query; Paraphrased the queries that share no word
	// with their relevant facts; Other the rest.
	All, Paraphrased, Other Recall
	// Missed lists, in the order of the set, the IDs of the queries for
	// which at least one relevant fact was not in the top k.
	Missed []string
}

// String formats r on one line, for logs:
// "recall@5 all 0.812 (120) paraphrased 0.200 (35) other 0.950 (85)".
func (r Result) String() string {
	return fmt.Sprintf("recall@%d all %.3f (%d) paraphrased %.3f (%d) other %.3f (%d)",
		r.K, r.All.Mean, r.All.Queries, r.Paraphrased.Mean, r.Paraphrased.Queries, r.Other.Mean, r.Other.Queries)
}

// RecallAtK runs every query of set through search and measures recall@k:
// for each query, the fraction of its relevant facts whose IDs are among
// the first k IDs search returns, averaged over the queries (all of them,
// the paraphrased ones, and the others).
//
// search is given the query text and k, and returns fact IDs (Fact.ID),
// best first; only the first k count, an ID returned twice counts once and
// an unknown ID counts as a miss. A searcher over a store that assigns its
// own IDs maps them back to the set's. RecallAtK fails if k < 1, if set has
// no query, or, with the query's ID, on the first error of search.
func RecallAtK(set Set, k int, search func(query string, k int) ([]string, error)) (Result, error) {
	if k < 1 {
		return Result{}, fmt.Errorf("semantictest: recall@k: k is %d, want at least 1", k)
	}
	if len(set.Queries) == 0 {
		return Result{}, errors.New("semantictest: recall@k: the set has no query")
	}
	r := Result{K: k}
	for _, q := range set.Queries {
		ids, err := search(q.Text, k)
		if err != nil {
			return Result{}, fmt.Errorf("semantictest: recall@k: query %s: %w", q.ID, err)
		}
		r.add(q, foundIn(ids[:min(k, len(ids))], q.Relevant))
	}
	for _, g := range []*Recall{&r.All, &r.Paraphrased, &r.Other} {
		if g.Queries > 0 {
			g.Mean /= float64(g.Queries)
		}
	}
	return r, nil
}

// add counts query q, of which found relevant facts were in the top k,
// in its groups; their Mean is the sum of their recalls until RecallAtK
// divides it.
func (r *Result) add(q Query, found int) {
	recall := 0.0
	if len(q.Relevant) > 0 {
		recall = float64(found) / float64(len(q.Relevant))
	}
	if found < len(q.Relevant) {
		r.Missed = append(r.Missed, q.ID)
	}
	group := &r.Other
	if q.Paraphrase {
		group = &r.Paraphrased
	}
	for _, g := range []*Recall{&r.All, group} {
		g.Queries++
		g.Mean += recall
	}
}

// foundIn returns how many of the IDs relevant are among top.
func foundIn(top, relevant []string) int {
	found := 0
	for _, id := range relevant {
		if slices.Contains(top, id) {
			found++
		}
	}
	return found
}
