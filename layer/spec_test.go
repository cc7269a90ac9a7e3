package layer_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/layer"
)

func TestValidateID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"working-memory", true},
		{"entities", true},
		{"a", true},
		{"layer2", true},
		{"a1-b2-c3", true},
		{strings.Repeat("a", layer.MaxIDLen), true},
		{"", false},
		{strings.Repeat("a", layer.MaxIDLen+1), false},
		{"Working-memory", false},
		{"1layer", false},
		{"-layer", false},
		{"layer-", false},
		{"work--memory", false},
		{"working_memory", false},
		{"working memory", false},
		{"working/memory", false},
		{"../etc", false},
		{"mémoire", false},
		{"a.b", false},
		{"a\x00b", false},
	}
	for _, tt := range tests {
		err := layer.ValidateID(tt.id)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateID(%q) = %v, want ok=%v", tt.id, err, tt.ok)
		}
		if err != nil && !errors.Is(err, layer.ErrInvalidSpec) {
			t.Errorf("ValidateID(%q) = %v, want ErrInvalidSpec", tt.id, err)
		}
	}
}

func TestSpecValidate(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	tests := []struct {
		name string
		spec layer.Spec
		ok   bool
	}{
		{"zero budget and scope", layer.Spec{ID: "a"}, true},
		{"every scope", layer.Spec{ID: "a", Scope: layer.ScopeExecution}, true},
		{"resource", layer.Spec{ID: "a", Scope: layer.ScopeResource}, true},
		{"global", layer.Spec{ID: "a", Scope: layer.ScopeGlobal}, true},
		{"thread", layer.Spec{ID: "a", Scope: layer.ScopeThread}, true},
		{"min max", layer.Spec{ID: "a", Budget: layer.Budget{Min: 200, Max: 1500}}, true},
		{"min equals max", layer.Spec{ID: "a", Budget: layer.Budget{Min: 10, Max: 10}}, true},
		{"min only", layer.Spec{ID: "a", Budget: layer.Budget{Min: 10}}, true},
		{"+Inf max", layer.Spec{ID: "a", Budget: layer.Budget{Min: 10, Max: inf}}, true},
		{"negative slot", layer.Spec{ID: "a", Slot: -5}, true},
		{"bad id", layer.Spec{ID: "A"}, false},
		{"unknown scope", layer.Spec{ID: "a", Scope: "session"}, false},
		{"scope wrong case", layer.Spec{ID: "a", Scope: "Thread"}, false},
		{"NaN min", layer.Spec{ID: "a", Budget: layer.Budget{Min: nan}}, false},
		{"NaN max", layer.Spec{ID: "a", Budget: layer.Budget{Max: nan}}, false},
		{"negative min", layer.Spec{ID: "a", Budget: layer.Budget{Min: -1}}, false},
		{"negative max", layer.Spec{ID: "a", Budget: layer.Budget{Max: -1}}, false},
		{"-Inf max", layer.Spec{ID: "a", Budget: layer.Budget{Max: math.Inf(-1)}}, false},
		{"+Inf min", layer.Spec{ID: "a", Budget: layer.Budget{Min: inf}}, false},
		{"inverted", layer.Spec{ID: "a", Budget: layer.Budget{Min: 100, Max: 50}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			if (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, layer.ErrInvalidSpec) {
				t.Fatalf("Validate() = %v, want ErrInvalidSpec", err)
			}
		})
	}
}

func TestBudgetUnbounded(t *testing.T) {
	for _, tt := range []struct {
		b    layer.Budget
		want bool
	}{
		{layer.Budget{}, true},
		{layer.Budget{Min: 5}, true},
		{layer.Budget{Max: math.Inf(1)}, true},
		{layer.Budget{Max: 1}, false},
	} {
		if got := tt.b.Unbounded(); got != tt.want {
			t.Errorf("%+v.Unbounded() = %v, want %v", tt.b, got, tt.want)
		}
	}
}

func TestEffectiveScope(t *testing.T) {
	if got := (layer.Spec{}).EffectiveScope(); got != layer.ScopeThread {
		t.Errorf("zero scope = %q, want thread", got)
	}
	if got := (layer.Spec{Scope: layer.ScopeGlobal}).EffectiveScope(); got != layer.ScopeGlobal {
		t.Errorf("global scope = %q", got)
	}
}

// S1.
func TestEnvScopeKey(t *testing.T) {
	env := layer.Env{ThreadID: "thread-1", ResourceID: "user-1", ExecutionID: "exec-1"}
	noRes := layer.Env{ThreadID: "thread-1", ExecutionID: "exec-1"}
	tests := []struct {
		env   layer.Env
		scope layer.Scope
		want  string
	}{
		{env, layer.ScopeThread, "thread-1"},
		{env, "", "thread-1"},
		{env, layer.ScopeResource, "user-1"},
		{noRes, layer.ScopeResource, "thread-1"},
		{env, layer.ScopeGlobal, "__global__"},
		{env, layer.ScopeExecution, "exec-1"},
	}
	for _, tt := range tests {
		if got := tt.env.ScopeKey(tt.scope); got != tt.want {
			t.Errorf("ScopeKey(%q) with resource %q = %q, want %q", tt.scope, tt.env.ResourceID, got, tt.want)
		}
	}
}

func TestNewStackRejects(t *testing.T) {
	ok := layer.Func(layer.Spec{ID: "ok"}, nil)
	tests := []struct {
		name   string
		layers []layer.Layer
		want   error
	}{
		{"nil layer", []layer.Layer{ok, nil}, layer.ErrInvalidSpec},
		{"duplicate id", []layer.Layer{ok, layer.Func(layer.Spec{ID: "ok", Slot: 7}, nil)}, layer.ErrDuplicateID},
		{"invalid id", []layer.Layer{layer.Func(layer.Spec{ID: "Bad ID"}, nil)}, layer.ErrInvalidSpec},
		{"NaN budget", []layer.Layer{layer.Func(layer.Spec{ID: "a", Budget: layer.Budget{Max: math.NaN()}}, nil)}, layer.ErrInvalidSpec},
		{"inverted budget", []layer.Layer{layer.Func(layer.Spec{ID: "a", Budget: layer.Budget{Min: 9, Max: 1}}, nil)}, layer.ErrInvalidSpec},
		{"unknown scope", []layer.Layer{layer.Func(layer.Spec{ID: "a", Scope: "tenant"}, nil)}, layer.ErrInvalidSpec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := layer.NewStack(layer.StackConfig{Layers: tt.layers})
			if !errors.Is(err, tt.want) || s != nil {
				t.Fatalf("NewStack = %v, %v; want nil, %v", s, err, tt.want)
			}
		})
	}
	s, err := layer.NewStack(layer.StackConfig{})
	if err != nil || s == nil {
		t.Fatalf("NewStack(zero config) = %v, %v; want a stack", s, err)
	}
	if env := s.Env(); env.ExecutionID == "" || env.Store == nil || env.Logger == nil {
		t.Errorf("zero config Env not defaulted: %+v", env)
	}
}
