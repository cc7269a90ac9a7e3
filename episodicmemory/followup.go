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
	for i := 0; ; {
		j := strings.Index(lower[i:], "too")
		if j < 0 {
			return false
		}
		i += j + len("too")
		before := i - len("too") - 1
		if (before < 0 || !wordByte(lower[before])) && clauseEnds(lower[i:]) {
			return true
		}
	}
}

// wordByte reports whether c is a lower-case ASCII letter or a digit.
func wordByte(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// clauseEnds reports whether rest, the text after a word, ends the
// clause: it is empty or starts with punctuation that closes one.
func clauseEnds(rest string) bool {
	rest = strings.TrimLeft(rest, " \t")
	return rest == "" || strings.ContainsRune(",.;:!?)", rune(rest[0]))
}

// backRefs are the words by which a request refers back to what the
// task did or said, at its start: pronouns ("it", "her", "those"),
// connectives ("and", "then"), answers and corrections ("yes", "no",
// "don't", "just", "actually").
var backRefs = map[string]bool{"it": true, "its": true, "that": true, "this": true, "them": true, "those": true,
	"these": true, "also": true, "too": true, "again": true, "instead": true, "same": true, "there": true, "one": true,
	"and": true, "but": true, "then": true,
	"he": true, "she": true, "him": true, "her": true, "his": true, "they": true, "their": true,
	"yes": true, "no": true, "not": true, "don": true, "dont": true, "just": true, "actually": true, "rather": true}
