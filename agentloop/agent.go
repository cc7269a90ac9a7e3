package agentloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tmc/langchaingo/llms"
	"go.opentelemetry.io/otel/attribute"

	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/history"
	"github.com/memlayer/memlayer/internal/textcut"
	"github.com/memlayer/memlayer/internal/toolargs"
	"github.com/memlayer/memlayer/internal/writepath"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/redact"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
)

// Agent runs a ReAct loop over a langchaingo model with memory layers and
// tools. It is immutable after [New] and safe for concurrent use: every
// run gets its own [layer.Stack], so many threads can run at once. Runs of
// one thread must not overlap; a second concurrent run of the same thread
// fails at its first checkpoint with an error that is
// storage.ErrConflict.
type Agent struct {
	cfg         Config
	tools       map[string]*Tool
	toolDefs    []llms.Tool // the agent's own tools, in Config order
	spawnDef    llms.Tool
	spawnLayers spawnLayers // Config.SpawnLayers, by ID, and the tool's schema
	schemas     *toolargs.Cache
	tel         *telemetry
	redact      *writepath.Redactor // nil: redaction disabled
	// layerStore is Config.Store as the layers get it: counting their
	// lost compare-and-swaps (see telemetry.store).
	layerStore   storage.Store
	compiler     *prompt.Compiler
	systemTokens int
	// layerCounter is the counter handed to the layers' Recall: the
	// user's Config.Counter, or nil for the default estimate (the same
	// count as prompt.Estimate), which layers can cache with a block.
	layerCounter prompt.Counter
	// alternatives: the caller asked for several alternative answers
	// (llms.WithN > 1), so a response's choices are not parts of one.
	alternatives bool
	// splitParts: the model's client sends only the first part of a
	// message (see replay).
	splitParts bool

	// auditLog is the threads' audit, which Audit and Commit use even
	// when runs record none (Config.Audit.Disabled).
	auditLog *audit.Log
}

// RunInput is one user message on a thread.
type RunInput struct {
	// ThreadID identifies the conversation. Required, at most
	// [thread.MaxIDLen] bytes. A thread with a checkpoint in the store is
	// continued.
	ThreadID string
	// ResourceID identifies the thread's owner (a user, a project);
	// resource-scoped layers share state across its threads. Optional,
	// at most [thread.MaxIDLen] bytes.
	ResourceID string
	// Input is the user's message. Empty continues the thread without a
	// new message (after a limit stopped a run, for example): a thread
	// with no checkpoint is then ErrInvalidConfig, or ErrCheckpointGone
	// when the thread's other records show it ran before.
	Input string
	// Vars are template variables for this run, on top of Config.Vars.
	Vars map[string]any
}

// Result is the outcome of a run.
type Result struct {
	ThreadID string
	// Output is the model's final answer.
	Output string
	// Steps is the number of model calls in this run.
	Steps int
	// ToolCalls is the number of tool calls the model made in this run.
	ToolCalls int
	// Usage is the run's token usage, its child agents' included.
	Usage Usage
	// StopReason is the stop reason the model gave for its last response,
	// as the provider spelled it ("stop", "end_turn", "length",
	// "max_tokens", "content_filter", ...); empty when it gave none.
	StopReason string
	// Messages is the thread's history as the run held it, without the
	// system prompt: the messages the thread's summary did not cover
	// when the run started (compacted as sent to the model), then the
	// run's own. With history.Config.Full, or on a thread never
	// summarized, that is the whole thread; [Agent.Transcript] returns
	// every stored message.
	Messages []llms.MessageContent
	// Budgets is what each layer had of the last step's prompt, in slot
	// order (see prompt.LayerBudget); the EventStep of each step carries that
	// step's.
	Budgets []prompt.LayerBudget
	// Redacted counts, by kind, what the run masked before storing it or
	// handing it to the layers to keep (see [redact.Policy]); nil when
	// nothing was.
	Redacted map[redact.Kind]int
	// Writes lists what the run (its child agents included) wrote to the
	// layers, in order: the write, supersede and forget events of its
	// audit (see [AuditConfig]); with the audit disabled, those of its
	// routed writes and forgets only.
	Writes []audit.Entry
	// Commit is what the run (its child agents included) did to memory:
	// its writes, the route of each write asked for (kept or refused,
	// with the reason) and the records evicted to make room, masked as
	// the audit is (see audit.Commit; code outside the loop makes the
	// same value with audit.CommitOf). With the audit disabled it holds
	// the routed writes, their routes and the evictions their layers
	// named, as Writes does.
	Commit audit.Commit
	// Audit is the turn the run committed to the thread's audit; nil
	// when the audit is disabled, the run recorded nothing, or the
	// commit failed (see EventAudit).
	Audit *audit.Turn
	// Status is where the run ended against its budgets: tokens per
	// layer and in total, time, events by kind ([RunStatus] reads it
	// during the run).
	Status Status
}

// New validates cfg and returns an Agent. It returns an error for every
// configuration problem it can see, so that a run never fails for one:
//
//   - a tool name that is invalid ([ValidateToolName]) or repeated, a
//     tool without Call or CallContext, a schema that does not compile or
//     could not be inferred (see [NewTool]): [ErrInvalidTool];
//   - a nil layer, an invalid layer spec or a duplicate layer ID:
//     [ErrInvalidConfig], also matching layer.ErrInvalidSpec;
//   - a layer function whose wire name an agent tool or the spawn tool
//     uses, or whose parameter schema does not compile: [ErrInvalidTool]
//     (New reads each layer's Provides for this);
//   - a template that does not parse, or instructions and
//     ResponseReserve that fill ContextWindow: [ErrInvalidConfig].
//
// New does no I/O.
func New(cfg Config) (*Agent, error) {
	if cfg.Model == nil {
		return nil, ErrNoModel
	}
	layerCounter := cfg.Counter // nil: the layers use (and cache) layer's default estimate
	cfg = cfg.withDefaults()
	cfg.Layers = slices.Clone(cfg.Layers)
	cfg.CallOptions = slices.Clone(cfg.CallOptions)
	cfg.Vars = maps.Clone(cfg.Vars)
	a := &Agent{cfg: cfg, tools: make(map[string]*Tool, len(cfg.Tools)), schemas: &toolargs.Cache{}, layerCounter: layerCounter}
	tel, err := newTelemetry(cfg.TracerProvider, cfg.MeterProvider)
	if err != nil {
		return nil, fmt.Errorf("%w: telemetry: %w", ErrInvalidConfig, err)
	}
	tel.genAI = newGenAI(&a.cfg)
	a.tel = tel
	a.layerStore = tel.store(cfg.Store, renamedLayers(cfg))
	a.redact = writepath.NewRedactor(cfg.Redaction)
	tel.mask = a.redact.Diagnostic()           // errors reach spans masked
	a.cfg.Logger = a.redact.Logger(cfg.Logger) // and logs, the layers' too
	a.auditLog = audit.New(audit.Config{Store: cfg.Store, Keep: cfg.Audit.Keep, Logger: a.cfg.Logger})
	if err := a.checkTools(); err != nil {
		return nil, err
	}
	c, err := a.newCompiler(cfg.Instructions, cfg.Template)
	if err != nil {
		return nil, err
	}
	a.compiler = c
	a.systemTokens = cfg.Counter.Count(cfg.Instructions)
	if a.systemTokens+cfg.ResponseReserve >= cfg.ContextWindow {
		return nil, fmt.Errorf("%w: the instructions (%d tokens) and ResponseReserve (%d) leave nothing of ContextWindow (%d) for the conversation",
			ErrInvalidConfig, a.systemTokens, cfg.ResponseReserve, cfg.ContextWindow)
	}
	a.alternatives = askAlternatives(cfg.CallOptions)
	a.splitParts = firstPartOnly(cfg.Model)
	return a, nil
}

// checkTools registers the agent's tools, then sets up the spawn tool and
// checks the layers and their tools against them.
func (a *Agent) checkTools() error {
	for _, t := range a.cfg.Tools {
		if err := a.addTool(t); err != nil {
			return err
		}
	}
	if err := a.prepareSpawn(); err != nil {
		return err
	}
	return a.checkLayers()
}

// askAlternatives reports whether the call options ask the model for
// more than one answer.
func askAlternatives(opts []llms.CallOption) bool {
	var co llms.CallOptions
	for _, o := range opts {
		o(&co)
	}
	return co.N > 1
}

// addTool checks an agent tool (its name, its parameter schema, a Call
// or CallContext, a name no other tool has) and registers it.
func (a *Agent) addTool(t Tool) error {
	if err := t.check(); err != nil {
		return err
	}
	if _, dup := a.tools[t.Name]; dup {
		return fmt.Errorf("%w: %s registered twice", ErrInvalidTool, t.Name)
	}
	if t.Name == SpawnToolName && a.spawnEnabled() {
		return fmt.Errorf("%w: %s is the spawn tool's name; set DisableSpawnTool to use it", ErrInvalidTool, t.Name)
	}
	if len(t.Parameters) == 0 {
		t.Parameters = toolargs.AnyObject
	}
	if _, err := a.schemas.Compile(t.Parameters); err != nil {
		return fmt.Errorf("%w: %s: parameters: %w", ErrInvalidTool, t.Name, err)
	}
	a.tools[t.Name] = &t
	a.toolDefs = append(a.toolDefs, llmTool(t.Name, t.Description, t.Parameters))
	return nil
}

// check checks what a tool says of itself: its name, the schema inferred
// for its parameters, a Call or CallContext.
func (t *Tool) check() error {
	if err := ValidateToolName(t.Name); err != nil {
		return err
	}
	if t.paramsErr != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalidTool, t.Name, t.paramsErr)
	}
	if t.Call == nil && t.CallContext == nil {
		return fmt.Errorf("%w: %s has no Call or CallContext", ErrInvalidTool, t.Name)
	}
	return nil
}

// firstPartOnlyModels are the langchaingo clients that send only the
// first part of a message, by package path and type name. They are named
// here, not imported, so an agent does not link every provider's client.
var firstPartOnlyModels = map[string]bool{
	"github.com/tmc/langchaingo/llms/anthropic.LLM": true,
}

// firstPartOnly reports whether m's client sends only the first part of
// a message (see replay).
func firstPartOnly(m llms.Model) bool {
	t := reflect.TypeOf(m)
	if t == nil {
		return false
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return firstPartOnlyModels[t.PkgPath()+"."+t.Name()]
}

// checkLayers finds the layer problems a run would otherwise meet first:
// a nil layer, an invalid spec or a duplicate ID (as layer.NewStack
// reports them, wrapped in ErrInvalidConfig), and a provided function
// whose wire name an agent tool or the spawn tool already uses, or whose
// parameter schema does not compile (ErrInvalidTool). It reads each
// layer's Provides before Init (see providedBeforeInit); a run checks the
// names again with the functions the initialised layers provide.
func (a *Agent) checkLayers() error {
	if _, err := layer.NewStack(layer.StackConfig{Layers: a.cfg.Layers, Env: layer.Env{Store: a.cfg.Store}}); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	for _, l := range a.cfg.Layers {
		p, ok := layer.As[layer.Provider](l)
		if !ok {
			continue
		}
		if err := a.checkProvided(l.Spec().ID, providedBeforeInit(p)); err != nil {
			return err
		}
	}
	return nil
}

// checkProvided checks the functions layer id provides: a wire name no
// agent tool or spawn tool has, and a parameter schema that compiles.
func (a *Agent) checkProvided(id string, fns []layer.Function) error {
	for _, fn := range fns {
		if fn.Name == "" || fn.Call == nil {
			continue // the stack leaves it out, with a warning
		}
		name := layer.ToolName(id, fn.Name)
		if a.toolNameTaken(name) {
			return fmt.Errorf("%w: layer %s's tool %s has the name of an agent tool or the spawn tool", ErrInvalidTool, id, name)
		}
		if len(fn.Parameters) == 0 {
			continue
		}
		if _, err := a.schemas.Compile(fn.Parameters); err != nil {
			return fmt.Errorf("%w: layer tool %s: parameters: %w", ErrInvalidTool, name, err)
		}
	}
	return nil
}

// toolNameTaken reports whether an agent tool or the spawn tool has the
// wire name name.
func (a *Agent) toolNameTaken(name string) bool {
	_, clash := a.tools[name]
	return clash || name == SpawnToolName && a.spawnEnabled()
}

// providedBeforeInit returns the functions p provides before its Init. A
// layer that cannot say before Init (its Functions panics) is checked when
// a run starts instead.
func providedBeforeInit(p layer.Provider) (fns []layer.Function) {
	defer func() {
		if recover() != nil {
			fns = nil
		}
	}()
	return p.Functions()
}

func (a *Agent) newCompiler(instructions, template string) (*prompt.Compiler, error) {
	c, err := prompt.New(prompt.Config{Template: template, Instructions: instructions, Counter: a.cfg.Counter, LayerIDs: a.layerIDs()})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return c, nil
}

func (a *Agent) spawnEnabled() bool { return !a.cfg.DisableSpawnTool && a.cfg.MaxDepth > 0 }

func llmTool(name, desc string, params json.RawMessage) llms.Tool {
	return llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: name, Description: desc, Parameters: params}}
}

// Config returns the agent's configuration, with defaults filled in. Its
// slices and Vars are copies: changing them does not change the agent.
func (a *Agent) Config() Config {
	c := a.cfg
	c.Layers = slices.Clone(c.Layers)
	c.Tools = slices.Clone(c.Tools)
	c.CallOptions = slices.Clone(c.CallOptions)
	c.Vars = maps.Clone(c.Vars)
	return c
}

// run is the state of one run of the loop: a top-level run on a thread, or
// a child run.
type run struct {
	a       *Agent
	snapIDs []string                         // the layers whose snapshots the checkpoint keeps; nil until the first
	sources map[string]layer.CandidateSource // the layers that offer candidates, by ID; nil until the first step
	// renderers are those of them that render their own blocks, by ID.
	renderers map[string]layer.BlockRenderer
	// assembledIDs are the layers the step's scored assembly took in,
	// sorted (nil when it did not run).
	assembledIDs []string
	proposers    []writepath.Proposer // the run's Proposers, in slot order; nil until the first step's Store
	reporters    []writepath.Reporter // the run's layers that write off the step; nil until the first step's Store
	redacted     writepath.Counts     // what the run masked
	compiler     *prompt.Compiler
	sysTokens    int
	stack        *layer.Stack
	threadID     string
	resourceID   string
	depth        int
	input        string
	vars         map[string]any
	msgs         []llms.MessageContent
	defs         []llms.Tool
	toolTokens   int // what defs cost in every request
	opts         []llms.CallOption
	res          *Result
	// tree is shared with every child run under the same top-level run.
	tree *tree
	// mu guards res.Usage, which child runs add to as they end.
	mu sync.Mutex
	// thread is a top-level run's stored thread; a child run has none
	// (children are not checkpointed).
	thread *threadState

	alloc    *prompt.Allocation               // budgets, computed on the first step
	layerCap int                              // the sum of alloc.Layers
	callIDs  map[string]bool                  // tool call IDs in msgs
	offered  map[string]writepath.OfferedTool // the layers' tools by the names a model may call them by
	est      estimator

	// base is the index in the thread of msgs[0]: a run loads only the
	// messages the summary does not cover. loadedStored holds the loaded
	// messages as stored (before compaction), for the summarizer.
	base         int
	loadedStored []thread.Message
	// pos is the step the stack's hook events name, and its context (see
	// openStack); the top-level run sets it, children report the step they
	// run in.
	pos *position
	// bg is a summary being made in the background; summary is the
	// run's history_summary layer (nil with history.Config.Full).
	bg      *background
	summary *history.Layer

	// evictors are the layers that count their Store's work, by ID (nil
	// until the first Store with the audit on).
	evictors writepath.WriteCounts
}

// tree holds what a top-level run and all its child runs, at every
// depth, count together: their limits apply to the sum.
type tree struct {
	tokens   atomic.Int64       // tokens of every model call in the tree
	children atomic.Int64       // child runs started
	audit    *writepath.Auditor // the memory operations of the tree; nil records nothing
}

// addUsage adds u to the run's usage (and the tree's token count when
// the usage is the run's own model call's).
func (r *run) addUsage(u Usage, own bool) {
	r.mu.Lock()
	r.res.Usage = r.res.Usage.Add(u)
	r.mu.Unlock()
	if own {
		r.tree.tokens.Add(int64(u.TotalTokens))
	}
}

// Run runs the agent on a thread until the model answers without calling
// a tool or a limit stops it. The thread's history and the layers' state
// are loaded from the store, and checkpointed after every step, so a new
// Agent (in a new process) with the same store continues the thread.
//
// The layers' Close runs on every exit path. On a limit, the error is a
// [*LimitError] (matching ErrMaxSteps, ErrMaxTokens or ErrTimeout) and the
// returned Result is the partial result; on cancellation the error wraps
// ctx's error and the Result is partial too. Either way the checkpoint
// holds what the Result holds (see Config.SaveTimeout). Model and
// checkpoint failures end the run with an error (a checkpoint failure is
// a [*CheckpointError] saying what was saved); tool failures do not (the
// model sees them). A user message that cannot fit the context window
// fails with ErrInputTooLarge before the model is called.
func (a *Agent) Run(ctx context.Context, in RunInput) (*Result, error) {
	if in.ThreadID == "" {
		return nil, ErrNoThread
	}
	if err := checkIDs(in.ThreadID, in.ResourceID); err != nil {
		return nil, err
	}
	ctx, span := a.tel.start(ctx, a.tel.genAI.agent, func() []attribute.KeyValue {
		return a.tel.genAI.runAttrs(&in, a.cfg.Name)
	})
	res, err := a.runThread(ctx, in)
	end(span, err)
	return res, err
}

// runThread is Run, inside its span.
func (a *Agent) runThread(ctx context.Context, in RunInput) (*Result, error) {
	if a.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, a.cfg.Timeout, ErrTimeout)
		defer cancel()
	}
	start := time.Now()
	tally := NewTally(start, a.cfg.Timeout)
	ctx = withTally(ctx, tally)
	a.emit(ctx, Event{Kind: EventRunStart, ThreadID: in.ThreadID})

	l, err := a.loadOwned(ctx, &in)
	if err != nil {
		return nil, err
	}
	th := &threadState{w: thread.NewWriter(a.cfg.Store, in.ThreadID, nil)}
	sl, extra := a.summaryLayer()
	pos := new(position)
	pos.ctx.Store(&ctx) // Init's hooks go under the run's span
	// gone: the thread was deleted or erased during the run.
	var gone bool
	defer func() {
		if gone { // after the layers closed: what they flush goes too
			dropThreadScopes(context.WithoutCancel(ctx), a.cfg.Store, a.layerStore, in.ThreadID)
		}
	}()
	stack, err := a.openStack(ctx, pos, in.ThreadID, in.ResourceID, extra...)
	if err != nil {
		return nil, err
	}
	defer a.closeStack(ctx, stack)
	if l != nil && a.cfg.RestoreLayers {
		a.restoreLayers(ctx, stack, l.Checkpoint)
	}

	r := &run{
		a: a, compiler: a.compiler, sysTokens: a.systemTokens, stack: stack,
		threadID: in.ThreadID, resourceID: in.ResourceID,
		input: in.Input, vars: a.mergeVars(in.Vars),
		res: &Result{ThreadID: in.ThreadID}, tree: &tree{audit: &writepath.Auditor{Full: !a.cfg.Audit.Disabled}}, thread: th, summary: sl, pos: pos,
	}
	r.start(l, in.Input)
	if err := r.prepareTools(); err != nil {
		return nil, err
	}
	res, err := r.runToEnd(ctx)
	gone = errors.Is(err, ErrCheckpointGone)
	a.emit(ctx, Event{Kind: EventRunEnd, ThreadID: in.ThreadID, Step: res.Steps, Duration: time.Since(start), Usage: res.Usage, Err: err})
	res.Status = tally.Status(time.Now())
	return res, err
}

// loadOwned reads the thread a run continues (nil for a new one, which
// needs an input) and sets in.ResourceID to the thread's owner (see
// runOwner).
func (a *Agent) loadOwned(ctx context.Context, in *RunInput) (*loaded, error) {
	lctx, span := a.tel.child(ctx, spanLoad, func() []attribute.KeyValue {
		return []attribute.KeyValue{attrThread.String(in.ThreadID)}
	})
	l, err := a.load(lctx, in.ThreadID)
	end(span, err)
	if err != nil {
		return nil, err
	}
	if l == nil && in.Input == "" {
		return nil, a.nothingToContinue(ctx, in.ThreadID)
	}
	in.ResourceID, err = runOwner(ctx, a.cfg.Store, in.ThreadID, in.ResourceID, l)
	return l, err
}

// summaryLayer returns a run's history_summary layer and the extra
// layers its stack opens with: none when the history is kept whole.
func (a *Agent) summaryLayer() (*history.Layer, []layer.Layer) {
	if a.cfg.History.Full {
		return nil, nil
	}
	sl := history.NewLayer(a.cfg.History.SummaryTokens)
	return sl, []layer.Layer{sl}
}

// runToEnd runs the loop, then flushes the summary and, unless the
// thread is gone (ErrCheckpointGone), commits the audit. A failed flush
// is the run's error when it has none.
func (r *run) runToEnd(ctx context.Context) (*Result, error) {
	res, err := r.loop(ctx)
	if ferr := r.flushSummary(ctx); ferr != nil && err == nil {
		err = ferr
	}
	if !errors.Is(err, ErrCheckpointGone) {
		r.takeReported(ctx, true)
		r.commitAudit(ctx)
	}
	return res, err
}

// start sets up the run's conversation: the stored thread l, when there
// is one, then the user's input as a new message; with no input, the run
// continues the thread and its input is the last user message.
func (r *run) start(l *loaded, input string) {
	if l != nil {
		r.resume(l, input == "")
	}
	r.thread.baseMsgs = r.base + len(r.msgs)
	if input != "" {
		r.msgs = append(r.msgs, llms.TextParts(llms.ChatMessageTypeHuman, input))
	} else {
		r.input = lastHumanText(r.msgs)
	}
}

func (a *Agent) mergeVars(vars map[string]any) map[string]any {
	switch {
	case len(vars) == 0:
		return a.cfg.Vars
	case len(a.cfg.Vars) == 0:
		return vars
	}
	m := maps.Clone(a.cfg.Vars)
	maps.Copy(m, vars)
	return m
}

// openStack builds and initialises the layer stack of a run on a thread:
// Config.Layers and the run's own extra layers (the history_summary
// layer).
//
// Its hook events carry the step pos holds (the run sets it as each step
// starts), and their spans go under that step's span. A child agent's
// stack, derived with Stack.Spawn, reports through the same observer: its
// hooks' events name the top-level run's thread and the step during which
// the child ran.
func (a *Agent) openStack(ctx context.Context, pos *position, threadID, resourceID string, extra ...layer.Layer) (*layer.Stack, error) {
	layers := a.cfg.Layers
	if len(extra) > 0 {
		layers = append(slices.Clip(layers), extra...)
	}
	st, err := layer.NewStack(layer.StackConfig{
		Layers: layers,
		Env:    layer.Env{ThreadID: threadID, ResourceID: resourceID, Store: a.layerStore, Logger: a.cfg.Logger, Redact: a.redact.ForLayers()},
		OnHook: func(e layer.HookCall) {
			a.emit(context.Background(), Event{Kind: EventLayerHook, ThreadID: threadID, Step: int(pos.step.Load()), Layer: e.Layer, Hook: e.Hook, Duration: e.Duration, Err: e.Err})
			a.tel.hook(pos.context(), e)
		},
		ValidateArgs: a.schemas.Validate,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := st.Init(ctx); err != nil {
		return nil, fmt.Errorf("agentloop: init layers: %w", err)
	}
	return st, nil
}

// specs returns the specs of st's enabled layers, in slot order.
func specs(st *layer.Stack) []layer.Spec {
	ls := st.Layers()
	out := make([]layer.Spec, len(ls))
	for i, l := range ls {
		out[i] = l.Spec()
	}
	return out
}

// closeStack closes a run's layers even when ctx is cancelled, so they can
// flush; each Close is bounded by its layer's timeout.
func (a *Agent) closeStack(ctx context.Context, st *layer.Stack) {
	a.tel.layerMetrics(ctx, st)
	if err := st.Close(context.WithoutCancel(ctx)); err != nil {
		a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "agentloop: closing layers", slog.Any("error", err))
	}
}

// prepareTools builds the tool definitions offered to the model: the
// agent's tools, the spawn tool, then the layers' functions under their
// wire names.
func (r *run) prepareTools() error {
	a := r.a
	lts := r.stack.Tools()
	r.defs = make([]llms.Tool, 0, len(a.toolDefs)+1+len(lts))
	r.defs = append(r.defs, a.toolDefs...)
	if r.canSpawn() {
		r.defs = append(r.defs, a.spawnDef)
	}
	for _, t := range lts {
		if _, clash := a.tools[t.Name]; clash || (t.Name == SpawnToolName && r.canSpawn()) {
			return fmt.Errorf("%w: layer tool %s has the name of an agent tool", ErrInvalidTool, t.Name)
		}
		r.defs = append(r.defs, toolargs.Definition(t))
	}
	r.toolTokens = prompt.CountTools(a.cfg.Counter, r.defs)
	r.offered = writepath.OfferedTools(r.stack, a.redact)
	r.opts = r.callOptions()
	return nil
}

// callOptions returns the options of the run's model calls: its tools,
// the stream, then Config.CallOptions.
func (r *run) callOptions() []llms.CallOption {
	a := r.a
	opts := make([]llms.CallOption, 0, 2+len(a.cfg.CallOptions))
	if len(r.defs) > 0 {
		opts = append(opts, llms.WithTools(r.defs))
	}
	if a.cfg.Stream != nil {
		opts = append(opts, llms.WithStreamingFunc(textOnly(a.cfg.Stream)))
	}
	return append(opts, a.cfg.CallOptions...)
}

func (r *run) canSpawn() bool { return r.a.spawnEnabled() && r.depth < r.a.cfg.MaxDepth }

// loop runs steps until a final answer, a limit or an error. The
// Result's Messages are the run's history as it ends.
func (r *run) loop(ctx context.Context) (*Result, error) {
	defer func() { r.res.Messages = r.msgs }()
	r.watchWrites() // before the first step's tools write
	for {
		if err := ctx.Err(); err != nil {
			return r.stopped(ctx)
		}
		if err := r.limitReached(); err != nil {
			return r.res, err
		}
		final, err := r.step(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return r.stopped(ctx)
			}
			return r.res, err
		}
		if final {
			if err := stopError(r.res.StopReason); err != nil {
				return r.res, fmt.Errorf("%w: stop reason %q after %d steps", err, r.res.StopReason, r.res.Steps)
			}
			return r.res, nil
		}
	}
}

// limitReached returns the LimitError of a run that may take no more
// steps: over MaxTokens or at MaxSteps. The token limit holds for the
// whole tree of runs: a child starts no model call once its parent's
// run is over it.
func (r *run) limitReached() error {
	cfg := &r.a.cfg
	if cfg.MaxTokens > 0 && r.tree.tokens.Load() >= int64(cfg.MaxTokens) {
		return &LimitError{Limit: ErrMaxTokens, Result: r.res}
	}
	if r.res.Steps >= cfg.MaxSteps {
		return &LimitError{Limit: ErrMaxSteps, Result: r.res}
	}
	return nil
}

// stopped is the result of a run whose context ended. What the run did
// and no checkpoint holds yet (its user message, a step whose checkpoint
// was cut short) is checkpointed first, on a context from saveContext; if
// that fails, the error also holds the *CheckpointError.
func (r *run) stopped(ctx context.Context) (*Result, error) {
	var err error = &LimitError{Limit: ErrTimeout, Result: r.res, Cause: context.DeadlineExceeded}
	if !errors.Is(context.Cause(ctx), ErrTimeout) {
		err = fmt.Errorf("agentloop: run stopped after %d steps: %w", r.res.Steps, ctx.Err())
	}
	if r.thread != nil && r.thread.saved < r.base+len(r.msgs) {
		sctx, cancel := r.saveContext(ctx)
		defer cancel()
		if cerr := r.checkpoint(sctx); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}
	return r.res, err
}

// saveContext returns ctx while it is live. Once it has ended, it returns
// a context with ctx's values but not its cancellation, bounded by
// Config.SaveTimeout, so that a stopped run can still record what it did.
func (r *run) saveContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx.Err() == nil {
		return ctx, func() {}
	}
	return context.WithTimeout(context.WithoutCancel(ctx), r.a.cfg.SaveTimeout)
}

// step runs one model call and its tool calls, in four phases: the
// prompt (recall and compile), the model call, the tools, and the record
// (the layers' Store and the checkpoint). final reports a response
// without tool calls.
func (r *run) step(ctx context.Context) (final bool, err error) {
	start := time.Now()
	step := r.res.Steps
	ctx, span := r.a.tel.start(ctx, spanStep, func() []attribute.KeyValue {
		return []attribute.KeyValue{attrThread.String(r.threadID), attrStep.Int(step), attrDepth.Int(r.depth)}
	})
	defer func() { end(span, err) }()
	if r.depth == 0 && r.pos != nil {
		r.pos.step.Store(int64(step)) // the step the stack's hook events name
		r.pos.ctx.Store(&ctx)
	}
	system, hist, err := r.compile(ctx, step)
	if err != nil {
		return false, err
	}
	choice, modelTime, err := r.callModel(ctx, step, system, hist)
	if err != nil {
		return false, err
	}
	calls := r.normalizeCalls(choice)
	turn := r.appendAnswer(choice, calls, step)
	toolTime := r.runTools(ctx, step, calls, &turn)
	r.res.Steps++
	r.res.ToolCalls += len(calls)
	if len(calls) == 0 {
		r.res.Output = choice.Content
	}
	if err := r.record(ctx, turn); err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	r.a.emit(ctx, Event{Kind: EventStep, ThreadID: r.threadID, Depth: r.depth, Step: step, Duration: time.Since(start), ModelTime: modelTime, ToolTime: toolTime, Budgets: r.res.Budgets})
	return len(calls) == 0, nil
}

// compile recalls the layers within their budgets, compiles the system
// prompt and projects the history into what is left of the window.
func (r *run) compile(ctx context.Context, step int) (system string, hist []llms.MessageContent, err error) {
	a := r.a
	// The budgets depend only on the window, the instructions and the
	// layers, which a run never changes.
	if r.alloc == nil {
		if err := r.allocate(); err != nil {
			return "", nil, err
		}
	}
	// The window first, so that a summary made because it does not fit
	// is the one the history_summary layer shows.
	msgs, err := r.windowMsgs(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("agentloop: step %d: summary: %w", step, err)
	}
	// A failed recall is reported by the stack and contributes nothing.
	recalled, shares := r.assembled(ctx, layer.Query{Text: r.input, Step: step, Counter: a.layerCounter}, msgs)
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	// Each layer is held to its own share as well as the total, so one
	// that ignores Query.Budget cannot take a later layer's minimum.
	recalled = prompt.ProjectLayersWithin(recalled, shares, r.layerCap, a.cfg.Counter)
	r.res.Budgets = r.budgetStatus(recalled, shares)
	r.auditRecalls(step)
	a.tel.recalled(ctx, recalled, a.cfg.Counter)
	system, err = r.compiler.Compile(recalled, r.vars)
	if err != nil {
		return "", nil, fmt.Errorf("agentloop: step %d: system prompt: %w", step, err)
	}
	// What the layers left of their budgets goes to the history: it gets
	// the window minus the response reserve, the tool definitions and the
	// system message as compiled, which is never more than the window
	// holds (the layers' blocks may take a little more than their shares
	// for their fences and separators; the history gives way).
	budget := max(0, a.cfg.ContextWindow-a.cfg.ResponseReserve-r.toolTokens-prompt.MessageOverhead-r.est.count(a.cfg.Counter, system))
	if a.cfg.ContextWindow == layer.Unbounded {
		budget = layer.Unbounded
	}
	hist, err = r.history(msgs, budget)
	if err != nil {
		return "", nil, fmt.Errorf("agentloop: step %d: %w", step, err)
	}
	return system, hist, nil
}

// windowMsgs returns the messages of the history window (all the run
// holds, when the history is kept whole), and shows the latest summary
// in the history_summary layer.
func (r *run) windowMsgs(ctx context.Context) ([]llms.MessageContent, error) {
	if !r.windowed() {
		return r.msgs, nil
	}
	msgs, err := r.window(ctx, r.alloc.History)
	if err != nil {
		return nil, err
	}
	r.summary.Set(r.thread.latest().Text)
	return msgs, nil
}

// allocate sets the run's budgets: the layers' shares, the summary's
// (taken from the history's, as the summary stands for older history),
// the history's and their total. It fails when the fixed costs of every
// request leave nothing of the window.
func (r *run) allocate() error {
	a := r.a
	// The summary stands for older history: its budget is taken from
	// the history's share, not from the layers'.
	layers := slices.DeleteFunc(specs(r.stack), func(s layer.Spec) bool { return s.ID == history.SummaryLayerID })
	// The fixed costs of every request: the system prompt without
	// any layer's text (the instructions, and a template's own text)
	// and the tool definitions.
	sys := r.sysTokens
	if bare, err := r.compiler.Compile(nil, r.vars); err == nil {
		sys = max(sys, a.cfg.Counter.Count(bare))
	}
	if fixed := sys + r.toolTokens; a.cfg.ContextWindow != layer.Unbounded && fixed+a.cfg.ResponseReserve >= a.cfg.ContextWindow {
		return fmt.Errorf("%w: the system prompt (%d tokens without the layers), the tool definitions (%d, %d tools) and ResponseReserve (%d) leave nothing of ContextWindow (%d) for the conversation",
			ErrInvalidConfig, sys, r.toolTokens, len(r.defs), a.cfg.ResponseReserve, a.cfg.ContextWindow)
	}
	alloc, err := prompt.Allocate(prompt.Request{
		Total:   a.cfg.ContextWindow,
		Reserve: a.cfg.ResponseReserve,
		System:  sys + r.toolTokens,
		Layers:  layers,
	})
	if err != nil {
		return fmt.Errorf("%w: budgets: %w", ErrInvalidConfig, err)
	}
	if r.windowed() {
		sum := min(r.summary.Spec().Budget.Max, alloc.History/2)
		alloc.Layers[history.SummaryLayerID] = sum
		alloc.History -= sum
	}
	r.alloc = &alloc
	for _, v := range alloc.Layers {
		r.layerCap += v
	}
	return nil
}

// callModel sends the system prompt and the history to the model and
// returns its answer as one turn, adding its usage to the run's.
func (r *run) callModel(ctx context.Context, step int, system string, hist []llms.MessageContent) (*llms.ContentChoice, time.Duration, error) {
	a := r.a
	req := make([]llms.MessageContent, 0, len(hist)+1)
	req = append(req, llms.TextParts(llms.ChatMessageTypeSystem, system))
	req = a.replay(req, hist)
	if a.cfg.ObservePrompts {
		a.emit(ctx, Event{Kind: EventPrompt, ThreadID: r.threadID, Depth: r.depth, Step: step, Request: req})
	}
	mctx, span := a.tel.start(ctx, a.tel.genAI.chat, func() []attribute.KeyValue {
		return a.tel.genAI.chatAttrs(r.threadID, step)
	})
	start := time.Now()
	resp, err := r.generate(mctx, req)
	took := time.Since(start)
	var choice *llms.ContentChoice
	if err == nil {
		if choice = a.oneTurn(resp); choice == nil {
			err = ErrEmptyResponse
		}
	}
	if err != nil {
		a.tel.modelTime.Record(ctx, took.Seconds())
		end(span, err)
		a.emit(ctx, Event{Kind: EventModelCall, ThreadID: r.threadID, Depth: r.depth, Step: step, Duration: took, Err: err})
		return nil, took, fmt.Errorf("agentloop: step %d: model: %w", step, err)
	}
	usage, ok := usageFrom(choice.GenerationInfo)
	if !ok {
		usage = r.est.usage(a.cfg.Counter, r.msgs, system, hist, choice)
	}
	r.addUsage(usage, true)
	a.tel.model(ctx, took, usage)
	answered(span, usage, !ok, choice.StopReason)
	end(span, nil)
	r.res.StopReason = choice.StopReason
	a.emit(ctx, Event{Kind: EventModelCall, ThreadID: r.threadID, Depth: r.depth, Step: step, Duration: took, Usage: usage, StopReason: choice.StopReason})
	return choice, took, nil
}

// appendAnswer appends the model's answer to the history, as one AI
// message (its text, then its calls), and returns the step's turn for the
// layers, which get the calls as the model sent them.
func (r *run) appendAnswer(choice *llms.ContentChoice, calls []call, step int) layer.Turn {
	ai := llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: make([]llms.ContentPart, 0, len(calls)+1)}
	if choice.Content != "" {
		ai.Parts = append(ai.Parts, llms.TextContent{Text: choice.Content})
	}
	turn := layer.Turn{Step: step, Query: r.input, Response: choice.Content}
	for _, c := range calls {
		ai.Parts = append(ai.Parts, c.ToolCall)
		turn.ToolCalls = append(turn.ToolCalls, c.sent())
	}
	if len(ai.Parts) == 0 {
		ai.Parts = append(ai.Parts, llms.TextContent{Text: ""})
	}
	r.msgs = append(r.msgs, ai)
	return turn
}

// runTools runs the step's calls, appends one tool message per result to
// the history (capped at MaxToolResultBytes) and puts the results, whole,
// in turn. It returns the time spent in the tools.
func (r *run) runTools(ctx context.Context, step int, calls []call, turn *layer.Turn) time.Duration {
	if len(calls) == 0 {
		return 0
	}
	start := time.Now()
	var inside time.Duration
	turn.Results, inside = r.execTools(ctx, step, calls)
	// The time inside the tools, summed over calls, cannot exceed the
	// wall time when calls overlapped.
	took := min(inside, time.Since(start))
	for i, res := range turn.Results {
		r.msgs = append(r.msgs, llms.MessageContent{
			Role:  llms.ChatMessageTypeTool,
			Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: res.ID, Name: calls[i].FunctionCall.Name, Content: capResult(res.Content, r.a.cfg.MaxToolResultBytes, res.ID)}},
		})
	}
	return took
}

// record hands the step to the layers' Store and checkpoints the thread.
// The step happened even if the run's context ended during its tools
// (what they did is real), so both get a context from saveContext.
func (r *run) record(ctx context.Context, turn layer.Turn) error {
	sctx, cancel := r.saveContext(ctx)
	defer cancel()
	// Store failures are reported by the stack; the step goes on.
	r.store(sctx, r.a.redact.Turn(turn, &r.redacted))
	if r.proposers == nil {
		r.proposers = writepath.Proposers(r.stack)
	}
	if len(r.proposers) > 0 {
		r.keeper().KeepProposals(sctx, r.proposers, turn.Step, r.a.redact, &r.redacted)
	}
	defer func() {
		before := r.res.Redacted
		r.res.Redacted = r.redacted.Counts()
		r.auditRedactions(turn.Step, before, r.res.Redacted)
	}()
	if r.thread == nil {
		return nil
	}
	r.maybeSummarize(sctx)
	return r.checkpoint(sctx)
}

// history projects msgs (the history, or its window) into budget tokens, newest first
// (prompt.ProjectHistory), but never without the current user message:
// when the turn's later messages do not all fit with it, it is sent with
// the newest of them that fit, and when it does not fit on its own the
// error is ErrInputTooLarge.
func (r *run) history(msgs []llms.MessageContent, budget int) ([]llms.MessageContent, error) {
	c := r.a.cfg.Counter
	hist := prompt.ProjectHistory(msgs, budget, c)
	in := lastHuman(msgs)
	if in < 0 || lastHuman(hist) >= 0 {
		return hist, nil
	}
	n := prompt.CountMessage(c, msgs[in])
	if n > budget {
		return nil, fmt.Errorf("%w: it counts %d tokens, the history's share of the window %d", ErrInputTooLarge, n, budget)
	}
	rest := prompt.ProjectHistory(msgs[in+1:], budget-n, c)
	return append([]llms.MessageContent{msgs[in]}, rest...), nil
}

// lastHuman returns the index of the last user message in msgs, or -1.
func lastHuman(msgs []llms.MessageContent) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llms.ChatMessageTypeHuman {
			return i
		}
	}
	return -1
}

// estimator counts a call's tokens when the model reports none. The
// history's messages never change, so each one's count is kept and
// reused by later steps, and so is the last system prompt's.
type estimator struct {
	msgTokens    []int // the counts of msgs[:len(msgTokens)]
	system       string
	systemTokens int
}

// usage estimates a call that sent system and hist (a projection of
// msgs, the whole history) and got choice.
func (e *estimator) usage(c prompt.Counter, msgs []llms.MessageContent, system string, hist []llms.MessageContent, choice *llms.ContentChoice) Usage {
	p := prompt.MessageOverhead + e.count(c, system)
	n := len(hist)
	if n > 0 && n <= len(msgs) && &hist[n-1] == &msgs[len(msgs)-1] {
		// hist is a suffix of the history: use the cached counts.
		for _, t := range e.counts(c, msgs)[len(msgs)-n:] {
			p += t
		}
	} else {
		for _, m := range hist {
			p += prompt.CountMessage(c, m)
		}
	}
	out := c.Count(choice.Content)
	for _, tc := range choice.ToolCalls {
		if tc.FunctionCall != nil {
			out += c.Count(tc.FunctionCall.Name) + c.Count(tc.FunctionCall.Arguments)
		}
	}
	return Usage{PromptTokens: p, CompletionTokens: out, TotalTokens: p + out, Estimated: true}
}

// count returns the tokens of a system prompt, counted once per text.
func (e *estimator) count(c prompt.Counter, system string) int {
	if system != e.system {
		e.system, e.systemTokens = system, c.Count(system)
	}
	return e.systemTokens
}

// counts returns the token count of each message of msgs (the run's
// history, which only grows), counting each message once.
func (e *estimator) counts(c prompt.Counter, msgs []llms.MessageContent) []int {
	for i := len(e.msgTokens); i < len(msgs); i++ {
		e.msgTokens = append(e.msgTokens, prompt.CountMessage(c, msgs[i]))
	}
	return e.msgTokens
}

// generate runs the model call. A panic in the model's client (or in the
// caller's Stream func, see textOnly) becomes the call's error: one of
// langchaingo's clients dereferences nil on some malformed responses.
func (r *run) generate(ctx context.Context, req []llms.MessageContent) (resp *llms.ContentResponse, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, r.a.recovered(ctx, "model call", p)
		}
	}()
	return r.a.cfg.Model.GenerateContent(ctx, req, r.opts...)
}

// recovered turns a recovered panic into an error matching ErrPanic and
// logs its stack, which the error cannot carry.
func (a *Agent) recovered(ctx context.Context, where string, p any) error {
	a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "agentloop: recovered a panic", slog.String("agent", a.cfg.Name),
		slog.String("in", where), slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
	return fmt.Errorf("%w in %s: %v", ErrPanic, where, p)
}

// oneTurn returns a response's choices as one assistant turn, nil when
// it has none.
//
// langchaingo's Anthropic client returns one choice per content block:
// Claude's usual answer, a text block then tool_use blocks, arrives as a
// text choice followed by one choice per tool call, each carrying the
// whole response's usage and stop reason. So the choices of a response
// are read as parts of one answer: their texts joined in order, then
// every tool call in order, with the first choice's usage and stop
// reason (never a sum). The exception is a caller who asked for
// alternatives (llms.WithN(n) with n > 1 in Config.CallOptions): then
// the choices are alternative answers, and the first one is the answer.
func (a *Agent) oneTurn(resp *llms.ContentResponse) *llms.ContentChoice {
	if resp == nil {
		return nil
	}
	var first *llms.ContentChoice
	n := 0
	for _, c := range resp.Choices {
		if c != nil {
			if first == nil {
				first = c
			}
			n++
		}
	}
	if n <= 1 || a.alternatives {
		return first
	}
	return mergeChoices(first, resp.Choices)
}

// mergeChoices reads the choices of a response as parts of one answer
// (see oneTurn): their texts joined, their tool calls in order, and
// first's stop reason and generation info, else the first choice's that
// has them.
func mergeChoices(first *llms.ContentChoice, choices []*llms.ContentChoice) *llms.ContentChoice {
	m := &llms.ContentChoice{StopReason: first.StopReason, GenerationInfo: first.GenerationInfo}
	var text strings.Builder
	for _, c := range choices {
		if c == nil {
			continue
		}
		text.WriteString(c.Content)
		switch {
		case len(c.ToolCalls) > 0:
			m.ToolCalls = append(m.ToolCalls, c.ToolCalls...)
		case c.FuncCall != nil:
			m.ToolCalls = append(m.ToolCalls, llms.ToolCall{FunctionCall: c.FuncCall})
		}
		if m.StopReason == "" {
			m.StopReason = c.StopReason
		}
		if m.GenerationInfo == nil {
			m.GenerationInfo = c.GenerationInfo
		}
	}
	m.Content = text.String()
	return m
}

// replay appends the history to a request. The stored history keeps an
// assistant turn as one message (its text, then its tool calls), the
// shape OpenAI-style APIs need: the tool results follow the message with
// every call. langchaingo's Anthropic client (v0.1.14) sends only the
// first part of an assistant message, so for it each part is sent as a
// message of its own; the Messages API combines consecutive messages of
// one role into one turn, which restores the turn.
//
// An assistant turn with no content at all (a model that answered
// nothing) is stored as one empty text part and not replayed: Anthropic
// and Google refuse empty text, and the messages around it keep their
// order.
func (a *Agent) replay(req, hist []llms.MessageContent) []llms.MessageContent {
	for _, m := range hist {
		if m.Role == llms.ChatMessageTypeAI && isEmptyAnswer(m) {
			continue
		}
		if !a.splitParts || m.Role != llms.ChatMessageTypeAI || len(m.Parts) < 2 {
			req = append(req, m)
			continue
		}
		for _, p := range m.Parts {
			req = append(req, llms.MessageContent{Role: m.Role, Parts: []llms.ContentPart{p}})
		}
	}
	return req
}

// isEmptyAnswer reports whether m holds nothing but empty text.
func isEmptyAnswer(m llms.MessageContent) bool {
	for _, p := range m.Parts {
		if t, ok := p.(llms.TextContent); !ok || t.Text != "" {
			return false
		}
	}
	return true
}

// stopError classifies a final answer's stop reason: ErrTruncated for
// an output limit, ErrFiltered for a content filter or refusal, nil
// otherwise. Providers spell them differently: OpenAI "length" and
// "content_filter", Anthropic "max_tokens" and "refusal", Google
// "MAX_TOKENS", "SAFETY", "RECITATION", Bedrock "guardrail_intervened".
func stopError(reason string) error {
	r := strings.ToLower(reason)
	if r == "spii" { // Google's sensitive personal information
		return ErrFiltered
	}
	for _, s := range stopReasons {
		for _, w := range s.words {
			if strings.Contains(r, w) {
				return s.err
			}
		}
	}
	return nil
}

// stopReasons are the words of the stop reasons that end an answer
// early, in lowercase, with the error each one means; the first match
// wins.
var stopReasons = []struct {
	words []string
	err   error
}{
	{[]string{"length", "max_tokens", "maxtokens"}, ErrTruncated},
	{[]string{"filter", "refusal", "safety", "recitation", "blocklist", "prohibited", "guardrail"}, ErrFiltered},
}

// invalidToolName is the name a call is stored and replayed under when
// the model's name for it is not one providers accept
// ([a-zA-Z0-9_-]{1,64}): such a name ("working_memory/update" instead of
// the offered "working_memory_update", say) would make every
// later request of the thread fail. The model's own name is in the call's
// result.
const invalidToolName = "invalid_tool_name"

// maxQuote bounds how much of a model's malformed arguments its error
// result quotes: enough to see what went wrong (a markdown fence, a cut),
// not an echo of megabytes. Layers get the arguments whole.
const maxQuote = 1000

// quote returns s, or its first maxQuote bytes (cut at a rune boundary)
// and its size.
func quote(s string) string {
	if len(s) <= maxQuote {
		return s
	}
	return textcut.Prefix(s, maxQuote) + "… (" + strconv.Itoa(len(s)) + " bytes in all)"
}

// call is a tool call of one step.
type call struct {
	// ToolCall is the call as stored in the history and replayed: an ID
	// unique in the thread, a name providers accept and a JSON object as
	// arguments.
	llms.ToolCall
	// name and args are what the model sent.
	name, args string
	// badArgs: args are not a JSON object, and ToolCall has {} instead.
	badArgs bool
}

// sent returns the call as the model sent it, under its stored ID.
func (c call) sent() layer.ToolCall {
	return layer.ToolCall{ID: c.ID, Name: c.name, Arguments: c.args}
}

// replayableCall makes a call what every client accepts in a replayed
// history (see normalizeCalls): arguments that are not a JSON object
// become {} (badArgs reports it; empty or padded ones are trimmed, to {}
// for empty) and a name providers refuse becomes invalidToolName.
func replayableCall(fc *llms.FunctionCall) (badArgs bool) {
	if ValidateToolName(fc.Name) != nil {
		fc.Name = invalidToolName
	}
	// checkArgs's rule, without its copy of the arguments.
	args := strings.TrimSpace(fc.Arguments)
	switch {
	case args == "":
		fc.Arguments = "{}"
	case args[0] != '{' || !json.Valid([]byte(args)):
		fc.Arguments = "{}"
		return true
	default:
		fc.Arguments = args
	}
	return false
}

// replayable applies replayableCall to every call in msgs, and gives the
// results of renamed calls the same name, in place.
func replayable(msgs []llms.MessageContent) {
	for _, m := range msgs {
		for i, p := range m.Parts {
			if q, changed := replayablePart(p); changed {
				m.Parts[i] = q
			}
		}
	}
}

// replayablePart is replayable of one part: a tool call made replayable
// (a copy), or a result renamed, and whether it changed.
func replayablePart(p llms.ContentPart) (llms.ContentPart, bool) {
	switch p := p.(type) {
	case llms.ToolCall:
		if p.FunctionCall != nil {
			fc := *p.FunctionCall
			replayableCall(&fc)
			if fc != *p.FunctionCall {
				p.FunctionCall = &fc
				return p, true
			}
		}
	case llms.ToolCallResponse:
		if p.Name != "" && ValidateToolName(p.Name) != nil {
			p.Name = invalidToolName
			return p, true
		}
	}
	return p, false
}

// normalizeCalls returns the choice's tool calls with a type, a function
// and an ID unique in the thread on each; a legacy FuncCall becomes a tool
// call. Providers (and scripted models) may reuse IDs across turns, and a
// reused ID would pair a result with the wrong call in the history, so an
// ID repeated in the messages the run holds gets a suffix; the AI message
// and the tool message both carry the new ID. A missing ID is made from
// the AI message's index in the thread, which no other message has.
//
// What is stored must be accepted by every client the thread may
// continue on: the Anthropic and Google clients decode each replayed
// call's arguments and fail the whole request on one that is not a JSON
// object, and providers refuse invalid tool names. So arguments that are
// not a JSON object are stored as {} (empty ones mean {} anyway) and a
// name providers refuse as invalidToolName; the call runs (or fails)
// with what the model sent, and its result quotes it.
func (r *run) normalizeCalls(choice *llms.ContentChoice) []call {
	calls := choice.ToolCalls
	if len(calls) == 0 && choice.FuncCall != nil {
		calls = []llms.ToolCall{{FunctionCall: choice.FuncCall}}
	}
	if len(calls) == 0 {
		return nil
	}
	if r.callIDs == nil {
		r.callIDs = callIDs(r.msgs)
	}
	out := make([]call, 0, len(calls))
	for i, c := range calls {
		if c.FunctionCall == nil {
			continue
		}
		fc := *c.FunctionCall
		c.FunctionCall = &fc
		sent := call{name: fc.Name, args: fc.Arguments}
		sent.badArgs = replayableCall(&fc)
		c.ID = r.newCallID(c.ID, i)
		if c.Type == "" {
			c.Type = "function"
		}
		sent.ToolCall = c
		out = append(out, sent)
	}
	return out
}

// callIDs returns the set of the IDs of the tool calls in msgs.
func callIDs(msgs []llms.MessageContent) map[string]bool {
	ids := make(map[string]bool)
	for _, m := range msgs {
		for _, p := range m.Parts {
			if c, ok := p.(llms.ToolCall); ok {
				ids[c.ID] = true
			}
		}
	}
	return ids
}

// newCallID returns an ID for call i of the model's answer that no other
// call in the thread has, and notes it: id, the model's, when it is new;
// else it with a number added. A call the model left without an ID is
// numbered by the AI message's index in the thread, so unique in the
// thread although a run loads only its tail.
func (r *run) newCallID(id string, i int) string {
	if id == "" {
		id = "call_" + strconv.Itoa(r.base+len(r.msgs)) + "_" + strconv.Itoa(i)
	}
	for base, n := id, 1; r.callIDs[id]; n++ {
		id = base + "_" + strconv.Itoa(n)
	}
	r.callIDs[id] = true
	return id
}

// execTools runs the step's tool calls and returns their results in call
// order. Calls run concurrently up to ToolConcurrency, except calls of
// Exclusive tools, which run alone, and calls of the layers' functions,
// which run one after another in call order. Calls beyond MaxToolCallsPerStep, and
// spawn_agent calls beyond MaxChildrenPerStep, are answered with an error
// and not run. A panic in a call is recovered and becomes its error.
//
// inside is the time spent inside the tools' own code (after argument
// checks), summed over calls.
func (r *run) execTools(ctx context.Context, step int, calls []call) (results []layer.ToolResult, inside time.Duration) {
	t := &toolStep{r: r, ctx: ctx, step: step, calls: calls, results: make([]layer.ToolResult, len(calls))}
	if len(calls) == 1 {
		t.one(0)
		return t.results, time.Duration(t.inside.Load())
	}
	t.sem = make(chan struct{}, r.a.cfg.ToolConcurrency)
	spawns := 0
	for i, c := range calls {
		if why := r.overLimit(i, c, &spawns); why != "" {
			t.refuse(i, why)
			continue
		}
		t.dispatch(i, c)
	}
	if len(t.lane) > 0 {
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			t.runLane()
		}()
	}
	t.wg.Wait()
	return t.results, time.Duration(t.inside.Load())
}

// toolStep is a step's tool calls while they run (see execTools).
type toolStep struct {
	r       *run
	ctx     context.Context
	step    int
	calls   []call
	results []layer.ToolResult // by call
	inside  atomic.Int64       // nanoseconds inside the tools' own code
	wg      sync.WaitGroup
	sem     chan struct{} // a slot per call running at once
	// lane holds the calls of the layers' functions, which run one at
	// a time, in call order, beside the agent's tools: what they write
	// (a fact's ID, an entry) must not depend on scheduling.
	lane []int
}

// dispatch runs call i: a call of an Exclusive tool alone, once the
// calls started before it are done; a layer's function in the lane; any
// other call on a goroutine of its own when a slot is free.
func (t *toolStep) dispatch(i int, c call) {
	tool, agentTool := t.r.a.tools[c.name]
	if agentTool && tool.Exclusive {
		t.wg.Wait()
		t.runLane()
		t.one(i)
		return
	}
	if !agentTool && c.name != SpawnToolName {
		t.lane = append(t.lane, i) // a layer's function: run in call order
		return
	}
	if !t.acquire(i) {
		return
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		defer func() { <-t.sem }()
		t.guarded(i)
	}()
}

// runLane runs the calls in the lane, one after another, and empties it.
func (t *toolStep) runLane() {
	for _, i := range t.lane {
		if t.acquire(i) {
			t.guarded(i)
			<-t.sem
		}
	}
	t.lane = nil
}

// acquire takes a slot for call i and reports whether it got one before
// the context ended; if not, the call is refused.
func (t *toolStep) acquire(i int) bool {
	select {
	case t.sem <- struct{}{}:
		return true
	case <-t.ctx.Done():
		t.refuse(i, t.ctx.Err().Error())
		return false
	}
}

// refuse answers call i with an error saying why it was not run.
func (t *toolStep) refuse(i int, why string) {
	t.results[i] = layer.ToolResult{ToolCall: t.calls[i].sent(), IsError: true, Content: "error: not run: " + why}
}

// one runs call i, recording its span, its time and its event. A failed
// call's result is its error for the model, with the arguments the
// model sent when they were not a JSON object.
func (t *toolStep) one(i int) {
	r, a, c, res := t.r, t.r.a, t.calls[i], &t.results[i]
	tctx, span := a.tel.start(t.ctx, a.tel.genAI.toolSpan(c.name), func() []attribute.KeyValue {
		return toolAttrs(&c, t.step)
	})
	start := time.Now()
	out, err := r.callTool(tctx, c.name, c.args, &t.inside)
	*res = layer.ToolResult{ToolCall: c.sent(), Content: out}
	if err != nil {
		res.Content = toolargs.ErrorText(err)
		res.IsError = true
	}
	if c.badArgs {
		res.Content += "\nThe conversation keeps this call with {} as its arguments. The arguments you sent were:\n" + quote(c.args)
	}
	res.Duration = time.Since(start)
	end(span, err)
	a.tel.toolTime.Record(t.ctx, res.Duration.Seconds(), a.tel.attrs(attrTool, c.name, "", "").rec...)
	a.emit(t.ctx, Event{Kind: EventToolCall, ThreadID: r.threadID, Depth: r.depth, Step: t.step, Tool: c.name, Duration: res.Duration, Err: err})
}

// guarded runs call i beside others. callTool recovers the tool's
// panics, and this catches the rest (an Observer's), which would end
// the process: the panic becomes the call's error.
func (t *toolStep) guarded(i int) {
	defer func() {
		if p := recover(); p != nil {
			c := t.calls[i]
			err := t.r.a.recovered(t.ctx, "tool "+c.name, p)
			t.results[i] = layer.ToolResult{ToolCall: c.sent(), IsError: true, Content: toolargs.ErrorText(err)}
		}
	}()
	t.one(i)
}

// overLimit returns why call i of a step is not run, or "": it is beyond
// MaxToolCallsPerStep, or a spawn_agent call beyond MaxChildrenPerStep.
// spawns counts the step's spawn_agent calls so far.
func (r *run) overLimit(i int, c call, spawns *int) string {
	cfg := &r.a.cfg
	if i >= cfg.MaxToolCallsPerStep {
		return fmt.Sprintf("at most %d tool calls are run per step; call it again in the next step if still needed", cfg.MaxToolCallsPerStep)
	}
	if c.name != SpawnToolName || !r.canSpawn() {
		return ""
	}
	if *spawns++; *spawns > cfg.MaxChildrenPerStep {
		return fmt.Sprintf("at most %d child agents are started per step; call it again in the next step if still needed", cfg.MaxChildrenPerStep)
	}
	return ""
}

// callTool runs one tool call: an agent tool, the spawn tool or a layer
// function, by the name offered to the model (a layer function's wire
// name, or one of its aliases such as the legacy updateWorkingMemory; its
// internal name is unknown to the model and does not run).
// Errors, a panic included, are for the model. The time spent in the
// tool's own code is added to inside.
func (r *run) callTool(ctx context.Context, name, args string, inside *atomic.Int64) (out string, err error) {
	a := r.a
	defer func() {
		if p := recover(); p != nil {
			out, err = "", a.recovered(ctx, "tool "+name, p)
		}
	}()
	if t, ok := a.tools[name]; ok {
		return r.callAgentTool(ctx, t, args, inside)
	}
	defer func(start time.Time) { inside.Add(int64(time.Since(start))) }(time.Now())
	if name == SpawnToolName && r.canSpawn() {
		return r.spawnTool(ctx, args)
	}
	if t, ok := r.offered[name]; ok {
		if !t.KeepArgs {
			args = a.redact.Text(args, nil, &r.redacted)
		}
		return r.callLayerTool(ctx, t.Layer, t.Fn, name, args)
	}
	if slices.ContainsFunc(r.stack.Tools(), func(t layer.Function) bool { return t.Name == name }) {
		// A tool the stack named apart from another's (see offeredTools).
		args = a.redact.Text(args, nil, &r.redacted)
		return r.stack.CallTool(ctx, name, args)
	}
	return "", r.unknownTool(name)
}

// callAgentTool runs a call of the agent tool t, once its arguments pass
// the tool's schema. The time spent in the tool's own code is added to
// inside.
func (r *run) callAgentTool(ctx context.Context, t *Tool, args string, inside *atomic.Int64) (string, error) {
	raw, err := r.a.toolArgs(t.Name, t.Parameters, args)
	if err != nil {
		return "", err
	}
	// The tool's own code starts after the argument checks.
	defer func(start time.Time) { inside.Add(int64(time.Since(start))) }(time.Now())
	if t.CallContext != nil {
		return t.CallContext(ctx, &ToolContext{r: r}, raw)
	}
	return t.Call(ctx, raw)
}

// unknownTool is the error of a call of a tool the run does not offer,
// which names those it does.
func (r *run) unknownTool(name string) error {
	names := make([]string, 0, len(r.defs))
	for _, d := range r.defs {
		names = append(names, d.Function.Name)
	}
	return fmt.Errorf("%w %q; the available tools are: %s", layer.ErrUnknownTool, name, strings.Join(names, ", "))
}

// toolArgs returns the arguments of a call of tool name, normalised by
// checkArgs and checked against the tool's schema.
func (a *Agent) toolArgs(name string, schema json.RawMessage, args string) (json.RawMessage, error) {
	return toolargs.Check(a.schemas, name, schema, args)
}

// textOnly wraps a streaming func so that it receives only text, and its
// panics become errors of the model call. The OpenAI client also streams
// tool-call deltas (and legacy function-call deltas) through it, as JSON,
// and empty chunks.
func textOnly(fn func(ctx context.Context, chunk []byte) error) func(ctx context.Context, chunk []byte) error {
	return func(ctx context.Context, chunk []byte) (err error) {
		if len(chunk) == 0 || isCallDelta(chunk) {
			return nil
		}
		// Some clients call it from a goroutine of their own, where a
		// panic would end the process.
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("%w in Config.Stream: %v", ErrPanic, p)
			}
		}()
		return fn(ctx, chunk)
	}
}

// isCallDelta reports whether a streamed chunk is the JSON of tool-call
// deltas ([{"type":...,"function":{...}}]) or of a function call
// ({"name":...,"arguments":...}) rather than text.
func isCallDelta(chunk []byte) bool {
	switch chunk[0] {
	case '[':
		var calls []struct {
			Function *json.RawMessage `json:"function"`
		}
		return json.Unmarshal(chunk, &calls) == nil && len(calls) > 0 && calls[0].Function != nil
	case '{':
		var call struct {
			Name      *string `json:"name"`
			Arguments *string `json:"arguments"`
		}
		return json.Unmarshal(chunk, &call) == nil && call.Name != nil && call.Arguments != nil
	}
	return false
}

// lastHumanText returns the text of the last user message in msgs.
func lastHumanText(msgs []llms.MessageContent) string {
	i := lastHuman(msgs)
	if i < 0 {
		return ""
	}
	var b strings.Builder
	for _, p := range msgs[i].Parts {
		if t, ok := p.(llms.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// emit sends an event to the run's Tally (see RunStatus), the observer
// and, at debug level, the logger.
func (a *Agent) emit(ctx context.Context, e Event) {
	observeTally(ctx, e)
	if a.cfg.Observer != nil {
		a.cfg.Observer(e)
	}
	// Errors that end a run are returned to the caller, and tool errors go
	// to the model: only a failed checkpoint, which the caller may not
	// notice in a successful-looking partial result, is a warning.
	lvl := slog.LevelDebug
	if e.Err != nil && (e.Kind == EventCheckpoint || e.Kind == EventSummary || e.Kind == EventAudit) {
		lvl = slog.LevelWarn
	}
	if !a.cfg.Logger.Enabled(ctx, lvl) {
		return
	}
	a.cfg.Logger.LogAttrs(ctx, lvl, "agentloop: "+string(e.Kind), logAttrs(a.cfg.Name, &e)...)
}

// logAttrs returns the attributes of an event's log line: the agent,
// the event's kind, thread and step, and those of its other fields that
// are set.
func logAttrs(agent string, e *Event) []slog.Attr {
	attrs := []slog.Attr{slog.String("agent", agent), slog.String("event", string(e.Kind)), slog.String("thread", e.ThreadID), slog.Int("step", e.Step)}
	if e.Depth > 0 {
		attrs = append(attrs, slog.Int("depth", e.Depth))
	}
	if e.Duration > 0 {
		attrs = append(attrs, slog.Duration("duration", e.Duration))
	}
	if e.Tool != "" {
		attrs = append(attrs, slog.String("tool", e.Tool))
	}
	if e.Layer != "" {
		attrs = append(attrs, slog.String("layer", e.Layer), slog.String("hook", e.Hook))
	}
	if e.Usage.TotalTokens > 0 {
		attrs = append(attrs, slog.Int("prompt_tokens", e.Usage.PromptTokens), slog.Int("completion_tokens", e.Usage.CompletionTokens), slog.Int("total_tokens", e.Usage.TotalTokens))
	}
	if e.StopReason != "" {
		attrs = append(attrs, slog.String("stop_reason", e.StopReason))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.Any("error", e.Err))
	}
	return attrs
}
