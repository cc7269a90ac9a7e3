package route

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/memlayer/memlayer/internal/lexical"
	"github.com/memlayer/memlayer/layer"
)

// The defaults of [Thresholds].
const (
	// DefaultMinImportance refuses a write the model rated below it
	// whose text carries no sign of importance.
	DefaultMinImportance = 0.25
	// DefaultMinNovelty refuses a near-verbatim restatement of what the
	// destination holds.
	DefaultMinNovelty = 0.1
	// DefaultMaxTokens is the largest write kept, in estimated tokens
	// (layer.EstimateTokens).
	DefaultMaxTokens = 2000
)

// Thresholds decide which writes a [Gate] accepts. The zero value is
// the defaults. A negative field turns its check off.
type Thresholds struct {
	// MinImportance is the least [Importance] accepted; zero is
	// [DefaultMinImportance].
	MinImportance float64
	// MinNovelty is the least [Novelty] accepted; zero is
	// [DefaultMinNovelty]. A write below it is a near-duplicate of what
	// its destination holds, and is refused naming the stored item.
	MinNovelty float64
	// MaxTokens is the largest size accepted; zero is
	// [DefaultMaxTokens].
	MaxTokens int
}

// withDefaults returns t with its zero fields set to the defaults.
func (t Thresholds) withDefaults() Thresholds {
	if t.MinImportance == 0 {
		t.MinImportance = DefaultMinImportance
	}
	if t.MinNovelty == 0 {
		t.MinNovelty = DefaultMinNovelty
	}
	if t.MaxTokens == 0 {
		t.MaxTokens = DefaultMaxTokens
	}
	return t
}

// Score is what gating measures of a write.
type Score struct {
	// Importance is the write's [Importance], in [0, 1].
	Importance float64
	// Novelty is the write's [Novelty] against what its destination
	// holds, in [0, 1]; Nearest is the key of the most similar stored
	// item (empty when nothing is stored).
	Novelty float64
	Nearest string
	// Tokens is the write's size, estimated with layer.EstimateTokens.
	Tokens int
}

// String returns the score as the audit shows it.
func (s Score) String() string {
	return fmt.Sprintf("importance %.2f, novelty %.2f, %d tokens", s.Importance, s.Novelty, s.Tokens)
}

// Measure returns the score of w against stored, the items its
// destination holds that are most like it.
func Measure(w layer.Write, stored []layer.Candidate) Score {
	n, key := Novelty(w.Text, stored)
	return Score{Importance: Importance(w), Novelty: n, Nearest: key, Tokens: layer.EstimateTokens(w.Text)}
}

// Admit reports whether thresholds t accept a write of score s, and
// when they do not, why.
func (t Thresholds) Admit(s Score) (bool, string) {
	t = t.withDefaults()
	switch {
	case t.MaxTokens > 0 && s.Tokens > t.MaxTokens:
		return false, fmt.Sprintf("%d tokens is over the %d a write may have: keep a shorter summary", s.Tokens, t.MaxTokens)
	case t.MinImportance > 0 && s.Importance < t.MinImportance:
		return false, fmt.Sprintf("importance %.2f is under %.2f: not important enough to keep", s.Importance, t.MinImportance)
	case t.MinNovelty > 0 && s.Novelty < t.MinNovelty:
		return false, fmt.Sprintf("novelty %.2f is under %.2f: it restates %s, which is kept already", s.Novelty, t.MinNovelty, s.Nearest)
	}
	return true, ""
}

// The signals of [Importance], each with the weight it adds.
const (
	SignalUser     = 0.35 // an explicit statement by or about the user
	SignalDecision = 0.30 // a decision
	SignalFailure  = 0.30 // a failure or an error
	SignalOutcome  = 0.25 // an outcome: something done or reached
	SignalEntity   = 0.20 // a named entity or an ID
)

// A signal is one of the signals of [Importance], by its place in
// signalWeights.
type signal int

const (
	sigUser signal = iota
	sigDecision
	sigFailure
	sigOutcome
	sigEntity
	nSignals
)

// signalWeights are the signals' weights.
var signalWeights = [nSignals]float64{SignalUser, SignalDecision, SignalFailure, SignalOutcome, SignalEntity}

// signalKinds are the kinds that carry a signal by themselves.
var signalKinds = map[string]signal{
	"preference": sigUser, "profile": sigUser, "instruction": sigUser, "constraint": sigUser, KindUserMessage: sigUser,
	"decision": sigDecision, "goal": sigDecision,
	"outcome": sigOutcome, "result": sigOutcome, KindSkill: sigOutcome,
}

// signalCues are the words that carry each signal but sigEntity.
var signalCues = [sigEntity][]string{
	sigUser:     {" i ", " i'm ", " my ", " me ", "the user", "user's", "remember that", "prefer", "always", "never", "please"},
	sigDecision: {"decided", "decision", "we will", "we'll", "chose", "chosen", "agreed", "approved", "going with", "settled on"},
	sigFailure:  {"error", "fail", "exception", "timeout", "timed out", "denied", "not found", "refused", "crash", "invalid", "broken"},
	sigOutcome:  {"published", "created", "completed", "done", "succeeded", "success", "resolved", "fixed", "shipped", "deployed", "sent", "merged"},
}

// Importance returns the importance of w, in [0, 1]: the importance the
// writer gave (w.Importance) raised by each signal its kind or text
// carries, combined as independent chances
//
//	1 − (1 − w.Importance) · Π (1 − signal)
//
// The signals are an explicit statement by or about the user
// ([SignalUser]), a decision ([SignalDecision]), a failure
// ([SignalFailure]), an outcome ([SignalOutcome]) and a named entity or
// ID ([SignalEntity]: a word that mixes letters and digits, such as
// "page-42", or a capitalized word inside a sentence). Each counts once,
// however often it occurs; the text read is its first [ContentBytes].
func Importance(w layer.Write) float64 {
	r := read(w.Text)
	var seen [nSignals]bool
	if s, ok := signalKinds[Normalize(w.Kind)]; ok {
		seen[s] = true
	}
	for s, cues := range signalCues {
		seen[s] = seen[s] || slices.ContainsFunc(cues, func(c string) bool { return strings.Contains(r.lower, c) })
	}
	seen[sigEntity] = namesEntity(r.lower[1:len(r.lower)-1], w.Text)
	keep := 1 - clamp01(w.Importance)
	for s, on := range seen {
		if on {
			keep *= 1 - signalWeights[s]
		}
	}
	return clamp01(1 - keep)
}

// namesEntity reports whether text (lower, lowercased) names an entity
// or an ID: a token that mixes letters and digits, or a capitalized word
// after the first word of a sentence.
func namesEntity(lower, text string) bool {
	return slices.ContainsFunc(lexical.Tokens(nil, lower), isID) || properName(text)
}

// isID reports whether a token mixes letters and digits: pg-42, f3.
func isID(t string) bool {
	return strings.ContainsAny(t, "0123456789") && strings.IndexFunc(t, isLetter) >= 0
}

// properName reports whether text has a capitalized word, other than
// "I", after the first word of a sentence (within its first 400 words).
func properName(text string) bool {
	fields := strings.Fields(text)
	for i := 1; i < len(fields) && i < 400; i++ {
		f, prev := fields[i], fields[i-1]
		if f[0] >= 'A' && f[0] <= 'Z' && !strings.ContainsAny(prev[len(prev)-1:], ".!?:") && f != "I" && !strings.HasPrefix(f, "I'") {
			return true
		}
	}
	return false
}

func isLetter(r rune) bool { return r >= 'a' && r <= 'z' || r > 0x7f }

// clamp01 returns x within [0, 1]; NaN is 0.
func clamp01(x float64) float64 {
	if !(x > 0) {
		return 0
	}
	return min(x, 1)
}

// selfKey is the key the write's own text takes among the stored items
// when their similarity is measured.
const selfKey = "\x00self"

// Novelty returns how new text is against stored, in [0, 1], and the key
// of the most similar stored item: 1 − the highest similarity of a stored
// item to text, where similarity is the item's BM25 score for text
// (package internal/lexical, over the stored items and text itself)
// divided by the score of text itself, at most 1. A restatement word for
// word has novelty 0; a text that shares no term with any stored item
// has novelty 1, as has any text when nothing is stored. A stored item's
// leading bracketed reference ("[f3 preference] ") is not compared.
func Novelty(text string, stored []layer.Candidate) (float64, string) {
	if len(stored) == 0 {
		return 1, ""
	}
	var c lexical.Corpus
	c.Add(selfKey, text)
	for _, s := range stored {
		c.Add(s.Key, unref(s.Text))
	}
	self, best, key := 0.0, 0.0, ""
	for _, h := range c.Rank(text) {
		switch {
		case h.Doc == 0:
			self = h.Score
		case h.Score > best:
			best, key = h.Score, h.Key
		}
	}
	if self == 0 {
		return 1, ""
	}
	return 1 - min(best/self, 1), key
}

// unref returns text without a leading bracketed reference.
func unref(text string) string {
	if strings.HasPrefix(text, "[") {
		if i := strings.IndexByte(text, ']'); i > 0 && i < 80 {
			return strings.TrimSpace(text[i+1:])
		}
	}
	return text
}

// Verdict is a [Gate]'s decision on a write.
type Verdict struct {
	Score
	// Accept is true when the write may be kept.
	Accept bool
	// Reason says why a write is refused; empty when it is accepted.
	Reason string
}

// Admitter is implemented by a [Router] that gates what it routes. After
// the route, the keeper of the writes asks Admit, with stored: the
// candidates the destination layer offers for the write's text (see
// layer.CandidateSource; none when it offers none). A write it does not
// accept is refused with the verdict's reason. Admit may be called
// concurrently. Without it, every write a Router routes is kept.
type Admitter interface {
	Admit(ctx context.Context, w layer.Write, stored []layer.Candidate) Verdict
}

// Gate is a [Router] that routes as Router does ([Default]'s table and
// content when nil) and gates each write by Thresholds. The zero Gate is
// [Default].
type Gate struct {
	Router     Router
	Thresholds Thresholds
}

// Route routes w with g.Router, or like [Default] when it is nil.
func (g Gate) Route(ctx context.Context, w layer.Write) Route {
	if g.Router != nil {
		return g.Router.Route(ctx, w)
	}
	return routeByKind(w)
}

// Admit implements [Admitter]: it measures w against stored and accepts
// it when g.Thresholds do.
func (g Gate) Admit(_ context.Context, w layer.Write, stored []layer.Candidate) Verdict {
	s := Measure(w, stored)
	ok, why := g.Thresholds.Admit(s)
	return Verdict{Score: s, Accept: ok, Reason: why}
}
