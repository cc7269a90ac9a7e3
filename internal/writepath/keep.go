package writepath

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/route"
)

// Keeper routes memory writes and keeps them in a stack's layers,
// auditing each route and write: for the agent loop (a run's memorize
// calls and its Proposers' writes) and for the langchaingo [Memory] (its
// Proposers' writes).
type Keeper struct {
	Stack  *layer.Stack
	Router route.Router
	Logger *slog.Logger
	Audit  *Auditor // nil audits nothing
	Depth  int
	// Recovered logs a recovered panic and returns it as an error.
	Recovered func(ctx context.Context, where string, p any) error
}

// route asks the router where w goes; a panic refuses it.
func (k *Keeper) route(ctx context.Context, w layer.Write) (rt route.Route) {
	defer func() {
		if p := recover(); p != nil {
			err := k.Recovered(ctx, "the router", p)
			rt = route.Route{Reason: "the router failed: " + err.Error()}
		}
	}()
	return k.Router.Route(ctx, w)
}

// target finds the layer a route names: a layer ID of the stack, or a
// sort of write a Keeper keeps (own is the layer that offered the write,
// which takes a sort it keeps). It returns nil and why when there is none.
func (k *Keeper) target(name string, own layer.Layer) (layer.Layer, string) {
	if l, ok := layer.Find[layer.Layer](k.Stack, name); ok {
		return l, ""
	}
	// own (nil for a Proposer's write) first, then the stack's layers.
	for _, l := range append([]layer.Layer{own}, k.Stack.Layers()...) {
		if kp, ok := layer.As[layer.Keeper](l); ok && kp.Keeps() == name {
			return l, ""
		}
	}
	if slices.Contains([]string{layer.KeepsScratchpad, layer.KeepsEpisodic, layer.KeepsSemantic}, name) {
		return nil, fmt.Sprintf("the router chose the %s, and the agent has no %s layer", name, name)
	}
	return nil, fmt.Sprintf("the router chose layer %q, which the agent does not have", name)
}

// OfferedTool is a layer's function as the model is offered it.
type OfferedTool struct {
	Layer layer.Layer
	Fn    layer.Function // as the layer declares it (Name is the function's own)
	// KeepArgs is true when the redactor leaves its arguments alone
	// (see Redactor.MasksTools).
	KeepArgs bool
}

// OfferedTools returns the layer functions of s by the names a model may
// call them by: their tool names (layer.ToolName), aliases and
// deprecated names (layer.DeprecatedToolName). A function
// whose tool name the stack had to tell apart from another's (a hash
// suffix) is not listed; the stack still runs it, unaudited, with its
// arguments masked.
func OfferedTools(s *layer.Stack, rd *Redactor) map[string]OfferedTool {
	out := map[string]OfferedTool{}
	for _, l := range s.Layers() {
		p, ok := layer.As[layer.Provider](l)
		if !ok {
			continue
		}
		keep := !rd.MasksTools(l)
		for _, fn := range p.Functions() {
			t := OfferedTool{Layer: l, Fn: fn, KeepArgs: keep}
			out[layer.ToolName(l.Spec().ID, fn.Name)] = t
			aliases := fn.Aliases
			if old, ok := layer.DeprecatedToolName(l.Spec(), fn.Name); ok {
				aliases = append(slices.Clip(aliases), old)
			}
			for _, alias := range aliases {
				if _, taken := out[alias]; !taken {
					out[alias] = t
				}
			}
		}
	}
	return out
}

// writeArgs are the arguments of a write tool (layer.EffectWrite).
type writeArgs struct {
	Text       string   `json:"text"`
	Kind       string   `json:"kind"`
	Importance *float64 `json:"importance"`
}

// ToolEntry is the audit entry of a call of layer l's function fn,
// offered as name, that succeeded with arguments args: an update, a
// forget, or a write when nothing routed it (under the langchaingo
// Memory, whose exported tools call the layer directly). It is false for
// a function whose calls are not audited (layer.EffectNone).
func ToolEntry(l layer.Layer, fn layer.Function, name, args string, step, depth int) (audit.Entry, bool) {
	e := audit.Entry{Step: step, Depth: depth, Layer: l.Spec().ID, Source: "by=model tool=" + name}
	switch fn.Effect {
	case layer.EffectUpdate:
		e.Op, e.Kind, e.Text = audit.OpWrite, "update", args
	case layer.EffectForget:
		var a struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal([]byte(args), &a) // it ran: the arguments were an object with an id
		e.Op, e.Key = audit.OpForget, a.ID
	case layer.EffectWrite:
		var a writeArgs
		_ = json.Unmarshal([]byte(args), &a)
		e.Op, e.Kind, e.Text, e.Importance = audit.OpWrite, cmp.Or(strings.ToLower(a.Kind), layer.DefaultKind), a.Text, layer.DefaultImportance
		if a.Importance != nil {
			e.Importance = *a.Importance
		}
	default:
		return audit.Entry{}, false
	}
	return e, true
}

// source is a write's Source: its non-empty parts, "by=model step=3
// tool=semantic_memory_memorize".
func source(by string, step int, tool string) string {
	var parts []string
	if by != "" {
		parts = append(parts, "by="+by)
	}
	if step != 0 {
		parts = append(parts, "step="+strconv.Itoa(step))
	}
	if tool != "" {
		parts = append(parts, "tool="+tool)
	}
	return strings.Join(parts, " ")
}

// Memorize keeps the write of a call of write tool fn (offered as tool,
// in step) whose arguments raw were checked against the tool's schema:
// own is the layer that offers the tool.
func (k *Keeper) Memorize(ctx context.Context, own layer.Layer, fn string, raw json.RawMessage, step int, tool string) (string, error) {
	var in writeArgs
	if err := json.Unmarshal(raw, &in); err != nil {
		return "", fmt.Errorf("%s: %w", fn, err)
	}
	w := layer.Write{Kind: cmp.Or(strings.ToLower(in.Kind), layer.DefaultKind), Text: in.Text, Importance: layer.DefaultImportance,
		Source: source("model", step, tool), Layer: own.Spec().ID, By: "model", Step: step, Tool: tool}
	if in.Importance != nil {
		w.Importance = *in.Importance
	}
	out, err := k.Keep(ctx, w, own)
	if err != nil {
		return "", fmt.Errorf("%s: %w", fn, err)
	}
	return out, nil
}

// Keep routes w and keeps it where the router says, auditing the route
// and the write: own is the layer whose write tool offered it (nil for a
// Proposer's write). It returns what the write tool answers.
func (k *Keeper) Keep(ctx context.Context, w layer.Write, own layer.Layer) (string, error) {
	step := w.Step
	rt := k.route(ctx, w)
	ev := audit.Entry{Op: audit.OpRoute, Step: step, Depth: k.Depth, Kind: w.Kind, Text: w.Text, Importance: w.Importance, Source: w.Source}
	l, dest, reason := k.destination(rt, own)
	ev.Reason = reason
	if dest == nil {
		ev.Refused = true
		k.Audit.Add(ev)
		return "", fmt.Errorf("refused: %s", ev.Reason)
	}
	id := l.Spec().ID
	if tm := l.Spec().Timeout; tm > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, tm)
		defer cancel()
	}
	if v, gated := k.admit(ctx, w, l); gated {
		ev.Reason += "; " + v.Score.String()
		if !v.Accept {
			ev.Refused, ev.Reason = true, v.Reason+" ("+v.Score.String()+")"
			k.Audit.Add(ev)
			return "", fmt.Errorf("%w: %s", errGated, ev.Reason)
		}
	}
	ev.Layer = id
	k.Audit.Add(ev)
	w.Reason = rt.Reason
	kept, err := dest.Keep(ctx, w)
	if err != nil {
		return "", err
	}
	if !kept.Unchanged {
		k.auditKept(w, id, kept)
	}
	return kept.Reply, nil
}

// admit asks the router, when it gates (route.Admitter), whether w may
// be kept by layer l, giving it the candidates l offers for w's text
// (layer.CandidateSource). It is false when the router does not gate. A
// failure to read the candidates is logged and gates against nothing
// stored; a panic in Admit or Candidates refuses the write.
func (k *Keeper) admit(ctx context.Context, w layer.Write, l layer.Layer) (v route.Verdict, gated bool) {
	g, ok := k.Router.(route.Admitter)
	if !ok {
		return route.Verdict{}, false
	}
	defer func() {
		if p := recover(); p != nil {
			err := k.Recovered(ctx, "the router's gate", p)
			v, gated = route.Verdict{Reason: "the router's gate failed: " + err.Error()}, true
		}
	}()
	var stored []layer.Candidate
	if cs, ok := layer.As[layer.CandidateSource](l); ok {
		var err error
		stored, err = cs.Candidates(ctx, layer.Query{Text: w.Text, Situation: w.Text, Budget: layer.Unbounded})
		if err != nil {
			k.Logger.LogAttrs(ctx, slog.LevelWarn, "agentloop: gating read no stored items", slog.String("layer", l.Spec().ID), slog.Any("error", err))
			stored = nil
		}
	}
	return g.Admit(ctx, w, stored), true
}

// destination returns the layer rt chose for a write, as itself and as a
// layer.Keeper, with rt's reason; when there is none (the router refused
// the write, or chose a layer that is not there or does not take routed
// writes), it returns nils and why.
func (k *Keeper) destination(rt route.Route, own layer.Layer) (layer.Layer, layer.Keeper, string) {
	if rt.Layer == "" {
		return nil, nil, cmp.Or(rt.Reason, "refused by the router")
	}
	l, why := k.target(rt.Layer, own)
	if l == nil {
		return nil, nil, why
	}
	dest, _ := layer.As[layer.Keeper](l)
	if dest == nil {
		return nil, nil, fmt.Sprintf("the router chose layer %s, which does not take routed writes", l.Spec().ID)
	}
	return l, dest, rt.Reason
}

// auditKept audits the write w that layer id kept (and what it
// superseded and evicted).
func (k *Keeper) auditKept(w layer.Write, id string, kept layer.Kept) {
	text := cmp.Or(kept.Text, w.Text)
	write := audit.Entry{Op: audit.OpWrite, Step: w.Step, Depth: k.Depth, Layer: id, Kind: w.Kind, Text: text, Bytes: len(text), Importance: w.Importance,
		Source: cmp.Or(kept.Source, w.Source), Key: kept.Key, Version: kept.Version}
	k.Audit.Add(write)
	if kept.Version > 1 {
		k.Audit.Add(audit.Entry{Op: audit.OpSupersede, Step: w.Step, Depth: k.Depth, Layer: id, Kind: cmp.Or(kept.Kind, w.Kind), Key: kept.Key, Version: kept.Version, Source: write.Source})
	}
	for _, key := range kept.Evicted {
		k.Audit.Add(audit.Entry{Op: audit.OpEvict, Step: w.Step, Depth: k.Depth, Layer: id, Key: key, Count: 1, Source: write.Source})
	}
}

// Proposer is a layer of a stack that is a layer.Proposer.
type Proposer struct {
	l layer.Layer
	p layer.Proposer
}

// Proposers returns the layer.Proposers among s's layers, in slot order.
func Proposers(s *layer.Stack) []Proposer {
	out := []Proposer{}
	for _, l := range s.Layers() {
		if p, ok := layer.As[layer.Proposer](l); ok {
			out = append(out, Proposer{l, p})
		}
	}
	return out
}

// KeepProposals keeps the writes proposers proposed in step (see
// layer.Proposer), masked by rd as their layer's tool arguments would be
// (counted in n). An empty Kind is layer.DefaultKind, a zero Importance
// layer.DefaultImportance; Source, Layer, By and Step are set here. A
// write with no text, or an Importance outside [0, 1], is refused. A
// write that cannot be kept is audited and logged; the step goes on.
func (k *Keeper) KeepProposals(ctx context.Context, proposers []Proposer, step int, rd *Redactor, n *Counts) {
	for _, pl := range proposers {
		l, p := pl.l, pl.p
		id := l.Spec().ID
		for _, w := range k.proposals(ctx, id, p) {
			by := "layer:" + id
			w.Kind = cmp.Or(strings.ToLower(strings.TrimSpace(w.Kind)), layer.DefaultKind)
			w.Importance = cmp.Or(w.Importance, layer.DefaultImportance)
			w.Source, w.Layer, w.By, w.Step, w.Tool, w.Reason = source(by, step, ""), id, by, step, "", ""
			if rd.MasksTools(l) {
				w.Text = rd.Text(w.Text, nil, n)
			}
			if err := k.keepProposal(ctx, w); err != nil {
				k.Logger.LogAttrs(ctx, proposalLevel(err), "agentloop: a proposed write was not kept", slog.String("layer", id), slog.String("kind", w.Kind), slog.Any("error", err))
			}
		}
	}
}

// errGated is the error of a write the router's gate refused; its text
// is "refused".
var errGated = errors.New("refused")

// proposalLevel is the level a proposal that was not kept is logged at:
// debug when the gate refused it (a Proposer may propose what is kept
// already, every turn; the audit has it), else a warning.
func proposalLevel(err error) slog.Level {
	if errors.Is(err, errGated) {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

// keepProposal keeps a proposed write, or refuses it (audited) when it
// has no text or its Importance is outside [0, 1].
func (k *Keeper) keepProposal(ctx context.Context, w layer.Write) error {
	var why string
	switch {
	case strings.TrimSpace(w.Text) == "":
		why = "empty text"
	case !(w.Importance >= 0 && w.Importance <= 1): // NaN too
		why = fmt.Sprintf("importance %v is not in [0, 1]", w.Importance)
		w.Importance = 0 // the audit keeps finite numbers only
	default:
		_, err := k.Keep(ctx, w, nil)
		return err
	}
	k.Audit.Add(audit.Entry{Op: audit.OpRoute, Step: w.Step, Depth: k.Depth, Kind: w.Kind, Text: w.Text, Source: w.Source, Reason: why, Refused: true})
	return errors.New("refused: " + why)
}

// proposals calls p.Proposals, a panic recovered and logged.
func (k *Keeper) proposals(ctx context.Context, id string, p layer.Proposer) (ws []layer.Write) {
	defer func() {
		if v := recover(); v != nil {
			_ = k.Recovered(ctx, "Proposals of layer "+id, v)
			ws = nil
		}
	}()
	return p.Proposals()
}
