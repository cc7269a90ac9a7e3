package agentloop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/internal/writepath"
	"github.com/memlayer/memlayer/layer"
)

// spawnDescription and spawnParams define the spawn_agent tool (with no
// Config.SpawnLayers; see prepareSpawn).
const spawnDescription = "Start a child agent for a self-contained subtask. It gets the instructions and the input, " +
	"inherits the memory that belongs to the user or project (not this conversation's scratchpad), " +
	"can use the same tools, and returns its final answer as this tool's result."

var spawnParams = json.RawMessage(`{"type":"object","properties":{` +
	`"instructions":{"type":"string","description":"What the child agent is and how it should work. Empty means the same instructions as you."},` +
	`"input":{"type":"string","description":"The subtask, as a message to the child agent."}},` +
	`"required":["input"],"additionalProperties":false}`)

// SpawnInput describes a child agent's task.
type SpawnInput struct {
	// Instructions are the child's instructions (a plain system prompt).
	// Empty means the parent agent's instructions and template.
	Instructions string
	// Input is the child's task, sent as its user message. Required.
	Input string
	// LayerIDs picks layers of Config.SpawnLayers, by ID, for the child
	// to have on top of those it inherits. An ID not offered there fails
	// the spawn with layer.ErrInvalidArguments.
	LayerIDs []string
	// Layers are more layers of the child's own (templates, initialised
	// for the child's env like those of LayerIDs), given from code. Their
	// IDs must differ from the parent's layers' and each other's.
	Layers []layer.Layer
	// ThreadID and ResourceID name the parent thread for [Agent.Spawn];
	// [ToolContext.Spawn] ignores them.
	ThreadID   string
	ResourceID string
}

// Spawn runs a child agent for a subtask and returns its result. The
// child uses this agent's model and tools; its layers come from the
// parent's through [layer.Stack.Spawn] (each layer's OnSpawn decides:
// resource-scoped working memory is inherited as a clone, thread-scoped
// memory is not, key-value memory becomes a child scope), so the child's
// layer tools act on the child's state. After the child finishes,
// [layer.Stack.Return] lets the parent's layers take back what they merge.
// The child's history is not checkpointed.
//
// The parent is a fresh stack on in.ThreadID (required) and
// in.ResourceID, initialised from the store and closed afterwards. The
// child's memory operations are committed as one turn of in.ThreadID's
// audit (Result.Writes and Result.Audit, as for [Agent.Run]). A tool of a
// running agent spawns a child of its own run with [ToolContext.Spawn] (see
// [NewContextTool]); its operations are in that run's turn.
//
// A child at depth MaxDepth cannot spawn: the error is ErrMaxDepth. A
// run's children, at every depth, share its limits: MaxTokens counts
// their tokens too, MaxChildrenPerRun bounds how many start (the error is
// ErrMaxChildren), and the parent's Result.Usage includes theirs.
func (a *Agent) Spawn(ctx context.Context, in SpawnInput) (*Result, error) {
	if in.ThreadID == "" {
		return nil, ErrNoThread
	}
	var err error
	if in.ResourceID, err = runOwner(ctx, a.cfg.Store, in.ThreadID, in.ResourceID, nil); err != nil {
		return nil, err
	}
	pos := new(position)
	st, err := a.openStack(ctx, pos, in.ThreadID, in.ResourceID)
	if err != nil {
		return nil, err
	}
	defer a.closeStack(ctx, st)
	p := &run{a: a, stack: st, threadID: in.ThreadID, resourceID: in.ResourceID, vars: a.cfg.Vars,
		tree: &tree{audit: &writepath.Auditor{Full: !a.cfg.Audit.Disabled}}, pos: pos}
	res, err := p.spawn(ctx, in)
	// The child's memory operations are a turn of the thread's audit,
	// as a run's are.
	p.res = res
	if p.res == nil {
		p.res = &Result{ThreadID: in.ThreadID}
	}
	p.commitAudit(ctx)
	return res, err
}

// spawn runs a child of run p.
func (p *run) spawn(ctx context.Context, in SpawnInput) (*Result, error) {
	a := p.a
	if err := p.admitChild(in); err != nil {
		return nil, err
	}
	start := time.Now()
	depth := p.depth + 1
	env := layer.Env{
		ThreadID:   fmt.Sprintf("%s/child-%d-%s", p.threadID, depth, newSuffix()),
		ResourceID: p.resourceID,
		Store:      a.layerStore,
		Logger:     a.cfg.Logger,
	}
	extra, err := a.spawnLayers.pick(in.LayerIDs)
	if err != nil {
		return nil, err
	}
	cs, err := p.stack.Spawn(ctx, env, append(extra, in.Layers...)...)
	if err != nil {
		return nil, fmt.Errorf("agentloop: spawn: %w", err)
	}
	defer a.closeStack(ctx, cs)

	child := &run{
		a: a, compiler: a.compiler, sysTokens: a.systemTokens, stack: cs,
		threadID: env.ThreadID, resourceID: p.resourceID, depth: depth,
		input: in.Input, vars: p.vars,
		msgs: []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, in.Input)},
		res:  &Result{ThreadID: env.ThreadID},
		tree: p.tree,
	}
	if in.Instructions != "" {
		c, err := a.newCompiler(in.Instructions, "")
		if err != nil {
			return nil, err
		}
		child.compiler = c
		child.sysTokens = a.cfg.Counter.Count(in.Instructions)
	}
	a.emit(ctx, Event{Kind: EventRunStart, ThreadID: env.ThreadID, Depth: depth})
	if err := child.prepareTools(); err != nil {
		return nil, err
	}
	res, err := child.loop(ctx)
	child.takeReported(ctx, true) // what its layers write off the step is in the tree's audit
	if p.res != nil {
		p.addUsage(res.Usage, false)
	}
	// Return failures are reported by the stack and leave the parent's
	// layers as they were.
	_ = p.stack.Return(context.WithoutCancel(ctx), cs)
	a.emit(ctx, Event{Kind: EventRunEnd, ThreadID: env.ThreadID, Depth: depth, Step: res.Steps, Duration: time.Since(start), Usage: res.Usage, Err: err})
	return res, err
}

// admitChild checks that run p may start a child with input in: below
// MaxDepth, with input, tokens left under MaxTokens and, counting this
// one, at most MaxChildrenPerRun children in the run's tree.
func (p *run) admitChild(in SpawnInput) error {
	cfg := &p.a.cfg
	if cfg.MaxDepth < 0 || p.depth >= cfg.MaxDepth {
		return fmt.Errorf("%w: depth %d, MaxDepth %d", ErrMaxDepth, p.depth+1, cfg.MaxDepth)
	}
	if in.Input == "" {
		return fmt.Errorf("%w: spawn: empty input", layer.ErrInvalidArguments)
	}
	if cfg.MaxTokens > 0 && p.tree.tokens.Load() >= int64(cfg.MaxTokens) {
		return fmt.Errorf("%w: no child agent started", ErrMaxTokens)
	}
	if n := p.tree.children.Add(1); n > int64(cfg.MaxChildrenPerRun) {
		return fmt.Errorf("%w: %d child agents already ran under this run (MaxChildrenPerRun)", ErrMaxChildren, n-1)
	}
	return nil
}

// spawnTool runs the spawn_agent tool call.
func (r *run) spawnTool(ctx context.Context, args string) (string, error) {
	raw, err := r.a.toolArgs(SpawnToolName, r.a.spawnLayers.params, args)
	if err != nil {
		return "", err
	}
	var req struct {
		Instructions string   `json:"instructions"`
		Input        string   `json:"input"`
		Layers       []string `json:"layers"`
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		return "", fmt.Errorf("%w: %s: %w", layer.ErrInvalidArguments, SpawnToolName, err)
	}
	res, err := r.spawn(ctx, SpawnInput{Instructions: req.Instructions, Input: req.Input, LayerIDs: req.Layers})
	if err != nil {
		if res != nil && res.Output != "" {
			return "", fmt.Errorf("child agent stopped (%w); its last answer: %s", err, res.Output)
		}
		return "", fmt.Errorf("child agent failed: %w", err)
	}
	return res.Output, nil
}

// newSuffix returns a short random hex string for child thread IDs.
func newSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// spawnLayers holds Config.SpawnLayers by ID, and the spawn_agent tool's
// parameter schema, which lists their IDs.
type spawnLayers struct {
	byID   map[string]layer.Layer
	ids    []string // in Config order
	params json.RawMessage
}

// prepareSpawn checks Config.SpawnLayers and sets up the spawn_agent
// tool: with spawn layers, its schema gains a "layers" argument whose
// items are their IDs.
func (a *Agent) prepareSpawn() error {
	a.cfg.SpawnLayers = slices.Clone(a.cfg.SpawnLayers)
	sl := spawnLayers{byID: make(map[string]layer.Layer, len(a.cfg.SpawnLayers)), params: spawnParams}
	parent := layerIDs(a.cfg.Layers)
	for i, l := range a.cfg.SpawnLayers {
		if l == nil {
			return fmt.Errorf("%w: SpawnLayers[%d] is nil", ErrInvalidConfig, i)
		}
		id := l.Spec().ID
		if err := l.Spec().Validate(); err != nil {
			return fmt.Errorf("%w: SpawnLayers[%d]: %w", ErrInvalidConfig, i, err)
		}
		if _, dup := sl.byID[id]; dup || parent[id] {
			return fmt.Errorf("%w: SpawnLayers: layer ID %q is used twice (a child inherits the agent's layers)", ErrInvalidConfig, id)
		}
		sl.byID[id] = l
		sl.ids = append(sl.ids, id)
	}
	if len(sl.ids) > 0 {
		b, err := spawnParamsWith(sl.ids)
		if err != nil {
			return err
		}
		sl.params = b
	}
	a.spawnLayers = sl
	a.spawnDef = llmTool(SpawnToolName, spawnDescription, sl.params)
	return nil
}

// layerIDs returns the IDs of the layers, nil ones left out.
func layerIDs(layers []layer.Layer) map[string]bool {
	ids := make(map[string]bool, len(layers))
	for _, l := range layers {
		if l != nil {
			ids[l.Spec().ID] = true
		}
	}
	return ids
}

// spawnParamsWith returns the spawn tool's parameter schema with a
// "layers" parameter that offers the layers ids name.
func spawnParamsWith(ids []string) ([]byte, error) {
	var doc map[string]any
	_ = json.Unmarshal(spawnParams, &doc)
	doc["properties"].(map[string]any)["layers"] = map[string]any{
		"type":        "array",
		"items":       map[string]any{"type": "string", "enum": ids},
		"uniqueItems": true,
		"description": "Extra memory layers to give the child agent, by ID (only these IDs exist). Leave out for none.",
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("agentloop: spawn tool schema: %w", err)
	}
	return b, nil
}

// pick returns the spawn layers of the given IDs, failing on an ID that
// is not offered.
func (sl spawnLayers) pick(ids []string) ([]layer.Layer, error) {
	out := make([]layer.Layer, 0, len(ids))
	for _, id := range ids {
		l, ok := sl.byID[id]
		if !ok {
			if len(sl.ids) == 0 {
				return nil, fmt.Errorf("%w: spawn: unknown layer %q: this agent offers no layers to child agents", layer.ErrInvalidArguments, id)
			}
			return nil, fmt.Errorf("%w: spawn: unknown layer %q: the layers offered are %s", layer.ErrInvalidArguments, id, strings.Join(sl.ids, ", "))
		}
		if slices.ContainsFunc(out, func(o layer.Layer) bool { return o.Spec().ID == id }) {
			continue // named twice: once is enough
		}
		out = append(out, l)
	}
	return out, nil
}
