package semanticmemory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/internal/lexical"
	"github.com/memlayer/memlayer/internal/textcut"
)

// SkillNamer names and describes a new skill from its steps and the
// requests that started it (Skill.Name holds the deterministic name).
// It is called once per skill, when the skill is made, from the Store of
// the step that made it; it must be safe for concurrent use.
type SkillNamer interface {
	NameSkill(ctx context.Context, s Skill) (name, description string, err error)
}

// ModelNamer is a [SkillNamer] that asks a langchaingo model for a
// skill's name and a one-sentence description.
type ModelNamer struct {
	Model llms.Model
}

// NameSkill asks the model for two lines, "name: ..." and
// "description: ...". An answer without a name is an error.
func (n ModelNamer) NameSkill(ctx context.Context, s Skill) (string, string, error) {
	if n.Model == nil {
		return "", "", errors.New("semanticmemory: ModelNamer has no Model")
	}
	out, err := llms.GenerateFromSinglePrompt(ctx, n.Model, namePrompt(s))
	if err != nil {
		return "", "", fmt.Errorf("semanticmemory: name skill: %w", err)
	}
	name, desc := parseNamed(out)
	if name == "" {
		return "", "", fmt.Errorf("semanticmemory: name skill: the model's answer has no \"name:\" line: %q", textcut.Prefix(out, 120))
	}
	return name, desc, nil
}

// namePrompt is what ModelNamer asks about skill s.
func namePrompt(s Skill) string {
	var b strings.Builder
	b.WriteString("An agent repeated this sequence of tool calls successfully. Name the procedure in at most five words, and describe it in one sentence.\n")
	b.WriteString("Answer with exactly two lines:\nname: <name>\ndescription: <sentence>\n\nRequests that started it:\n")
	for _, t := range s.Triggers {
		b.WriteString("- " + t + "\n")
	}
	b.WriteString("Steps:\n")
	for i, st := range s.Steps {
		fmt.Fprintf(&b, "%d. %s %s\n", i+1, st.Tool, st.Args)
	}
	return b.String()
}

// parseNamed reads the first "name:" and "description:" lines of a
// model's answer.
func parseNamed(out string) (name, desc string) {
	for line := range strings.Lines(out) {
		k, v, _ := strings.Cut(line, ":")
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "name":
			name = cmp.Or(name, strings.TrimSpace(v))
		case "description":
			desc = cmp.Or(desc, strings.TrimSpace(v))
		}
	}
	return name, desc
}

// cleanName returns a namer's name or description on one line, cut at
// n bytes.
func cleanName(s string, n int) string {
	return textcut.Prefix(strings.Join(strings.Fields(s), " "), n)
}

// politeWords are words of a request that say nothing of the task.
var politeWords = []string{"please", "pls", "now", "also", "again", "just", "thanks", "thank", "ok", "okay", "hey", "hi", "need", "want", "like", "let", "actually", "right", "quick"}

// nameWords returns the words of a request that can name a skill:
// lowercased, not stop words, polite words, or tokens with a digit (an
// ID), in order, each once. Compounds ("page-123") are left out: their
// parts are in already.
func nameWords(request string) []string {
	var out []string
	for _, t := range lexical.Tokens(nil, request) {
		if lexical.IsStopWord(t) || slices.Contains(politeWords, t) || strings.ContainsFunc(t, unicode.IsDigit) ||
			strings.ContainsAny(t, "-_.:/") || slices.Contains(out, t) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// deterministicName names a skill from its requests and steps: the
// verb its requests start with, when they all start with the same one
// (the first word of each that is not a stop word, a polite word or an
// ID), then the object of its last step's tool, then the literal values
// of its steps' arguments ("status":"published" gives "published"),
// each word once (by stem) and at most five; without a shared verb, the last
// step's tool in words ("cms_updatePage" gives "update page") and the
// literal values.
//
//	"Publish the About page", "Can you publish Careers?" + cms_getPage → cms_updatePage{status: published}: "publish page"
func deterministicName(triggers []string, steps []SkillStep) string {
	tool := toolWords(steps[len(steps)-1].Tool)
	words := tool
	if v := sharedVerb(triggers); v != "" {
		words = append([]string{v}, tool[min(1, len(tool)-1):]...)
	}
	for _, st := range steps {
		words = append(words, literals(st.Args)...)
	}
	var name, stems []string
	for _, w := range words {
		if st := lexical.Stem(w); !slices.Contains(stems, st) && len(name) < 5 {
			stems = append(stems, st)
			name = append(name, w)
		}
	}
	return cleanName(strings.Join(name, " "), maxNameBytes)
}

// sharedVerb returns the first name word of the triggers when there are
// two or more and all of them start with it, else "".
func sharedVerb(triggers []string) string {
	if len(triggers) < 2 {
		return ""
	}
	var verb string
	for i, t := range triggers {
		w := nameWords(t)
		switch {
		case len(w) == 0:
			return ""
		case i == 0:
			verb = w[0]
		case w[0] != verb:
			return ""
		}
	}
	return verb
}

// literals returns the literal string values of an argument shape, in
// order: the enum-like values that stayed as they were.
func literals(shape string) []string {
	var out []string
	for _, part := range strings.Split(shape, `:"`)[1:] {
		v, _, ok := strings.Cut(part, `"`)
		if ok && enumLike(v) {
			out = append(out, v)
		}
	}
	return out
}

// toolWords splits a tool name into lowercase words, leaving out a
// namespace before the first '_', '.' or '/' ("cms_updatePage" gives
// "update", "page").
func toolWords(tool string) []string {
	if i := strings.IndexAny(tool, "_./"); i > 0 && i < len(tool)-1 {
		tool = tool[i+1:]
	}
	var b strings.Builder
	for _, r := range tool {
		if unicode.IsUpper(r) {
			b.WriteByte(' ') // a camel-case word starts
		}
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			r = ' '
		}
		b.WriteRune(unicode.ToLower(r))
	}
	if words := strings.Fields(b.String()); len(words) > 0 {
		return words
	}
	return []string{"skill"}
}
