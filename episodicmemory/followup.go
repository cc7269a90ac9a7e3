package episodicmemory

import (
	"slices"
	"strings"

	"github.com/memlayer/memlayer/internal/lexical"
)

// Follow-ups. A request that goes on with the current task often names
// nothing the task holds: it points back with a pronoun ("publish it"),
// answers or corrects the last reply ("no, don't promise a discount"),
// adds to what was done ("flag the supplier too"), or asks about the
// task's subject in the task's own words ("what address do we have for
// the customer?"). These are the cues newTask reads.

// followsUp reports whether a request goes on with the current task
// although its calls touch entities the task does not hold: it refers
// back (see refersBack), or every one of its content terms is the
// task's.
func (tr *tracker) followsUp(query string) bool {
	if refersBack(query) {
		return true
	}
	sim, n := tr.similarity(query)
	return n > 0 && sim == 1
}

// refersBack reports whether a request refers back to the task: one of
// its first three words is a back reference (see backRefs), or it adds
// to what was done (see adds).
func refersBack(query string) bool {
	lower := strings.ToLower(query)
	toks := lexical.Tokens(nil, lower)
	return slices.ContainsFunc(toks[:min(len(toks), 3)], func(t string) bool { return backRefs[t] }) || adds(lower, toks)
}

// adds reports whether a lower-cased request, of tokens toks, adds to
// what the task did: it holds "also" or "as well", or "too" that ends a
// clause ("cancel their orders too", not "it is too long").
func adds(lower string, toks []string) bool {
	if slices.Contains(toks, "also") || strings.Contains(lower, "as well") {
		return true
	}
	for clause := range strings.FieldsFuncSeq(lower, clauseMark) {
		rest, ok := strings.CutSuffix(strings.TrimSpace(clause), "too")
		if ok && (rest == "" || strings.HasSuffix(rest, " ")) {
			return true
		}
	}
	return false
}

// clauseMark reports whether r is punctuation that ends a clause.
func clauseMark(r rune) bool { return strings.ContainsRune(",.;:!?()", r) }

// backRefs are the words by which a request refers back to what the
// task did or said, at its start: pronouns ("it", "her", "those"),
// connectives ("and", "then"), answers and corrections ("yes", "no",
// "don't", "just", "actually").
var backRefs = map[string]bool{"it": true, "its": true, "that": true, "this": true, "them": true, "those": true,
	"these": true, "also": true, "too": true, "again": true, "instead": true, "same": true, "there": true, "one": true,
	"and": true, "but": true, "then": true,
	"he": true, "she": true, "him": true, "her": true, "his": true, "they": true, "their": true,
	"yes": true, "no": true, "not": true, "don": true, "dont": true, "just": true, "actually": true, "rather": true}
