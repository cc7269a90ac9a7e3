package chainmemory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/memory"
	"github.com/tmc/langchaingo/schema"
	"github.com/tmc/langchaingo/tools"

	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/internal/toolargs"
	"github.com/memlayer/memlayer/internal/writepath"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/redact"
	"github.com/memlayer/memlayer/route"
	"github.com/memlayer/memlayer/thread"
)

// Config configures a [Memory]. The zero value is valid.
type Config struct {
	// MemoryKey is the variable the layers' text and the transcript are
	// loaded into. Zero is "history", the key langchaingo's conversation
	// prompts use.
	MemoryKey string
	// InputKey is the input variable holding the user's message. Zero
	// means "input", or the only input when there is one.
	InputKey string
	// OutputKey is the output variable holding the model's answer. Zero
	// means "text" (what chains.LLMChain returns), "output" (what
	// agents.Executor returns), or the only output when there is one.
	OutputKey string
	// Counter counts tokens for the layers' items. Nil is prompt.Estimate.
	Counter prompt.Counter
	// Transcript keeps the conversation itself. Its text under MemoryKey
	// follows the layers' blocks, its other variables are passed on, and
	// every turn is saved to it (the outputs without the executor's
	// intermediate steps). Nil is a langchaingo
	// memory.ConversationBuffer holding every turn as "Human: ..." and
	// "AI: ..." lines. It must return text under MemoryKey, not messages:
	// agents.Executor accepts only string inputs.
	Transcript schema.Memory
	// NoTranscript leaves the conversation out, for a chain that keeps it
	// elsewhere: the memory then holds the layers' blocks only.
	NoTranscript bool
	// Redaction masks personal data and secrets in the turn the layers'
	// Store gets, as an agentloop.Agent does (see [redact.Policy]): on by
	// default, except for the calls of a layer whose tools are not
	// masked (the scratchpad's legacy call, applied from the turn). The
	// transcript is the chain's own and is saved as it was said;
	// [Memory.Tools] masks the arguments of the layers' tools as an agentloop.Agent
	// does; [ExportTools] and [LLMTools] pass them as they are.
	Redaction redact.Policy
	// Router routes the writes the layers' Proposers propose (see
	// layer.Proposer), which the Memory takes after each SaveContext's
	// Store and keeps as an agentloop.Agent does. Nil is route.Default.
	Router route.Router
	// Audit, when set, commits each turn's memory operations as a turn of
	// ThreadID's audit (see package audit): each
	// layer's recall by the LoadMemoryVariables calls since the last
	// SaveContext (the tokens its block took), and, at SaveContext, the
	// calls of the layers' tools (those of [Memory.Tools] as they run,
	// else those the executor's intermediate steps show succeeding: a
	// scratchpad update, a fact memorized or forgotten; the tools of
	// [ExportTools] call the layers directly, so such a fact was not
	// routed or masked), what the layers' Store kept where
	// they count it (entity memory's extractions and evictions, episodic
	// memory's episodes, the key-value memory's writes), the Proposers'
	// writes with their routes, and what was redacted. Texts are masked
	// as Redaction says. Nil audits nothing.
	Audit *audit.Log
	// ThreadID is the thread whose audit the turns go to; Audit needs it.
	ThreadID string
	// ResourceID is the resource (the user) ThreadID belongs to: give the
	// stack's layer.Env.ResourceID. Before the audit's first commit it is
	// recorded as the thread's owner (see [thread.OwnerName]), so that
	// inspect.Inspector's EraseResource and Threads find the user's
	// text in the audit; a thread that belongs to another resource is not
	// written to (thread.ErrOtherOwner). Empty records no owner: the thread is
	// found by its ID only (inspect.Inspector's DeleteThread).
	ResourceID string
	// Logger logs what SaveContext cannot return: a proposed write that
	// was not kept, a panic recovered in a Router or a Proposer. Nil is
	// slog.Default().
	Logger *slog.Logger
}

// Memory adapts an initialised [layer.Stack] to langchaingo's
// schema.Memory, so memlayer's layers plug into chains and
// agents.Executor (through chains.Call or chains.Run, which load and save
// memory; calling an Executor's Call directly skips memory).
//
// LoadMemoryVariables recalls every layer for the input and returns the
// layers' blocks, in slot order, then the transcript (see
// Config.Transcript), under MemoryKey. SaveContext hands the input
// and the answer to the layers' Store as one turn, keeps what the
// layers' Proposers propose (see layer.Proposer), saves the input and the
// answer to the transcript and, with Config.Audit, commits the
// turn's memory operations to the thread's audit. Clear empties every layer that can be cleared, and the
// transcript. The stack's lifecycle (Init, Close) stays with the caller.
// Memory is safe for concurrent use as far as the stack and the
// transcript are.
//
// # Tool results
//
// The turn handed to the layers carries the tool calls and results of an
// agents.Executor made with agents.WithReturnIntermediateSteps(), read
// from its "intermediateSteps" output (call it with chains.Call:
// chains.Run refuses a chain with two outputs). That output is where
// langchaingo v0.1.14 exposes them: its Executor reports a call to the
// callbacks handler (HandleAgentAction) before running the tool but never
// reports the result, which reaches HandleToolEnd only from tools that
// call it themselves. Tools from [ExportTools] act on the layers directly.
//
// # Which agents show the memory
//
// chains.NewConversation and agents.NewConversationalAgent have a
// {{.history}} slot in their prompt, so the memory shows with the default
// MemoryKey. agents.NewOpenAIFunctionsAgent and agents.NewOneShotAgent
// have none by default: the memory is loaded but no prompt shows it. Give
// the OpenAI-functions agent a message that does:
//
//	agents.NewOpenAIFunctionsAgent(llm, tools, agents.NewOpenAIOption().WithExtraMessages(
//		[]prompts.MessageFormatter{prompts.NewSystemMessagePromptTemplate("{{.history}}", []string{"history"})}))
//
// and the one-shot agent a prompt prefix that does, such as
// agents.WithPromptPrefix("Memory:\n{{.history}}\n\n" + your prefix).
type Memory struct {
	stack      *layer.Stack
	cfg        Config
	compiler   *prompt.Compiler
	step       atomic.Int64
	transcript schema.Memory
	redact     *writepath.Redactor // nil: redaction disabled
	// buffer is the default transcript, which is saved with the input and
	// output this Memory picks.
	buffer *memory.ConversationBuffer

	// mu guards what follows: the turn's audit so far (its recalls, the
	// calls of the tools of Tools; nil without Config.Audit) and
	// what it masked so far, whether Tools was called, and the layers
	// watched, found on the first SaveContext.
	mu        sync.Mutex
	turn      *writepath.Auditor
	redacted  *writepath.Counts
	bound     bool
	watched   bool
	counts    writepath.WriteCounts
	proposers []writepath.Proposer
	owned     bool // the thread's owner is recorded
}

// newTurn starts the audit and the redaction counts of a turn; m.mu is
// held.
func (m *Memory) newTurn() (au *writepath.Auditor, red *writepath.Counts) {
	au, red = m.turn, m.redacted
	m.turn, m.redacted = nil, &writepath.Counts{}
	if m.cfg.Audit != nil {
		m.turn = &writepath.Auditor{Full: true}
	}
	return au, red
}

// current returns the turn's audit and redaction counts.
func (m *Memory) current() (*writepath.Auditor, *writepath.Counts) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.turn, m.redacted
}

// intermediateSteps is the output key under which an agents.Executor made
// with agents.WithReturnIntermediateSteps returns its steps.
const intermediateSteps = "intermediateSteps"

// New returns a schema.Memory over stack, which must be initialised
// before the chain runs.
func New(stack *layer.Stack, cfg Config) *Memory {
	if cfg.MemoryKey == "" {
		cfg.MemoryKey = "history"
	}
	if cfg.Counter == nil {
		cfg.Counter = prompt.Estimate
	}
	cfg.Router = cmp.Or(cfg.Router, route.Default)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	// The zero prompt config never fails: no template to parse.
	var ids []string
	if stack != nil {
		for _, l := range stack.Layers() {
			ids = append(ids, l.Spec().ID)
		}
	}
	c, _ := prompt.New(prompt.Config{Counter: cfg.Counter, LayerIDs: ids})
	m := &Memory{stack: stack, cfg: cfg, compiler: c, redact: writepath.NewRedactor(cfg.Redaction)}
	m.cfg.Logger = m.redact.Logger(cfg.Logger) // errors and panics reach the log masked
	m.newTurn()
	switch {
	case cfg.NoTranscript:
	case cfg.Transcript != nil:
		m.transcript = cfg.Transcript
	default:
		m.buffer = memory.NewConversationBuffer(memory.WithMemoryKey(cfg.MemoryKey))
		m.transcript = m.buffer
	}
	return m
}

// GetMemoryKey implements schema.Memory.
func (m *Memory) GetMemoryKey(context.Context) string { return m.cfg.MemoryKey }

// MemoryVariables implements schema.Memory: MemoryKey, then the
// transcript's other variables.
func (m *Memory) MemoryVariables(ctx context.Context) []string {
	vars := []string{m.cfg.MemoryKey}
	if m.transcript != nil {
		for _, v := range m.transcript.MemoryVariables(ctx) {
			if v != m.cfg.MemoryKey {
				vars = append(vars, v)
			}
		}
	}
	return vars
}

// LoadMemoryVariables implements schema.Memory: it recalls the layers for
// the input and returns their text, then the transcript's, under
// MemoryKey. A layer whose recall fails contributes nothing (the stack
// reports it).
func (m *Memory) LoadMemoryVariables(ctx context.Context, inputs map[string]any) (map[string]any, error) {
	q := layer.Query{Text: pick(inputs, m.cfg.InputKey, "input"), Step: int(m.step.Load()), Counter: m.cfg.Counter}
	recalled, _ := m.stack.Recall(ctx, q, nil)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.auditRecall(q.Step, recalled)
	text, err := m.compiler.Compile(recalled, nil)
	if err != nil {
		return nil, fmt.Errorf("chainmemory: %w", err)
	}
	out := map[string]any{m.cfg.MemoryKey: text}
	if m.transcript == nil {
		return out, nil
	}
	tv, err := m.transcript.LoadMemoryVariables(ctx, inputs)
	if err != nil {
		return nil, fmt.Errorf("chainmemory: transcript: %w", err)
	}
	if err := m.addTranscript(out, text, tv); err != nil {
		return nil, err
	}
	return out, nil
}

// auditRecall adds to the turn's audit, when there is one, what each
// layer recalled at step.
func (m *Memory) auditRecall(step int, recalled []layer.Recalled) {
	au, _ := m.current()
	if au == nil {
		return
	}
	for _, rc := range recalled {
		if n := writepath.RecallTokens(rc.Items, m.cfg.Counter); n > 0 {
			au.Add(audit.Entry{Op: audit.OpRecall, Step: step, Layer: rc.ID, Tokens: n})
		}
	}
}

// addTranscript adds the transcript's variables tv to out: its text
// after the layers' text, under MemoryKey, and its other variables as
// they are.
func (m *Memory) addTranscript(out map[string]any, text string, tv map[string]any) error {
	for k, v := range tv {
		if k != m.cfg.MemoryKey {
			out[k] = v
			continue
		}
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("chainmemory: transcript: %q is a %T, want text (a buffer memory without ReturnMessages)", k, v)
		}
		if s != "" {
			if text != "" {
				text += "\n\n"
			}
			out[k] = text + s
		}
	}
	return nil
}

// SaveContext implements schema.Memory: the input, the output and, from
// an executor's intermediate steps, the tool calls and their results
// become one turn for the layers' Store, and the input and output are
// saved to the transcript. Store failures are reported by the stack and
// joined into the error.
func (m *Memory) SaveContext(ctx context.Context, inputs, outputs map[string]any) error {
	answers := outputs
	if _, ok := outputs[intermediateSteps]; ok {
		answers = maps.Clone(outputs)
		delete(answers, intermediateSteps)
	}
	t := m.turnOf(int(m.step.Add(1)-1), inputs, answers, outputs)
	errs := m.keepTurn(ctx, t)
	switch {
	case m.buffer != nil:
		if err := m.buffer.ChatHistory.AddUserMessage(ctx, t.Query); err != nil {
			errs = append(errs, err)
		} else if err := m.buffer.ChatHistory.AddAIMessage(ctx, t.Response); err != nil {
			errs = append(errs, err)
		}
	case m.transcript != nil:
		if err := m.transcript.SaveContext(ctx, inputs, answers); err != nil {
			errs = append(errs, fmt.Errorf("transcript: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("chainmemory: %w", err)
	}
	return nil
}

// turnOf is the turn an executor's inputs and outputs make: the input,
// the answer, and the tool calls and results of its intermediate steps.
func (m *Memory) turnOf(step int, inputs, answers, outputs map[string]any) layer.Turn {
	t := layer.Turn{
		Step:     step,
		Query:    pick(inputs, m.cfg.InputKey, "input"),
		Response: pick(answers, m.cfg.OutputKey, "text", "output"),
	}
	steps, _ := outputs[intermediateSteps].([]schema.AgentStep)
	aliases := map[string]bool{}
	for _, tool := range m.stack.Tools() {
		for _, a := range tool.Aliases {
			aliases[a] = true
		}
	}
	for i, s := range steps {
		if s.Action.Tool == "" {
			continue // an observation of a parse error, not a tool call
		}
		id := s.Action.ToolID
		if id == "" {
			id = fmt.Sprintf("step_%d_%d", t.Step, i)
		}
		t.ToolCalls = append(t.ToolCalls, layer.ToolCall{ID: id, Name: s.Action.Tool, Arguments: s.Action.ToolInput})
		if aliases[s.Action.Tool] {
			// ExportTools offers no alias, so the executor did not run
			// this call: its observation is "not a valid tool", not a
			// result, and the layer applies the call from the turn.
			continue
		}
		t.Results = append(t.Results, layer.ToolResult{ToolCall: layer.ToolCall{ID: id, Name: s.Action.Tool, Arguments: s.Action.ToolInput}, Content: s.Observation})
	}
	return t
}

// keepTurn hands t, masked, to the layers' Store, keeps what the
// Proposers propose, and commits the turn's audit; it returns what
// failed.
func (m *Memory) keepTurn(ctx context.Context, t layer.Turn) []error {
	// The calls of a layer whose tools are not masked (the scratchpad's
	// legacy call, applied from the turn) keep their arguments.
	offered := writepath.OfferedTools(m.stack, m.redact)
	m.mu.Lock()
	au, redacted := m.newTurn()
	m.watchLocked()
	proposers, bound := m.proposers, m.bound
	m.mu.Unlock()
	masked := m.maskTurn(t, redacted, offered)
	var errs []error
	if err := m.stack.Store(ctx, masked); err != nil {
		errs = append(errs, err)
	}
	if au != nil {
		if !bound { // the tools of Tools recorded their own calls
			auditResults(au, t, offered)
		}
		m.mu.Lock()
		m.counts.Record(au, t.Step, 0)
		m.mu.Unlock()
	}
	m.keeper(au).KeepProposals(ctx, proposers, t.Step, m.redact, redacted)
	if au != nil {
		writepath.RecordRedactions(au, t.Step, 0, nil, redacted.Counts())
		if err := m.commitAudit(ctx, au); err != nil {
			errs = append(errs, fmt.Errorf("audit: %w", err))
		}
	}
	return errs
}

// watchLocked finds, at the first turn, the stack's proposers and (with
// an audit log) the layers' counters. m.mu must be held.
func (m *Memory) watchLocked() {
	if m.watched {
		return
	}
	m.watched, m.proposers = true, writepath.Proposers(m.stack)
	if m.cfg.Audit != nil {
		m.counts = writepath.WatchCounts(m.stack)
	}
}

// maskTurn returns t masked for the layers (counting into redacted),
// but for the arguments of the offered tools that keep theirs.
func (m *Memory) maskTurn(t layer.Turn, redacted *writepath.Counts, offered map[string]writepath.OfferedTool) layer.Turn {
	masked := m.redact.Turn(t, redacted)
	for i, c := range t.ToolCalls {
		if offered[c.Name].KeepArgs {
			masked.ToolCalls[i].Arguments = c.Arguments
		}
	}
	return masked
}

// auditResults adds to au the calls of t's results that changed
// memory through an offered tool: those that did not fail.
func auditResults(au *writepath.Auditor, t layer.Turn, offered map[string]writepath.OfferedTool) {
	for _, r := range t.Results {
		if o, ok := offered[r.Name]; ok && !strings.HasPrefix(r.Content, "error: ") {
			if e, ok := writepath.ToolEntry(o.Layer, o.Fn, r.Name, r.Arguments, t.Step, 0); ok {
				au.Add(e)
			}
		}
	}
}

// commitAudit commits the turn's audit au, after claiming the thread.
func (m *Memory) commitAudit(ctx context.Context, au *writepath.Auditor) error {
	if err := m.claimOwner(ctx); err != nil {
		return err
	}
	_, err := m.cfg.Audit.Commit(ctx, m.cfg.ThreadID, m.redact.Audit(au.Entries()))
	return err
}

// claimOwner records the stack's resource as the owner of the audit's
// thread, once.
func (m *Memory) claimOwner(ctx context.Context) error {
	m.mu.Lock()
	owned := m.owned
	m.mu.Unlock()
	if owned || m.cfg.ThreadID == "" {
		return nil
	}
	if err := thread.ClaimOwner(ctx, m.cfg.Audit.Store(), m.cfg.ThreadID, m.cfg.ResourceID); err != nil {
		return err
	}
	m.mu.Lock()
	m.owned = true
	m.mu.Unlock()
	return nil
}

// keeper returns the Memory's keeper, auditing into au.
func (m *Memory) keeper(au *writepath.Auditor) *writepath.Keeper {
	return &writepath.Keeper{Stack: m.stack, Router: m.cfg.Router, Logger: m.cfg.Logger, Audit: au, Recovered: m.recovered}
}

// Tools returns the layers' tools for a langchaingo executor whose memory
// is m. They are those of [ExportTools], bound to m so that they act as
// an agentloop.Agent's do: their arguments are masked as Config.Redaction
// says (the scratchpad's are not), a fact for semantic memory's memorize
// is routed by Config.Router, and with Config.Audit each call
// that changes memory is recorded in the turn the next SaveContext
// commits (which then does not read the layer tools' calls from the
// executor's steps). The stack must be initialised.
func (m *Memory) Tools() []tools.Tool {
	m.mu.Lock()
	m.bound = true
	m.mu.Unlock()
	offered := writepath.OfferedTools(m.stack, m.redact)
	lts := m.stack.Tools()
	out := make([]tools.Tool, 0, len(lts))
	for _, t := range lts {
		out = append(out, memoryTool{m: m, name: t.Name, desc: exportDescription(t), o: offered[t.Name]})
	}
	return out
}

// memoryTool is a layer tool bound to a Memory (see Memory.Tools).
type memoryTool struct {
	m          *Memory
	name, desc string
	o          writepath.OfferedTool // zero for a tool the stack named apart from another's
}

// Name is the tool's name (layer.ToolName).
func (t memoryTool) Name() string { return t.name }

// Description is the function's description and its parameter schema.
func (t memoryTool) Description() string { return t.desc }

// Call runs the function with input as its JSON arguments; failures are
// the tool's text, as with ExportTools.
func (t memoryTool) Call(ctx context.Context, input string) (string, error) {
	out, err := t.m.callTool(ctx, t, input)
	if err != nil {
		if ctx.Err() != nil {
			return "", err
		}
		return toolargs.ErrorText(err), nil
	}
	return out, nil
}

// callTool runs a bound tool's call: masked, routed when it is
// memorize, audited.
func (m *Memory) callTool(ctx context.Context, t memoryTool, args string) (string, error) {
	au, red := m.current()
	if !t.o.KeepArgs {
		args = m.redact.Text(args, nil, red)
	}
	if t.o.Layer == nil {
		return m.stack.CallTool(ctx, t.name, args)
	}
	step := int(m.step.Load())
	if t.o.Fn.Effect == layer.EffectWrite {
		raw, err := toolargs.Check(toolargs.Shared(), t.name, t.o.Fn.Parameters, args)
		if err != nil {
			return "", err
		}
		return m.keeper(au).Memorize(ctx, t.o.Layer, t.o.Fn.Name, raw, step, t.name)
	}
	out, err := m.stack.CallTool(ctx, t.name, args)
	if err == nil {
		if e, ok := writepath.ToolEntry(t.o.Layer, t.o.Fn, t.name, args, step, 0); ok {
			au.Add(e)
		}
	}
	return out, err
}

// recovered logs a recovered panic and returns it as an error.
func (m *Memory) recovered(ctx context.Context, where string, p any) error {
	m.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "chainmemory: recovered a panic", slog.String("in", where), slog.Any("panic", p),
		slog.String("stack", string(debug.Stack())))
	return fmt.Errorf("%w in %s: %v", writepath.ErrPanic, where, p)
}

// Clear implements schema.Memory: it clears every layer that is a
// layer.Clearer, and the transcript.
func (m *Memory) Clear(ctx context.Context) error {
	err := m.stack.Clear(ctx)
	if m.transcript != nil {
		err = errors.Join(err, m.transcript.Clear(ctx))
	}
	if err != nil {
		return fmt.Errorf("chainmemory: %w", err)
	}
	return nil
}

// pick returns the string value of the first of keys present in vars
// (an empty key is skipped), or the only value when vars has one.
func pick(vars map[string]any, keys ...string) string {
	for _, k := range keys {
		if k == "" {
			continue
		}
		if v, ok := vars[k]; ok {
			return fmt.Sprint(v)
		}
	}
	if len(vars) == 1 {
		for _, v := range vars {
			return fmt.Sprint(v)
		}
	}
	return ""
}

// ExportTools returns the functions the stack's layers provide as
// langchaingo tools, for agents.Executor and its agents, named by their
// wire names ("working_memory_update"). The stack must be initialised;
// the tools act on its state.
//
// A langchaingo tools.Tool carries a name, a description and a Call that
// takes one string, and no parameter schema. So the description carries
// the schema, for the agents that put descriptions in the prompt
// (conversational, one-shot) and for the model reading them, and the
// input string is the JSON arguments object (the OpenAI-functions agent
// sends {"__arg1": string} for every tool and passes the string on; a
// model that sends the object itself works too). The arguments are
// checked against the schema when the stack has a ValidateArgs.
// Failures (bad arguments, a rejected update) come back as the tool's
// text ("error: ...", written for the model) with a nil error, because
// agents.Executor aborts the whole run on a tool error while the model
// can usually correct its call. Callers of GenerateContent who offer
// the tools themselves, with their schemas, use [LLMTools]. An executor
// whose memory is a [Memory] takes [Memory.Tools] instead: the same
// tools, their arguments masked, memorize routed, every call audited.
func ExportTools(stack *layer.Stack) []tools.Tool {
	lts := stack.Tools()
	out := make([]tools.Tool, 0, len(lts))
	for _, t := range lts {
		out = append(out, layerTool{stack: stack, t: t, desc: exportDescription(t)})
	}
	return out
}

// exportDescription is a layer function's description as a langchaingo
// tool's: with its parameter schema, which tools.Tool has no place for.
func exportDescription(t layer.Function) string {
	if len(t.Parameters) == 0 {
		return t.Description
	}
	return t.Description + "\n\nInput: a JSON object matching this JSON Schema: " + string(t.Parameters)
}

// LLMTools returns the definitions of the functions the stack's layers
// provide, as llms.WithTools takes them: wire names, descriptions and
// parameter schemas ({"type":"object"} for a function without one). It
// is for code that calls GenerateContent itself; run the model's calls
// with the stack's CallTool (by the call's name and arguments) and send
// the text back as the tool result (an error's text too: the model can
// correct its call). The stack must be initialised.
func LLMTools(stack *layer.Stack) []llms.Tool {
	lts := stack.Tools()
	out := make([]llms.Tool, 0, len(lts))
	for _, t := range lts {
		out = append(out, toolargs.Definition(t))
	}
	return out
}

type layerTool struct {
	stack *layer.Stack
	t     layer.Function // as Stack.Tools lists it: Name is the tool's name
	desc  string
}

// Name is the tool's name (layer.ToolName).
func (l layerTool) Name() string { return l.t.Name }

// Description is the function's description and its parameter schema.
func (l layerTool) Description() string { return l.desc }

// Call runs the function with input as its JSON arguments.
func (l layerTool) Call(ctx context.Context, input string) (string, error) {
	out, err := l.stack.CallTool(ctx, l.t.Name, input)
	if err != nil {
		if ctx.Err() != nil {
			return "", err
		}
		return toolargs.ErrorText(err), nil
	}
	return out, nil
}

// Interface guards.
var (
	_ schema.Memory = (*Memory)(nil)
	_ tools.Tool    = layerTool{}
	_ tools.Tool    = memoryTool{}
)
