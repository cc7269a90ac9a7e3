package layer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
)

// maxWireNameLen is the longest tool name provider APIs accept.
const maxWireNameLen = 64

// tool is a provided function offered to the model.
type tool struct {
	wire   string   // the name it is offered under, unique in the stack
	layer  string   // the ID of the layer that provides it
	former []string // its names under the layer's StorageID (deprecated)
	fn     Function
}

// ToolName returns the name under which a stack offers function fn of
// layer layerID to the model: "<layer-id>_<fn>", made acceptable to
// provider tool APIs ([a-zA-Z0-9_-]{1,64}): every other byte becomes '_',
// and a name longer than 64 bytes is cut and given a short hash of the
// full name so distinct names stay distinct. ("working_memory",
// "update") gives "working_memory_update". In the rare case that two
// functions of a stack get the same name, the later one is told apart by
// a hash suffix; [Stack.Tools] lists the names as offered.
func ToolName(layerID, fn string) string { return wireName(layerID + "/" + fn) }

// DeprecatedToolName returns the name function fn of a layer with spec
// had before the layer was renamed, [ToolName](spec.StorageID, fn), and
// whether there is one (a StorageID other than the ID). A stack accepts
// it as an alias of the tool, never offered to the model, for one
// release (and its "<storage-id>/<fn>" form in [Stack.CallTool]); it
// will then be removed.
func DeprecatedToolName(spec Spec, fn string) (string, bool) {
	if spec.StorageID == "" || spec.StorageID == spec.ID {
		return "", false
	}
	return ToolName(spec.StorageID, fn), true
}

// wireName makes name acceptable to provider tool APIs (see [ToolName]).
func wireName(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	for i := 0; i < len(name); i++ {
		if c := name[i]; wireByte(c) {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	w := b.String()
	if w == "" {
		w = "_"
	}
	if len(w) > maxWireNameLen {
		w = withHash(w, []byte(name))
	}
	return w
}

// wireByte reports whether provider tool APIs accept c in a tool name:
// a-z, A-Z, 0-9, '_' and '-'.
func wireByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// withHash returns w cut to leave room for a suffix, followed by '_' and
// a short hash of key: a wire name that stays distinct.
func withHash(w string, key []byte) string {
	sum := sha256.Sum256(key)
	return w[:min(len(w), maxWireNameLen-9)] + "_" + hex.EncodeToString(sum[:4])
}

// buildTools collects the provided functions of the live layers. The
// caller holds s.mu (or owns s exclusively). A function with no name or no
// Call, or whose name repeats one of the same layer, is left out and
// logged. Two tools whose wire names collide (say "a.b/x" and "a-b/x"
// never do, but sanitising can make distinct names equal) are told apart
// by a hash suffix, so every wire name maps back to one tool.
func (s *Stack) buildTools() {
	s.tools = nil
	s.byName = make(map[string]int)
	for _, e := range s.entries {
		if e.disabled || e.live == nil {
			continue
		}
		if p, ok := As[Provider](e.live); ok {
			s.addTools(e.spec, p.Functions())
		}
	}
	for i, t := range s.tools {
		for _, alias := range t.fn.Aliases {
			if _, taken := s.byName[alias]; !taken {
				s.byName[alias] = i
			}
		}
		for _, old := range t.former {
			if _, taken := s.byName[old]; !taken {
				s.byName[old] = i
			}
		}
	}
}

// addTools adds the functions the layer of spec provides, under their
// wire names and their "<layer-id>/<fn>" names (see buildTools).
func (s *Stack) addTools(spec Spec, fns []Function) {
	id := spec.ID
	for _, fn := range fns {
		name := id + "/" + fn.Name
		if fn.Call == nil || fn.Name == "" {
			s.log.Warn("memlayer: provided function without name or Call left out", slog.String("layer", id), slog.String("tool", name))
			continue
		}
		if _, dup := s.byName[name]; dup {
			s.log.Warn("memlayer: provided function name repeated; the first one is kept", slog.String("layer", id), slog.String("tool", name))
			continue
		}
		wire := wireName(name)
		for n := 0; ; n++ {
			if _, clash := s.byName[wire]; !clash {
				break
			}
			wire = withHash(wire, fmt.Appendf(nil, "%s#%d", name, n))
		}
		var former []string
		if old, ok := DeprecatedToolName(spec, fn.Name); ok {
			former = []string{old, spec.StorageID + "/" + fn.Name}
		}
		s.tools = append(s.tools, tool{wire: wire, layer: id, former: former, fn: fn})
		s.byName[wire] = len(s.tools) - 1
		s.byName[name] = len(s.tools) - 1
	}
}

// Tools returns the functions provided by the enabled layers, in slot
// order, as the model is offered them: each Name is the tool's name
// ([ToolName]), and Call runs the function directly (call it through
// [Stack.CallTool], which validates the arguments and serialises it with
// the layer's other hooks). The slice is a copy. Before Init it is empty.
func (s *Stack) Tools() []Function {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Function, len(s.tools))
	for i, t := range s.tools {
		out[i] = t.fn
		out[i].Name = t.wire
	}
	return out
}

// lookupTool finds a provided function by its name ([ToolName]), its
// "<layer-id>/<fn>" form or one of its aliases (see [Function.Aliases]
// and [DeprecatedToolName]).
func (s *Stack) lookupTool(name string) (tool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.byName[name]
	if !ok {
		return tool{}, false
	}
	return s.tools[i], true
}

// CallTool runs a provided function by name ([ToolName], "<layer-id>/<fn>", an alias or a [DeprecatedToolName]) with raw JSON
// arguments. The arguments must be a JSON object (empty means {}) and, when
// the stack has a ValidateArgs, pass the function's schema; otherwise the
// error is [ErrInvalidArguments] and the function does not run. The call
// is serialised with the layer's other hooks and bounded by its Store
// timeout. When ctx ends while the function runs, the function is told
// (its context ends) and its own result is still waited for, up to 5
// seconds more within its timeout, because what it did may have taken
// effect (a scratchpad update that landed); a function still running
// after that fails with an error wrapping ctx's that says whether it
// took effect is unknown. Errors are meant to be shown to the model as
// the tool result.
func (s *Stack) CallTool(ctx context.Context, name, args string) (string, error) {
	if err := s.ready(); err != nil {
		return "", err
	}
	t, ok := s.lookupTool(name)
	if !ok {
		return "", fmt.Errorf("%w %q", ErrUnknownTool, name)
	}
	raw, err := s.checkArgs(t, args)
	if err != nil {
		return "", err
	}
	e := s.byID[t.layer]
	var out string
	err = s.callJob(ctx, e, hookTool, func(ctx context.Context) error {
		var err error
		out, err = t.fn.Call(ctx, raw)
		return err
	}, nil, settleTimeout)
	if err != nil {
		return "", err
	}
	return out, nil
}

// checkArgs returns the arguments of a call of t as raw JSON, {} when
// empty, after checking that they are a JSON object that passes the
// stack's ValidateArgs, if any. The error is ErrInvalidArguments.
func (s *Stack) checkArgs(t tool, args string) ([]byte, error) {
	raw := bytes.TrimSpace([]byte(args))
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("%w: %s: not valid JSON", ErrInvalidArguments, t.wire)
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("%w: %s: want a JSON object, got %s", ErrInvalidArguments, t.wire, jsonKind(raw[0]))
	}
	if s.cfg.ValidateArgs == nil || len(t.fn.Parameters) == 0 {
		return raw, nil
	}
	if err := s.cfg.ValidateArgs(t.fn.Parameters, raw); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidArguments, t.wire, err)
	}
	return raw, nil
}

func jsonKind(c byte) string {
	switch c {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}
