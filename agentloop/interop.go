package agentloop

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/tmc/langchaingo/schema"
	"github.com/tmc/langchaingo/tools"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
)

// MemoryConfig configures a [Memory]. The zero value is valid.
type MemoryConfig struct {
	// MemoryKey is the variable the layers' text is loaded into. Zero is
	// "history", the key langchaingo's conversation prompts use.
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
}

// Memory adapts an initialised [layer.Stack] to langchaingo's
// schema.Memory, so memlayer's layers plug into chains and
// agents.Executor (through chains.Call or chains.Run, which load and save
// memory; calling an Executor's Call directly skips memory).
//
// LoadMemoryVariables recalls every layer for the input and returns the
// layers' blocks, in slot order, under MemoryKey; SaveContext hands the
// input and the answer to the layers' Store as one turn; Clear empties
// every layer that can be cleared. The stack's lifecycle (Init, Close)
// stays with the caller. Memory is safe for concurrent use as far as the
// stack is.
type Memory struct {
	stack    *layer.Stack
	cfg      MemoryConfig
	compiler *prompt.Compiler
	step     atomic.Int64
}

// NewMemory returns a schema.Memory over stack, which must be initialised
// before the chain runs.
func NewMemory(stack *layer.Stack, cfg MemoryConfig) *Memory {
	if cfg.MemoryKey == "" {
		cfg.MemoryKey = "history"
	}
	if cfg.Counter == nil {
		cfg.Counter = prompt.Estimate
	}
	// The zero prompt config never fails: no template to parse.
	c, _ := prompt.New(prompt.Config{Counter: cfg.Counter})
	return &Memory{stack: stack, cfg: cfg, compiler: c}
}

// GetMemoryKey implements schema.Memory.
func (m *Memory) GetMemoryKey(context.Context) string { return m.cfg.MemoryKey }

// MemoryVariables implements schema.Memory.
func (m *Memory) MemoryVariables(context.Context) []string { return []string{m.cfg.MemoryKey} }

// LoadMemoryVariables implements schema.Memory: it recalls the layers for
// the input and returns their text under MemoryKey. A layer whose recall
// fails contributes nothing (the stack reports it).
func (m *Memory) LoadMemoryVariables(ctx context.Context, inputs map[string]any) (map[string]any, error) {
	q := layer.Query{Text: pick(inputs, m.cfg.InputKey, "input"), Step: int(m.step.Load()), Counter: m.cfg.Counter}
	recalled, _ := m.stack.Recall(ctx, q, nil)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	text, err := m.compiler.Compile(recalled, nil)
	if err != nil {
		return nil, fmt.Errorf("agentloop: memory: %w", err)
	}
	return map[string]any{m.cfg.MemoryKey: text}, nil
}

// SaveContext implements schema.Memory: the input and output become one
// turn for the layers' Store. Store failures are reported by the stack
// and joined into the error.
func (m *Memory) SaveContext(ctx context.Context, inputs, outputs map[string]any) error {
	t := layer.Turn{
		Step:     int(m.step.Add(1) - 1),
		Query:    pick(inputs, m.cfg.InputKey, "input"),
		Response: layer.Response{Text: pick(outputs, m.cfg.OutputKey, "text", "output")},
	}
	if err := m.stack.Store(ctx, t); err != nil {
		return fmt.Errorf("agentloop: memory: %w", err)
	}
	return nil
}

// Clear implements schema.Memory: it clears every layer that is a
// layer.Clearer.
func (m *Memory) Clear(ctx context.Context) error {
	if err := m.stack.Clear(ctx); err != nil {
		return fmt.Errorf("agentloop: memory: %w", err)
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
// langchaingo tools, named by their wire names ("working-memory_update").
// A tool's input is the JSON arguments object. Failures (bad arguments, a
// rejected update) come back as the tool's text ("error: ...") with a nil
// error, because agents.Executor aborts the whole run on a tool error
// while the model can usually correct its call. The stack must be
// initialised; the tools act on its state.
func ExportTools(stack *layer.Stack) []tools.Tool {
	lts := stack.Tools()
	out := make([]tools.Tool, 0, len(lts))
	for _, t := range lts {
		out = append(out, layerTool{stack: stack, t: t})
	}
	return out
}

type layerTool struct {
	stack *layer.Stack
	t     layer.Tool
}

// Name is the function's wire name.
func (l layerTool) Name() string { return l.t.WireName }

// Description is the function's description.
func (l layerTool) Description() string { return l.t.Function.Description }

// Call runs the function with input as its JSON arguments.
func (l layerTool) Call(ctx context.Context, input string) (string, error) {
	out, err := l.stack.CallTool(ctx, l.t.WireName, input)
	if err != nil {
		if ctx.Err() != nil {
			return "", err
		}
		return toolErrorText(err), nil
	}
	return out, nil
}

// Interface guards.
var (
	_ schema.Memory = (*Memory)(nil)
	_ tools.Tool    = layerTool{}
)
