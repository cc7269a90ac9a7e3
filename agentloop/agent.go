package agentloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
)

// Agent runs a ReAct loop over a langchaingo model with memory layers and
// tools. It is immutable after [New] and safe for concurrent use: every
// run gets its own [layer.Stack], so many threads can run at once. Runs of
// one thread must not overlap; a second concurrent run of the same thread
// fails at its first checkpoint with an error that is
// storage.ErrConflict.
type Agent struct {
	cfg          Config
	tools        map[string]*Tool
	toolDefs     []llms.Tool // the agent's own tools, in Config order
	spawnDef     llms.Tool
	schemas      *schemaCache
	compiler     *prompt.Compiler
	systemTokens int
}

// RunInput is one user message on a thread.
type RunInput struct {
	// ThreadID identifies the conversation. Required. A thread with a
	// checkpoint in the store is continued.
	ThreadID string
	// ResourceID identifies the thread's owner (a user, a project);
	// resource-scoped layers share state across its threads. Optional.
	ResourceID string
	// Input is the user's message. Empty continues the thread without a
	// new message (after a limit stopped a run, for example).
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
	// Usage is the run's token usage.
	Usage Usage
	// Messages is the thread's whole history after the run, as sent to
	// the model (without the system prompt).
	Messages []llms.MessageContent
}

// New validates cfg and returns an Agent. Tool names must be valid
// ([ValidateToolName]) and unique, every tool needs a Call, and tool
// schemas must compile; the errors are [ErrInvalidTool]. New does no I/O.
func New(cfg Config) (*Agent, error) {
	if cfg.Model == nil {
		return nil, ErrNoModel
	}
	cfg = cfg.withDefaults()
	cfg.Layers = slices.Clone(cfg.Layers)
	cfg.CallOptions = slices.Clone(cfg.CallOptions)
	cfg.Vars = maps.Clone(cfg.Vars)
	a := &Agent{cfg: cfg, tools: make(map[string]*Tool, len(cfg.Tools)), schemas: &schemaCache{}}
	for i := range cfg.Tools {
		t := cfg.Tools[i]
		if err := ValidateToolName(t.Name); err != nil {
			return nil, err
		}
		if t.Call == nil && t.CallRun == nil {
			return nil, fmt.Errorf("%w: %s has no Call or CallRun", ErrInvalidTool, t.Name)
		}
		if _, dup := a.tools[t.Name]; dup {
			return nil, fmt.Errorf("%w: %s registered twice", ErrInvalidTool, t.Name)
		}
		if t.Name == SpawnToolName && a.spawnEnabled() {
			return nil, fmt.Errorf("%w: %s is the spawn tool's name; set DisableSpawnTool to use it", ErrInvalidTool, t.Name)
		}
		if len(t.Parameters) == 0 {
			t.Parameters = anyObject
		}
		if _, err := a.schemas.compile(t.Parameters); err != nil {
			return nil, fmt.Errorf("%w: %s: parameters: %w", ErrInvalidTool, t.Name, err)
		}
		a.tools[t.Name] = &t
		a.toolDefs = append(a.toolDefs, llmTool(t.Name, t.Description, t.Parameters))
	}
	a.spawnDef = llmTool(SpawnToolName, spawnDescription, spawnParams)
	c, err := a.newCompiler(cfg.Instructions, cfg.Template)
	if err != nil {
		return nil, err
	}
	a.compiler = c
	a.systemTokens = cfg.Counter.Count(cfg.Instructions)
	return a, nil
}

func (a *Agent) newCompiler(instructions, template string) (*prompt.Compiler, error) {
	c, err := prompt.New(prompt.Config{Template: template, Instructions: instructions, Counter: a.cfg.Counter})
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
	a          *Agent
	compiler   *prompt.Compiler
	sysTokens  int
	stack      *layer.Stack
	threadID   string
	resourceID string
	depth      int
	input      string
	vars       map[string]any
	msgs       []llms.MessageContent
	defs       []llms.Tool
	opts       []llms.CallOption
	res        *Result

	alloc    *prompt.Allocation // budgets, computed on the first step
	layerCap float64            // the sum of alloc.Layers
	callIDs  map[string]bool    // tool call IDs in msgs
	// msgTokens are the token counts of msgs[:len(msgTokens)], for
	// usage estimates.
	msgTokens []int
	// lastSystem and its token count: the system prompt often stays
	// the same from one step to the next.
	lastSystem       string
	lastSystemTokens int

	persist  bool
	ckptVer  int64
	ckptBase Checkpoint // steps and usage of earlier runs
	// compacted is the compaction watermark (Checkpoint.Compacted).
	compacted int
	// baseMsgs is how many messages came from the checkpoint; the
	// last successful checkpoint holds msgs[:savedMsgs] and savedSteps
	// of this run's steps.
	baseMsgs, savedMsgs, savedSteps int
	// ckpt is the last checkpoint's JSON, which the next one extends
	// (see encodeCheckpoint): ckpt[:ckptMsgEnd] is the JSON up to and
	// including msgs[:ckptMsgs].
	ckptKey    string // storage.ThreadKey(threadID, CheckpointName)
	ckpt       []byte
	ckptMsgEnd int
	ckptMsgs   int
	snapIDs    []string          // the last snapshot's layer IDs, sorted
	snapValid  map[string][]byte // each layer's last snapshot found valid
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
	if a.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, a.cfg.Timeout, ErrTimeout)
		defer cancel()
	}
	start := time.Now()
	a.emit(ctx, Event{Kind: EventRunStart, ThreadID: in.ThreadID})

	ckpt, ver, err := a.loadCheckpoint(ctx, in.ThreadID)
	if err != nil {
		return nil, err
	}
	if ckpt == nil && in.Input == "" {
		return nil, fmt.Errorf("%w: empty input, and thread %q has no checkpoint to continue (a new thread, or its checkpoint is gone)", ErrInvalidConfig, in.ThreadID)
	}
	stack, err := a.newStack(layer.Env{ThreadID: in.ThreadID, ResourceID: in.ResourceID, Store: a.cfg.Store, Logger: a.cfg.Logger}, 0)
	if err != nil {
		return nil, err
	}
	if err := stack.Init(ctx); err != nil {
		return nil, fmt.Errorf("agentloop: init layers: %w", err)
	}
	defer a.closeStack(ctx, stack)
	if ckpt != nil && a.cfg.RestoreLayers {
		a.restoreLayers(ctx, stack, ckpt.Layers)
	}

	r := &run{
		a: a, compiler: a.compiler, sysTokens: a.systemTokens, stack: stack,
		threadID: in.ThreadID, resourceID: in.ResourceID,
		input: in.Input, vars: a.mergeVars(in.Vars),
		res:     &Result{ThreadID: in.ThreadID},
		persist: true, ckptVer: ver,
	}
	if ckpt != nil {
		r.msgs = ckpt.Messages
		r.ckptBase = *ckpt
		r.compacted = ckpt.Compacted
		if !a.cfg.KeepToolResults {
			end := len(r.msgs)
			if in.Input == "" {
				// The turn goes on (after a limit, say): its own
				// messages are not an earlier turn's.
				end = max(lastHuman(r.msgs), r.compacted)
			}
			compactHistory(r.msgs[r.compacted:end])
			r.compacted = end
		}
	}
	r.baseMsgs, r.savedMsgs = len(r.msgs), len(r.msgs)
	if in.Input != "" {
		r.msgs = append(r.msgs, llms.TextParts(llms.ChatMessageTypeHuman, in.Input))
	} else {
		r.input = lastHumanText(r.msgs)
	}
	if err := r.prepareTools(); err != nil {
		return nil, err
	}
	res, err := r.loop(ctx)
	a.emit(ctx, Event{Kind: EventRunEnd, ThreadID: in.ThreadID, Step: res.Steps, Duration: time.Since(start), Usage: res.Usage, Err: err})
	return res, err
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

// newStack builds the layer stack of a run.
func (a *Agent) newStack(env layer.Env, depth int) (*layer.Stack, error) {
	thread := env.ThreadID
	st, err := layer.NewStack(layer.StackConfig{
		Layers: a.cfg.Layers,
		Env:    env,
		Name:   a.cfg.Name,
		Observer: func(e layer.Event) {
			a.emit(context.Background(), Event{Kind: EventLayerHook, ThreadID: thread, Depth: depth, Layer: e.Layer, Hook: e.Hook, Duration: e.Duration, Err: e.Err})
		},
		ValidateArgs: a.schemas.validate,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return st, nil
}

// closeStack closes a run's layers even when ctx is cancelled, so they can
// flush; each Close is bounded by its layer's timeout.
func (a *Agent) closeStack(ctx context.Context, st *layer.Stack) {
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
		if _, clash := a.tools[t.WireName]; clash || (t.WireName == SpawnToolName && r.canSpawn()) {
			return fmt.Errorf("%w: layer tool %s is sent as %s, which an agent tool already uses", ErrInvalidTool, t.Name, t.WireName)
		}
		params := t.Function.Parameters
		if len(params) == 0 {
			params = anyObject
		}
		r.defs = append(r.defs, llmTool(t.WireName, t.Function.Description, params))
	}
	r.opts = make([]llms.CallOption, 0, 2+len(a.cfg.CallOptions))
	if len(r.defs) > 0 {
		r.opts = append(r.opts, llms.WithTools(r.defs))
	}
	if a.cfg.Stream != nil {
		r.opts = append(r.opts, llms.WithStreamingFunc(textOnly(a.cfg.Stream)))
	}
	r.opts = append(r.opts, a.cfg.CallOptions...)
	return nil
}

func (r *run) canSpawn() bool { return r.a.spawnEnabled() && r.depth < r.a.cfg.MaxDepth }

// loop runs steps until a final answer, a limit or an error.
func (r *run) loop(ctx context.Context) (*Result, error) {
	a := r.a
	for {
		if err := ctx.Err(); err != nil {
			return r.stopped(ctx)
		}
		if r.res.Steps >= a.cfg.MaxSteps {
			r.res.Messages = r.msgs
			return r.res, &LimitError{Limit: ErrMaxSteps, Result: r.res}
		}
		final, err := r.step(ctx)
		r.res.Messages = r.msgs
		if err != nil {
			if ctx.Err() != nil {
				return r.stopped(ctx)
			}
			return r.res, err
		}
		if final {
			return r.res, nil
		}
		if a.cfg.MaxTokens > 0 && r.res.Usage.TotalTokens >= a.cfg.MaxTokens {
			return r.res, &LimitError{Limit: ErrMaxTokens, Result: r.res}
		}
	}
}

// stopped is the result of a run whose context ended. What the run did
// and no checkpoint holds yet (its user message, a step whose checkpoint
// was cut short) is checkpointed first, on a context from saveContext; if
// that fails, the error also holds the *CheckpointError.
func (r *run) stopped(ctx context.Context) (*Result, error) {
	r.res.Messages = r.msgs
	var err error = &LimitError{Limit: ErrTimeout, Result: r.res, Cause: context.DeadlineExceeded}
	if !errors.Is(context.Cause(ctx), ErrTimeout) {
		err = fmt.Errorf("agentloop: run stopped after %d steps: %w", r.res.Steps, ctx.Err())
	}
	if r.persist && r.savedMsgs < len(r.msgs) {
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

// step runs one model call and its tool calls. final reports a response
// without tool calls.
func (r *run) step(ctx context.Context) (final bool, err error) {
	a := r.a
	start := time.Now()
	step := r.res.Steps

	// The budgets depend only on the window, the instructions and the
	// layers, which a run never changes.
	if r.alloc == nil {
		alloc, err := prompt.Allocate(prompt.Request{
			Total:   float64(a.cfg.ContextWindow),
			Reserve: float64(a.cfg.ResponseReserve),
			System:  float64(r.sysTokens),
			Layers:  r.stack.Specs(),
		})
		if err != nil {
			return false, fmt.Errorf("%w: budgets: %w", ErrInvalidConfig, err)
		}
		r.alloc = &alloc
		for _, v := range alloc.Layers {
			r.layerCap += v
		}
	}
	alloc := r.alloc
	// A failed recall is reported by the stack and contributes nothing.
	recalled, _ := r.stack.Recall(ctx, layer.Query{Text: r.input, Step: step}, alloc.Layers)
	if err := ctx.Err(); err != nil {
		return false, err
	}
	// Each layer is held to its own share as well as the total, so one
	// that ignores Query.Budget cannot take a later layer's minimum.
	recalled = prompt.ProjectLayersWithin(recalled, alloc.Layers, r.layerCap, a.cfg.Counter)
	system, err := r.compiler.Compile(recalled, r.vars)
	if err != nil {
		return false, fmt.Errorf("agentloop: step %d: system prompt: %w", step, err)
	}
	hist, err := r.history(alloc.History)
	if err != nil {
		return false, fmt.Errorf("agentloop: step %d: %w", step, err)
	}
	req := make([]llms.MessageContent, 0, len(hist)+1)
	req = append(req, llms.TextParts(llms.ChatMessageTypeSystem, system))
	req = append(req, hist...)

	mstart := time.Now()
	resp, err := a.cfg.Model.GenerateContent(ctx, req, r.opts...)
	modelTime := time.Since(mstart)
	if err == nil && (resp == nil || len(resp.Choices) == 0 || resp.Choices[0] == nil) {
		err = ErrEmptyResponse
	}
	if err != nil {
		a.emit(ctx, Event{Kind: EventModelCall, ThreadID: r.threadID, Depth: r.depth, Step: step, Duration: modelTime, Err: err})
		return false, fmt.Errorf("agentloop: step %d: model: %w", step, err)
	}
	choice := resp.Choices[0]
	usage, ok := usageFrom(choice.GenerationInfo)
	if !ok {
		usage = r.estimateUsage(system, hist, choice)
	}
	r.res.Usage = r.res.Usage.Add(usage)
	a.emit(ctx, Event{Kind: EventModelCall, ThreadID: r.threadID, Depth: r.depth, Step: step, Duration: modelTime, Usage: usage})

	calls := r.normalizeCalls(choice, step)
	ai := llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: make([]llms.ContentPart, 0, len(calls)+1)}
	if choice.Content != "" {
		ai.Parts = append(ai.Parts, llms.TextContent{Text: choice.Content})
	}
	turn := layer.Turn{Step: step, Query: r.input, Response: layer.Response{Text: choice.Content}}
	for _, c := range calls {
		ai.Parts = append(ai.Parts, c)
		turn.Response.ToolCalls = append(turn.Response.ToolCalls, layer.ToolCall{ID: c.ID, Name: c.FunctionCall.Name, Arguments: c.FunctionCall.Arguments})
	}
	if len(ai.Parts) == 0 {
		ai.Parts = append(ai.Parts, llms.TextContent{Text: ""})
	}
	r.msgs = append(r.msgs, ai)

	var toolTime time.Duration
	if len(calls) > 0 {
		tstart := time.Now()
		var inside time.Duration
		turn.Results, inside = r.execTools(ctx, step, calls)
		// The time inside the tools, summed over calls, cannot exceed
		// the wall time when calls overlapped.
		toolTime = min(inside, time.Since(tstart))
		for _, res := range turn.Results {
			r.msgs = append(r.msgs, llms.MessageContent{
				Role:  llms.ChatMessageTypeTool,
				Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: res.CallID, Name: res.Name, Content: capResult(res.Content, a.cfg.MaxToolResultBytes)}},
			})
		}
	}
	r.res.Steps++
	r.res.ToolCalls += len(calls)
	if len(calls) == 0 {
		r.res.Output = choice.Content
	}

	// The step happened even if the run's context ended during its tools
	// (what they did is real): the layers and the checkpoint record it.
	sctx, cancel := r.saveContext(ctx)
	defer cancel()
	// Store failures are reported by the stack; the step goes on.
	_ = r.stack.Store(sctx, turn)
	if r.persist {
		if err := r.checkpoint(sctx); err != nil {
			return false, err
		}
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	a.emit(ctx, Event{Kind: EventStep, ThreadID: r.threadID, Depth: r.depth, Step: step, Duration: time.Since(start), ModelTime: modelTime, ToolTime: toolTime})
	return len(calls) == 0, nil
}

// history projects the history into budget tokens, newest first
// (prompt.ProjectHistory), but never without the current user message:
// when the turn's later messages do not all fit with it, it is sent with
// the newest of them that fit, and when it does not fit on its own the
// error is ErrInputTooLarge.
func (r *run) history(budget float64) ([]llms.MessageContent, error) {
	c := r.a.cfg.Counter
	hist := prompt.ProjectHistory(r.msgs, budget, c)
	in := lastHuman(r.msgs)
	if in < 0 || lastHuman(hist) >= 0 {
		return hist, nil
	}
	n := prompt.CountMessage(c, r.msgs[in])
	if float64(n) > budget {
		return nil, fmt.Errorf("%w: it counts %d tokens, the history's share of the window %.0f", ErrInputTooLarge, n, budget)
	}
	rest := prompt.ProjectHistory(r.msgs[in+1:], budget-float64(n), c)
	return append([]llms.MessageContent{r.msgs[in]}, rest...), nil
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

// estimateUsage counts a call's tokens when the model reports none. The
// history's messages never change, so each one's count is kept
// (r.msgTokens) and reused by later steps.
func (r *run) estimateUsage(system string, hist []llms.MessageContent, choice *llms.ContentChoice) Usage {
	c := r.a.cfg.Counter
	if system != r.lastSystem {
		r.lastSystem, r.lastSystemTokens = system, c.Count(system)
	}
	p := prompt.MessageOverhead + r.lastSystemTokens
	n := len(hist)
	if n > 0 && n <= len(r.msgs) && &hist[n-1] == &r.msgs[len(r.msgs)-1] {
		// hist is a suffix of the history: use the cached counts.
		for i := len(r.msgTokens); i < len(r.msgs); i++ {
			r.msgTokens = append(r.msgTokens, prompt.CountMessage(c, r.msgs[i]))
		}
		for _, t := range r.msgTokens[len(r.msgs)-n:] {
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

// normalizeCalls returns the choice's tool calls with a type, a function
// and an ID unique in the thread on each; a legacy FuncCall becomes a tool
// call. Providers (and scripted models) may reuse IDs across turns, and a
// reused ID would pair a result with the wrong call in the history, so a
// repeated ID gets a suffix; the AI message and the tool message both
// carry the new ID.
func (r *run) normalizeCalls(choice *llms.ContentChoice, step int) []llms.ToolCall {
	calls := choice.ToolCalls
	if len(calls) == 0 && choice.FuncCall != nil {
		calls = []llms.ToolCall{{FunctionCall: choice.FuncCall}}
	}
	if len(calls) == 0 {
		return nil
	}
	if r.callIDs == nil {
		r.callIDs = make(map[string]bool)
		for _, m := range r.msgs {
			for _, p := range m.Parts {
				if c, ok := p.(llms.ToolCall); ok {
					r.callIDs[c.ID] = true
				}
			}
		}
	}
	out := make([]llms.ToolCall, 0, len(calls))
	for i, c := range calls {
		if c.FunctionCall == nil {
			continue
		}
		fc := *c.FunctionCall
		c.FunctionCall = &fc
		if c.ID == "" {
			c.ID = "call_" + strconv.Itoa(step) + "_" + strconv.Itoa(i)
		}
		for base, n := c.ID, 1; r.callIDs[c.ID]; n++ {
			c.ID = base + "_" + strconv.Itoa(n)
		}
		r.callIDs[c.ID] = true
		if c.Type == "" {
			c.Type = "function"
		}
		out = append(out, c)
	}
	return out
}

// execTools runs the step's tool calls and returns their results in call
// order. Calls run concurrently up to ToolConcurrency, except calls of
// Exclusive tools, which run alone. Calls beyond MaxToolCallsPerStep are
// answered with an error and not run.
//
// inside is the time spent inside the tools' own code (after argument
// checks), summed over calls.
func (r *run) execTools(ctx context.Context, step int, calls []llms.ToolCall) (results []layer.ToolResult, inside time.Duration) {
	a := r.a
	results = make([]layer.ToolResult, len(calls))
	var insideNS atomic.Int64
	one := func(i int) {
		c := calls[i]
		start := time.Now()
		out, err := r.callTool(ctx, c.FunctionCall.Name, c.FunctionCall.Arguments, &insideNS)
		res := layer.ToolResult{CallID: c.ID, Name: c.FunctionCall.Name, Arguments: c.FunctionCall.Arguments, Content: out}
		if err != nil {
			res.Content = "error: " + err.Error()
			res.IsError = true
		}
		results[i] = res
		a.emit(ctx, Event{Kind: EventToolCall, ThreadID: r.threadID, Depth: r.depth, Step: step, Tool: c.FunctionCall.Name, Duration: time.Since(start), Err: err})
	}
	if len(calls) == 1 {
		one(0)
		return results, time.Duration(insideNS.Load())
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, a.cfg.ToolConcurrency)
	for i, c := range calls {
		if i >= a.cfg.MaxToolCallsPerStep {
			results[i] = layer.ToolResult{CallID: c.ID, Name: c.FunctionCall.Name, Arguments: c.FunctionCall.Arguments, IsError: true,
				Content: fmt.Sprintf("error: not run: at most %d tool calls are run per step; call it again in the next step if still needed", a.cfg.MaxToolCallsPerStep)}
			continue
		}
		if t, ok := a.tools[c.FunctionCall.Name]; ok && t.Exclusive {
			wg.Wait()
			one(i)
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			results[i] = layer.ToolResult{CallID: c.ID, Name: c.FunctionCall.Name, Arguments: c.FunctionCall.Arguments, IsError: true, Content: "error: not run: " + ctx.Err().Error()}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			one(i)
		}()
	}
	wg.Wait()
	return results, time.Duration(insideNS.Load())
}

// callTool runs one tool call: an agent tool, the spawn tool or a layer
// function. Errors are for the model.
// The time spent in the tool's own code is added to inside.
func (r *run) callTool(ctx context.Context, name, args string, inside *atomic.Int64) (string, error) {
	a := r.a
	if t, ok := a.tools[name]; ok {
		return a.callAgentTool(ctx, r, t, args, inside)
	}
	start := time.Now()
	defer func() { inside.Add(int64(time.Since(start))) }()
	if name == SpawnToolName && r.canSpawn() {
		return r.spawnTool(ctx, args)
	}
	if _, ok := r.stack.LookupTool(name); ok {
		return r.stack.CallTool(ctx, name, args)
	}
	names := make([]string, 0, len(r.defs))
	for _, d := range r.defs {
		names = append(names, d.Function.Name)
	}
	return "", fmt.Errorf("%w %q; the available tools are: %s", ErrUnknownTool, name, strings.Join(names, ", "))
}

// callAgentTool validates the arguments and runs one of the agent's own
// tools, turning a panic into an error.
func (a *Agent) callAgentTool(ctx context.Context, r *run, t *Tool, args string, inside *atomic.Int64) (out string, err error) {
	raw, err := a.toolArgs(t.Name, t.Parameters, args)
	if err != nil {
		return "", err
	}
	start := time.Now()
	defer func() {
		inside.Add(int64(time.Since(start)))
		if p := recover(); p != nil {
			out, err = "", fmt.Errorf("agentloop: tool %s panicked: %v", t.Name, p)
		}
	}()
	return t.call(ctx, r, raw)
}

// toolArgs returns the arguments of a call of tool name, normalised by
// checkArgs and checked against the tool's schema.
func (a *Agent) toolArgs(name string, schema json.RawMessage, args string) (json.RawMessage, error) {
	raw, err := checkArgs(args)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := a.schemas.validate(schema, raw); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidArguments, name, err)
	}
	return raw, nil
}

// textOnly wraps a streaming func so that it receives only text: the
// OpenAI client also streams tool-call deltas (and legacy function-call
// deltas) through it, as JSON, and empty chunks.
func textOnly(fn func(ctx context.Context, chunk []byte) error) func(ctx context.Context, chunk []byte) error {
	return func(ctx context.Context, chunk []byte) error {
		if len(chunk) == 0 || isCallDelta(chunk) {
			return nil
		}
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

// emit sends an event to the observer and, at debug level, to the logger.
func (a *Agent) emit(ctx context.Context, e Event) {
	if a.cfg.Observer != nil {
		a.cfg.Observer(e)
	}
	// Errors that end a run are returned to the caller, and tool errors go
	// to the model: only a failed checkpoint, which the caller may not
	// notice in a successful-looking partial result, is a warning.
	lvl := slog.LevelDebug
	if e.Err != nil && e.Kind == EventCheckpoint {
		lvl = slog.LevelWarn
	}
	if !a.cfg.Logger.Enabled(ctx, lvl) {
		return
	}
	attrs := []slog.Attr{slog.String("agent", a.cfg.Name), slog.String("event", string(e.Kind)), slog.String("thread", e.ThreadID), slog.Int("step", e.Step)}
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
	if e.Err != nil {
		attrs = append(attrs, slog.Any("error", e.Err))
	}
	a.cfg.Logger.LogAttrs(ctx, lvl, "agentloop: "+string(e.Kind), attrs...)
}
