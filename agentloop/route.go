package agentloop

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/workingmemory"
)

// Write is a memory write offered to the [Router]: what the model asked
// semantic memory's memorize tool to keep, or what a [Proposer] layer's
// Store proposed.
type Write struct {
	// Kind is the write's kind, lowercased ("fact" when none was
	// given): "preference", "reasoning", "outcome", ...
	Kind string
	// Text is what to keep, redacted as it would be stored.
	Text string
	// Importance is in [0, 1].
	Importance float64
	// Source says who asked and where: "by=model step=2
	// tool=semantic_memorize", or "by=layer:<id> step=2" for a
	// Proposer's.
	Source string
	// Layer is the ID of the layer whose tool offered the write, or of
	// the Proposer.
	Layer string
}

// Route is where a [Router] sends a write.
type Route struct {
	// Layer is the layer that keeps the write: a layer ID of the run's
	// stack, or one of RouteScratchpad, RouteEpisodic and RouteSemantic
	// for the first layer of that sort (for RouteSemantic, the layer
	// whose tool offered the write). Empty refuses the write.
	Layer string
	// Reason says why, for the audit (and, for a refusal, the model).
	Reason string
}

// The sorts of layer a [Route] can name instead of a layer ID.
const (
	// RouteScratchpad is the scratchpad (a *workingmemory.Layer): the
	// write is merged into its state under the write's kind, so the
	// model sees it in later steps and turns of the thread, until it is
	// replaced.
	RouteScratchpad = "scratchpad"
	// RouteEpisodic is the episode log (a *episodicmemory.Layer), which
	// logs the memorize call as the step's episode: kept with its time
	// and step, recalled while relevant and recent, never as a fact.
	RouteEpisodic = "episodic"
	// RouteSemantic is semantic memory (a *semanticmemory.Layer): a
	// durable fact, superseding one it restates.
	RouteSemantic = "semantic"
)

// A Router decides where a memory write goes, or refuses it. Route may
// be called concurrently (the tool calls of a step run concurrently); a
// panic refuses the write.
type Router interface {
	Route(ctx context.Context, w Write) Route
}

// RouterFunc adapts a function to a [Router].
type RouterFunc func(ctx context.Context, w Write) Route

// Route calls f.
func (f RouterFunc) Route(ctx context.Context, w Write) Route { return f(ctx, w) }

// DefaultRouter routes a write by its kind, with a fixed table and no
// model call:
//
//   - transient reasoning — reasoning, transient, thought, plan,
//     scratch — to the scratchpad;
//   - an actionable outcome — outcome, action, result, event, task — to
//     the episode log;
//   - a distilled durable fact — fact, preference, profile, decision,
//     note, instruction, goal, constraint — to semantic memory;
//
// and refuses any other kind, naming it and the kinds it knows.
var DefaultRouter Router = RouterFunc(defaultRoute)

// routeTable is DefaultRouter's.
var routeTable = map[string]Route{}

func init() {
	for _, k := range []string{"reasoning", "transient", "thought", "plan", "scratch"} {
		routeTable[k] = Route{Layer: RouteScratchpad, Reason: "transient reasoning goes to the scratchpad"}
	}
	for _, k := range []string{"outcome", "action", "result", "event", "task"} {
		routeTable[k] = Route{Layer: RouteEpisodic, Reason: "an actionable outcome goes to the episode log"}
	}
	for _, k := range []string{"fact", "preference", "profile", "decision", "note", "instruction", "goal", "constraint"} {
		routeTable[k] = Route{Layer: RouteSemantic, Reason: "a durable fact goes to semantic memory"}
	}
}

func defaultRoute(_ context.Context, w Write) Route {
	if r, ok := routeTable[w.Kind]; ok {
		return r
	}
	return Route{Reason: fmt.Sprintf("kind %q is not one the default router knows: reasoning, transient, thought, plan, scratch (the scratchpad); "+
		"outcome, action, result, event, task (the episode log); fact, preference, profile, decision, note, instruction, goal, constraint (semantic memory)", w.Kind)}
}

// keeper routes memory writes and keeps them in a stack's layers,
// auditing each route and write: for the agent loop (a run's memorize
// calls and its Proposers' writes) and for the langchaingo [Memory] (its
// Proposers' writes).
type keeper struct {
	stack  *layer.Stack
	router Router
	logger *slog.Logger
	audit  *auditor // nil audits nothing
	depth  int
	// recovered logs a recovered panic and returns it as an error.
	recovered func(ctx context.Context, where string, p any) error
}

// keeper returns the run's keeper.
func (r *run) keeper() *keeper {
	return &keeper{stack: r.stack, router: r.a.cfg.Router, logger: r.a.cfg.Logger, audit: r.tree.audit, depth: r.depth, recovered: r.a.recovered}
}

// route asks the router where w goes; a panic refuses it.
func (k *keeper) route(ctx context.Context, w Write) (rt Route) {
	defer func() {
		if p := recover(); p != nil {
			err := k.recovered(ctx, "the router", p)
			rt = Route{Reason: "the router failed: " + err.Error()}
		}
	}()
	return k.router.Route(ctx, w)
}

// target finds the layer a route names: a layer ID of the stack, or a
// sort of layer (own is the layer that offered the write). It returns
// nil and why when there is none.
func (k *keeper) target(name string, own layer.Layer) (layer.Layer, string) {
	if l, ok := layer.Find[layer.Layer](k.stack, name); ok {
		return l, ""
	}
	var is func(layer.Layer) bool
	switch name {
	case RouteScratchpad:
		is = func(l layer.Layer) bool { _, ok := layer.As[*workingmemory.Layer](l); return ok }
	case RouteEpisodic:
		is = func(l layer.Layer) bool { _, ok := layer.As[*episodicmemory.Layer](l); return ok }
	case RouteSemantic:
		if own != nil {
			return own, ""
		}
		is = func(l layer.Layer) bool { _, ok := layer.As[*semanticmemory.Layer](l); return ok }
	default:
		return nil, fmt.Sprintf("the router chose layer %q, which the agent does not have", name)
	}
	for _, l := range k.stack.Layers() {
		if is(l) {
			return l, ""
		}
	}
	return nil, fmt.Sprintf("the router chose the %s, and the agent has no %s layer", name, name)
}

// offeredTool is a layer's function as the model is offered it.
type offeredTool struct {
	l  layer.Layer
	fn layer.Function // as the layer declares it (Name is the function's own)
	// keepArgs is true when the redactor leaves its arguments alone
	// (see redactor.masksTools).
	keepArgs bool
}

// offeredTools returns the layer functions of s by the names a model may
// call them by: their tool names (layer.ToolName) and aliases. A function
// whose tool name the stack had to tell apart from another's (a hash
// suffix) is not listed; the stack still runs it, unaudited, with its
// arguments masked.
func offeredTools(s *layer.Stack, rd *redactor) map[string]offeredTool {
	out := map[string]offeredTool{}
	for _, l := range s.Layers() {
		p, ok := layer.As[layer.Provider](l)
		if !ok {
			continue
		}
		keep := !rd.masksTools(l)
		for _, fn := range p.Functions() {
			t := offeredTool{l: l, fn: fn, keepArgs: keep}
			out[layer.ToolName(l.Spec().ID, fn.Name)] = t
			for _, alias := range fn.Aliases {
				if _, taken := out[alias]; !taken {
					out[alias] = t
				}
			}
		}
	}
	return out
}

// callLayerTool runs fn of layer l, offered as name, for the model and
// audits what it changed: semantic memory's memorize goes through the
// router (see [Router]); its forget, and the scratchpad's update, are
// audited as they succeed.
func (r *run) callLayerTool(ctx context.Context, l layer.Layer, fn layer.Function, name, args string) (string, error) {
	_, isSem := layer.As[*semanticmemory.Layer](l)
	if isSem && fn.Name == "memorize" {
		return r.memorize(ctx, l, fn, name, args)
	}
	out, err := r.stack.CallTool(ctx, name, args)
	if err != nil {
		return out, err
	}
	if e, ok := toolEvent(l, fn, name, args, r.res.Steps, r.depth); ok {
		r.tree.audit.add(e)
	}
	return out, nil
}

// toolEvent is the audit event of a call of layer l's function fn,
// offered as name, that succeeded with arguments args: the scratchpad's
// update, semantic memory's forget, or its memorize when nothing routed
// it (under the langchaingo Memory, whose exported tools call the layer
// directly). It is false for a function whose calls are not audited.
func toolEvent(l layer.Layer, fn layer.Function, name, args string, step, depth int) (audit.Event, bool) {
	e := audit.Event{Step: step, Depth: depth, Layer: l.Spec().ID, Source: "by=model tool=" + name}
	_, pad := layer.As[*workingmemory.Layer](l)
	_, sem := layer.As[*semanticmemory.Layer](l)
	switch {
	case pad:
		e.Op, e.Kind, e.Text = audit.OpWrite, "update", args
	case sem && fn.Name == "forget":
		var a struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal([]byte(args), &a) // it ran: the arguments were an object with an id
		e.Op, e.Key = audit.OpForget, a.ID
	case sem && fn.Name == "memorize":
		var a struct {
			Text       string   `json:"text"`
			Kind       string   `json:"kind"`
			Importance *float64 `json:"importance"`
		}
		_ = json.Unmarshal([]byte(args), &a)
		e.Op, e.Kind, e.Text, e.Importance = audit.OpWrite, cmp.Or(strings.ToLower(a.Kind), semanticmemory.DefaultKind), a.Text, semanticmemory.DefaultImportance
		if a.Importance != nil {
			e.Importance = *a.Importance
		}
	default:
		return audit.Event{}, false
	}
	return e, true
}

// memorize routes a call of semantic memory's memorize tool and keeps
// the write where the router says, auditing the route and the write.
func (r *run) memorize(ctx context.Context, own layer.Layer, fn layer.Function, name, args string) (string, error) {
	raw, err := r.a.toolArgs(name, fn.Parameters, args)
	if err != nil {
		return "", err
	}
	return r.keeper().memorize(ctx, own, raw, semanticmemory.Source{By: "model", Step: r.res.Steps, Tool: name})
}

// memorize keeps the write of a memorize call whose arguments raw were
// checked against the tool's schema: own is the semantic memory that
// offers the tool, src the call's source.
func (k *keeper) memorize(ctx context.Context, own layer.Layer, raw json.RawMessage, src semanticmemory.Source) (string, error) {
	var in struct {
		Text       string   `json:"text"`
		Kind       string   `json:"kind"`
		Importance *float64 `json:"importance"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return "", fmt.Errorf("memorize: %w", err)
	}
	w := Write{Kind: strings.ToLower(in.Kind), Text: in.Text, Importance: semanticmemory.DefaultImportance, Source: src.String(), Layer: own.Spec().ID}
	if w.Kind == "" {
		w.Kind = semanticmemory.DefaultKind
	}
	if in.Importance != nil {
		w.Importance = *in.Importance
	}
	out, err := k.keep(ctx, w, own, src)
	if err != nil {
		return "", fmt.Errorf("memorize: %w", err)
	}
	return out, nil
}

// keep routes w and keeps it where the router says, auditing the route
// and the write: own is the semantic memory whose memorize tool offered
// it (nil for a Proposer's write), src its source. It returns what the
// memorize tool answers.
func (k *keeper) keep(ctx context.Context, w Write, own layer.Layer, src semanticmemory.Source) (string, error) {
	step := src.Step
	rt := k.route(ctx, w)
	ev := audit.Event{Op: audit.OpRoute, Step: step, Depth: k.depth, Kind: w.Kind, Text: w.Text, Importance: w.Importance, Source: w.Source, Reason: rt.Reason}
	var dest layer.Layer
	if rt.Layer == "" {
		ev.Reason = cmp.Or(rt.Reason, "refused by the router")
	} else {
		var why string
		if dest, why = k.target(rt.Layer, own); dest == nil {
			ev.Reason = why
		} else if !routable(dest) {
			ev.Reason = fmt.Sprintf("the router chose layer %s, which does not take routed writes", dest.Spec().ID)
			dest = nil
		}
	}
	if dest == nil {
		ev.Refused = true
		k.audit.add(ev)
		return "", fmt.Errorf("refused: %s", ev.Reason)
	}
	id := dest.Spec().ID
	ev.Layer = id
	k.audit.add(ev)
	if tm := dest.Spec().Timeout; tm > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, tm)
		defer cancel()
	}
	write := audit.Event{Op: audit.OpWrite, Step: step, Depth: k.depth, Layer: id, Kind: w.Kind, Text: w.Text, Importance: w.Importance, Source: w.Source}
	if l, ok := layer.As[*semanticmemory.Layer](dest); ok {
		f, err := l.Remember(ctx, semanticmemory.Memo{Text: w.Text, Kind: w.Kind, Importance: w.Importance, Source: src})
		if err != nil {
			return "", err
		}
		// A restatement word for word writes nothing and returns the
		// fact as it was, written by someone else.
		if f.Source.By == src.By && f.Source.Step == src.Step && f.Source.Tool == src.Tool {
			write.Key, write.Version, write.Text, write.Source = f.ID, f.Version, f.Text, f.Source.String()
			k.audit.add(write)
			if f.Version > 1 {
				k.audit.add(audit.Event{Op: audit.OpSupersede, Step: step, Depth: k.depth, Layer: id, Kind: f.Kind, Key: f.ID, Version: f.Version, Source: write.Source})
			}
		}
		if f.Version > 1 {
			return fmt.Sprintf("updated fact %s (version %d)", f.ID, f.Version), nil
		}
		return "remembered fact " + f.ID, nil
	}
	if l, ok := layer.As[*workingmemory.Layer](dest); ok {
		patch, _ := json.Marshal(map[string]string{w.Kind: w.Text})
		if err := l.Update(ctx, patch); err != nil {
			return "", fmt.Errorf("routed to the scratchpad %s: %w", id, err)
		}
		k.audit.add(write)
		return fmt.Sprintf("kept on the scratchpad (%s) under %q, not as a durable fact: %s", id, w.Kind, rt.Reason), nil
	}
	if l, ok := layer.As[*episodicmemory.Layer](dest); ok {
		if own == nil {
			// A Proposer's write has no call of its own to log.
			if err := l.Note(ctx, step, w.Kind, w.Text); err != nil {
				return "", fmt.Errorf("routed to the episode log %s: %w", id, err)
			}
		} // else the episode log keeps the memorize call as the step's episode.
		k.audit.add(write)
		return fmt.Sprintf("logged in the episode log (%s) with this step, not as a durable fact: %s", id, rt.Reason), nil
	}
	return "", fmt.Errorf("layer %s takes no routed writes", id) // routable said it does
}

// A Proposer is a layer whose Store proposes memory writes instead of
// keeping them itself: a layer that distils facts, reasoning or outcomes
// from each step, say. After each step's Store, the agent loop takes the
// step's proposals of every Proposer of the run, in slot order, and keeps
// each as it keeps a memorize call: redacted (as the Proposer's own tool
// arguments would be, see RedactionConfig), routed by [Config.Router] by
// its kind, kept by the layer the route names (semantic memory a fact,
// the scratchpad reasoning, the episode log an outcome, as a note),
// audited (a refusal with its reason), and listed in Result.Writes. An
// empty Kind is "fact", a zero Importance is
// semanticmemory.DefaultImportance; Source and Layer are set by the loop
// ("by=layer:<id> step=<n>", the Proposer's ID). A write with no text,
// or an Importance outside [0, 1], is refused. Proposals is called after
// the step's Store hooks return, and returns what was proposed since its
// last call; it may run while a Store the stack gave up on at its
// timeout still runs, so guard what they share. A panic in it is
// recovered and logged, and loses that step's proposals. The langchaingo
// [Memory] takes them too, after each SaveContext's Store, routed by
// MemoryConfig.Router.
type Proposer interface {
	Proposals() []Write
}

// proposer is a layer of the run that is a Proposer.
type proposer struct {
	l layer.Layer
	p Proposer
}

// proposersOf returns the Proposers among s's layers, in slot order.
func proposersOf(s *layer.Stack) []proposer {
	out := []proposer{}
	for _, l := range s.Layers() {
		if p, ok := layer.As[Proposer](l); ok {
			out = append(out, proposer{l, p})
		}
	}
	return out
}

// keepProposals keeps the writes proposers proposed in step (see
// Proposer), masked by rd as their layer's tool arguments would be
// (counted in n). A write that cannot be kept is audited and logged;
// the step goes on.
func (k *keeper) keepProposals(ctx context.Context, proposers []proposer, step int, rd *redactor, n *redactions) {
	for _, pl := range proposers {
		l, p := pl.l, pl.p
		id := l.Spec().ID
		for _, w := range k.proposals(ctx, id, p) {
			src := semanticmemory.Source{By: "layer:" + id, Step: step}
			w.Kind = cmp.Or(strings.ToLower(strings.TrimSpace(w.Kind)), semanticmemory.DefaultKind)
			w.Importance = cmp.Or(w.Importance, semanticmemory.DefaultImportance)
			w.Source, w.Layer = src.String(), id
			if rd.masksTools(l) {
				w.Text = rd.text(w.Text, nil, n)
			}
			var why string
			switch {
			case strings.TrimSpace(w.Text) == "":
				why = "empty text"
			case !(w.Importance >= 0 && w.Importance <= 1): // NaN too
				why = fmt.Sprintf("importance %v is not in [0, 1]", w.Importance)
				w.Importance = 0 // the audit keeps finite numbers only
			}
			var err error
			if why != "" {
				err = errors.New("refused: " + why)
				k.audit.add(audit.Event{Op: audit.OpRoute, Step: step, Depth: k.depth, Kind: w.Kind, Text: w.Text, Source: w.Source, Reason: why, Refused: true})
			} else {
				_, err = k.keep(ctx, w, nil, src)
			}
			if err != nil {
				k.logger.LogAttrs(ctx, slog.LevelWarn, "agentloop: a proposed write was not kept", slog.String("layer", id), slog.String("kind", w.Kind), slog.Any("error", err))
			}
		}
	}
}

// proposals calls p.Proposals, a panic recovered and logged.
func (k *keeper) proposals(ctx context.Context, id string, p Proposer) (ws []Write) {
	defer func() {
		if v := recover(); v != nil {
			_ = k.recovered(ctx, "Proposals of layer "+id, v)
			ws = nil
		}
	}()
	return p.Proposals()
}

// routable reports whether l is a layer a write can be routed to.
func routable(l layer.Layer) bool {
	_, sem := layer.As[*semanticmemory.Layer](l)
	_, pad := layer.As[*workingmemory.Layer](l)
	_, eps := layer.As[*episodicmemory.Layer](l)
	return sem || pad || eps
}
