package semanticmemory

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/memlayer/memlayer/internal/jsonx"
	"github.com/memlayer/memlayer/internal/textcut"
	"github.com/memlayer/memlayer/layer"
)

// SkillKind is the kind of the facts that hold skills.
const SkillKind = "skill"

// Defaults of [SkillConfig].
const (
	// DefaultSkillMinSuccesses is how many successful turns of one step
	// sequence make it a skill.
	DefaultSkillMinSuccesses = 2
	// DefaultSkillMaxEvidence is how many evidence entries a skill keeps
	// (the newest).
	DefaultSkillMaxEvidence = 4
	// DefaultSkillMaxCandidates is how many sequences not yet skills a
	// scope counts (the most recently seen).
	DefaultSkillMaxCandidates = 64
	// DefaultSkillMaxSteps is the longest sequence, in steps, that can
	// become a skill.
	DefaultSkillMaxSteps = 12
	// DefaultSkillImportance is the importance of a skill fact.
	DefaultSkillImportance = 0.6
)

// Bounds of a skill's parts.
const (
	// maxTriggers is how many distinct requests a skill keeps as its
	// triggers (the newest).
	maxTriggers = 2
	// maxTriggerBytes caps one trigger.
	maxTriggerBytes = 160
	// maxNameBytes caps a skill's name, maxDescBytes its description.
	maxNameBytes = 64
	maxDescBytes = 240
	// maxRefs caps the episode references of one evidence entry.
	maxRefs = 16
	// maxMinSuccesses caps SkillConfig.MinSuccesses, which bounds a
	// candidate's evidence.
	maxMinSuccesses = 16
)

// SkillConfig tunes skill extraction (see [Skill]). The zero SkillConfig
// is valid: the defaults above, deterministic names.
type SkillConfig struct {
	// MinSuccesses is how many successful turns of the same step
	// sequence (across the scope's threads) make it a skill. Zero means
	// DefaultSkillMinSuccesses; at most 16.
	MinSuccesses int
	// MaxEvidence caps the evidence a skill keeps, the newest first
	// dropped last. Zero means DefaultSkillMaxEvidence.
	MaxEvidence int
	// MaxCandidates caps the sequences seen but not yet skills that a
	// scope counts, in eight records of an eighth each (rounded up); the
	// least recently seen of a record is dropped first. Zero means
	// DefaultSkillMaxCandidates.
	MaxCandidates int
	// MaxSteps is the longest sequence that becomes a skill: a turn of
	// more tool calls (after repeats are folded) is not a procedure one
	// reuses. Zero means DefaultSkillMaxSteps.
	MaxSteps int
	// Importance is the importance of skill facts. Zero means
	// DefaultSkillImportance.
	Importance float64
	// Namer names and describes a new skill; nil names it from its
	// requests' shared words (see [Skill.Name]). A namer's error is
	// reported and the deterministic name used.
	Namer SkillNamer
	// IgnoreTools are tool names, or name prefixes ending in '_', whose
	// calls are left out of sequences. Nil means
	// DefaultSkillIgnoreTools; the layer's own tools are always left out.
	IgnoreTools []string
}

// DefaultSkillIgnoreTools are the tools of memlayer's built-in layers
// (under their default IDs, and under their deprecated names from before
// the naming scheme): memory operations, not steps of a workflow.
var DefaultSkillIgnoreTools = []string{"working_memory_", "entity_memory_", "episodic_memory_", "semantic_memory_", "kv_", "history_summary_", "summary_",
	"working-memory_", "entities_", "episodic-memory_", "semantic_"}

func (c *SkillConfig) check() error {
	switch {
	case c.MinSuccesses < 0 || c.MinSuccesses > maxMinSuccesses:
		return fmt.Errorf("%w: Skills.MinSuccesses %d is not in [0, %d]", ErrInvalidConfig, c.MinSuccesses, maxMinSuccesses)
	case c.MaxEvidence < 0 || c.MaxCandidates < 0 || c.MaxSteps < 0:
		return fmt.Errorf("%w: Skills.MaxEvidence, MaxCandidates and MaxSteps must not be negative", ErrInvalidConfig)
	case !(c.Importance >= 0 && c.Importance <= 1):
		return fmt.Errorf("%w: Skills.Importance %v is not in [0, 1]", ErrInvalidConfig, c.Importance)
	}
	return nil
}

func (c *SkillConfig) defaults() {
	c.MinSuccesses = cmp.Or(c.MinSuccesses, DefaultSkillMinSuccesses)
	c.MaxEvidence = cmp.Or(c.MaxEvidence, DefaultSkillMaxEvidence)
	c.MaxCandidates = cmp.Or(c.MaxCandidates, DefaultSkillMaxCandidates)
	c.MaxSteps = cmp.Or(c.MaxSteps, DefaultSkillMaxSteps)
	c.Importance = cmp.Or(c.Importance, DefaultSkillImportance)
	if c.IgnoreTools == nil {
		c.IgnoreTools = DefaultSkillIgnoreTools
	}
	c.IgnoreTools = slices.Clone(c.IgnoreTools)
}

// Skill is procedural memory: a sequence of tool calls that reached a
// successful outcome in several turns, with the values that vary
// (IDs, free text, times) abstracted. It is kept as a fact of kind
// [SkillKind], whose text renders it for recall.
type Skill struct {
	// Name says what the skill does ("publish page"): the words the
	// requests that started it share, in the order of the first one; or
	// the last step's tool in words when they share none; or a
	// [SkillNamer]'s.
	Name string `json:"name"`
	// Description is a [SkillNamer]'s sentence about it; empty without
	// one.
	Description string `json:"desc,omitempty"`
	// Steps are the tool calls, in order, a repeated call folded into
	// one.
	Steps []SkillStep `json:"steps"`
	// Triggers are the user requests that started the sequence, the
	// newest last, at most two.
	Triggers []string `json:"triggers,omitempty"`
	// Successes counts the successful turns that followed the steps.
	Successes int `json:"successes"`
	// Evidence names those turns, the newest last, at most
	// SkillConfig.MaxEvidence.
	Evidence []Evidence `json:"evidence,omitempty"`
	// Signature identifies the step sequence: the same steps give the
	// same signature, and one skill.
	Signature string `json:"sig"`
}

// SkillStep is one step of a skill: a tool and the shape of its
// arguments (JSON with sorted keys, varying values as placeholders such
// as [PlaceholderID]).
type SkillStep struct {
	Tool string `json:"tool"`
	Args string `json:"args"`
}

// Evidence is one successful turn of a skill: its thread and the
// references of its episodes, the tool call IDs that the episodic
// memory's read tool takes.
type Evidence struct {
	Thread string   `json:"thread,omitempty"`
	Refs   []string `json:"refs"`
}

// validate reports whether a stored skill is one the layer could have
// written.
func (s *Skill) validate() error {
	switch {
	case s.Name == "" || len(s.Name) > maxNameBytes:
		return fmt.Errorf("skill name %q must be 1 to %d bytes", s.Name, maxNameBytes)
	case len(s.Steps) == 0:
		return errors.New("skill has no steps")
	case s.Successes < 1:
		return fmt.Errorf("skill success count %d < 1", s.Successes)
	case s.Signature != signature(s.Steps):
		return fmt.Errorf("skill signature %q does not match its steps", s.Signature)
	}
	return nil
}

// text renders the skill as its fact's text, one line: its name, how
// often it worked, the requests that started it and the steps.
//
//	Skill "publish page" (succeeded 4 times; for requests like "Publish the About page"): cms_getPage {"id":"<id>"} → cms_updatePage {"id":"<id>","status":"published"}
func (s *Skill) text() string {
	var b strings.Builder
	b.WriteString("Skill ")
	b.WriteString(strconv.Quote(s.Name))
	b.WriteString(" (succeeded ")
	b.WriteString(strconv.Itoa(s.Successes))
	b.WriteString(" times")
	if n := len(s.Triggers); n > 0 {
		b.WriteString("; for requests like ")
		for i := n - 1; i >= max(0, n-2); i-- { // the two newest
			if i < n-1 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Quote(s.Triggers[i]))
		}
	}
	b.WriteString("): ")
	for i, st := range s.Steps {
		if i > 0 {
			b.WriteString(" → ")
		}
		b.WriteString(st.Tool)
		b.WriteByte(' ')
		b.WriteString(st.Args)
	}
	if s.Description != "" {
		b.WriteString(". ")
		b.WriteString(s.Description)
	}
	return textcut.Prefix(strings.Join(strings.Fields(b.String()), " "), MaxTextBytes)
}

// turnSeq is the tool sequence of the turn a run is in, as its steps
// are stored: what becomes a skill if the turn ends well.
type turnSeq struct {
	started bool
	query   string
	last    int // the step last seen
	steps   []SkillStep
	refs    []string
	failed  bool // a call failed, or the sequence grew too long
}

// observe takes step t into the turn's sequence and reports whether t
// ends the turn (a model answer without tool calls). Another query, or a
// step that does not follow the last, starts a new turn.
func (q *turnSeq) observe(t layer.Turn, cfg *SkillConfig, own func(string) bool) bool {
	if !q.started || t.Query != q.query || t.Step <= q.last {
		*q = turnSeq{started: true, query: t.Query}
	}
	q.last = t.Step
	if len(t.ToolCalls) == 0 {
		return true
	}
	if len(t.Results) != len(t.ToolCalls) {
		q.failed = true // calls without outcomes: success unknown
		return false
	}
	for _, r := range t.Results {
		if !own(r.Name) && !ignored(r.Name, cfg.IgnoreTools) {
			q.take(r, cfg.MaxSteps)
		}
	}
	return false
}

// take adds the call of result r to the sequence, folding a repeat of
// the step before, and marks the sequence failed when the call failed or
// the sequence grows past maxSteps.
func (q *turnSeq) take(r layer.ToolResult, maxSteps int) {
	q.failed = q.failed || r.IsError || errorResult(r.Content)
	st := SkillStep{Tool: r.Name, Args: argShape(r.Arguments)}
	if n := len(q.steps); n == 0 || q.steps[n-1] != st {
		q.steps = append(q.steps, st)
	}
	if r.ID != "" && len(q.refs) < maxRefs {
		q.refs = append(q.refs, r.ID)
	}
	q.failed = q.failed || len(q.steps) > maxSteps
}

// succeeded reports whether the ended turn's sequence is a success to
// learn from: it has steps, none failed, and the answer reports no
// failure.
func (q *turnSeq) succeeded(answer string) bool {
	return len(q.steps) > 0 && !q.failed && !failedAnswer(answer)
}

// ignored reports whether tool is in names, or starts with one of them
// that ends in '_'.
func ignored(tool string, names []string) bool {
	for _, n := range names {
		if tool == n || strings.HasSuffix(n, "_") && strings.HasPrefix(tool, n) {
			return true
		}
	}
	return false
}

// failureStatus are the values of a result's "status" that say the call
// failed.
var failureStatus = []string{"error", "failed", "failure", "fail", "rejected", "denied"}

// errorResult reports whether a tool's result says it failed although
// the tool returned it normally: a JSON object with a non-empty "error"
// or "errors", "ok" or "success" false, or a failure "status"; or text
// that starts with "error" or "failed".
func errorResult(content string) bool {
	c := strings.TrimSpace(content)
	if !strings.HasPrefix(c, "{") {
		head := strings.ToLower(c[:min(len(c), 8)])
		return strings.HasPrefix(head, "error") || strings.HasPrefix(head, "failed")
	}
	v, _ := jsonx.ScanValue([]byte(c), 0)
	var buf [16]jsonx.Field
	return slices.ContainsFunc(v.Fields(buf[:0]), errorMember)
}

// errorMember reports whether a member of a result object says the call
// failed.
func errorMember(f jsonx.Field) bool {
	switch strings.ToLower(string(f.Key)) {
	case "error", "errors":
		return !f.Value.Empty()
	case "ok", "success":
		return f.Value.Kind == jsonx.KindBool && string(f.Value.Raw) == "false"
	case "status":
		return slices.Contains(failureStatus, strings.ToLower(f.Value.Scalar()))
	}
	return false
}

// failurePhrases say that a turn's answer reports a failure.
var failurePhrases = []string{"fail", "error", "couldn't", "couldn’t", "could not", "cannot", "can't", "can’t",
	"unable", "not able", "did not work", "didn't work", "not found", "denied", "forbidden", "sorry"}

// failedAnswer reports whether the model's answer that ends a turn
// says the turn failed: it holds one of failurePhrases, in any case.
func failedAnswer(answer string) bool {
	a := strings.ToLower(answer)
	return slices.ContainsFunc(failurePhrases, func(p string) bool { return strings.Contains(a, p) })
}
