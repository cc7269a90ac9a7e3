package layer_test

import (
	"errors"
	"strings"
	"testing"
	"time"

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
		{strings.Repeat("a", 48), true},
		{"", false},
		{strings.Repeat("a", 49), false},
		{"Working-memory", false},
		{"1layer", false},
		{"-layer", false},
		{"layer-", false},
		{"work--memory", false},
		{"working_memory", true},
		{"kv_memory2", true},
		{"a_b-c", true},
		{"work__memory", false},
		{"work_-memory", false},
		{"work-_memory", false},
		{"_layer", false},
		{"layer_", false},
		{"working memory", false},
		{"working/memory", false},
		{"../etc", false},
		{"mémoire", false},
		{"a.b", false},
		{"a\x00b", false},
	}
	for _, tt := range tests {
		err := layer.Spec{ID: tt.id}.Validate()
		if (err == nil) != tt.ok {
			t.Errorf("Spec{ID: %q}.Validate() = %v, want ok=%v", tt.id, err, tt.ok)
		}
		if err != nil && !errors.Is(err, layer.ErrInvalidSpec) {
			t.Errorf("Spec{ID: %q}.Validate() = %v, want ErrInvalidSpec", tt.id, err)
		}
	}
}

// A StorageID must be a valid ID when set; it gives the storage name.
func TestSpecStorageID(t *testing.T) {
	if err := (layer.Spec{ID: "working_memory", StorageID: "working-memory"}).Validate(); err != nil {
		t.Errorf("a kebab StorageID: %v", err)
	}
	if err := (layer.Spec{ID: "a", StorageID: "a/b"}).Validate(); !errors.Is(err, layer.ErrInvalidSpec) {
		t.Errorf("StorageID a/b: %v, want ErrInvalidSpec", err)
	}
	for _, tt := range []struct {
		spec layer.Spec
		want string
	}{
		{layer.Spec{ID: "a"}, "a"},
		{layer.Spec{ID: "a", StorageID: "b"}, "b"},
	} {
		if got := tt.spec.StorageName(); got != tt.want {
			t.Errorf("%+v.StorageName() = %q, want %q", tt.spec, got, tt.want)
		}
	}
}

func TestSpecValidate(t *testing.T) {
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
		{"unbounded max", layer.Spec{ID: "a", Budget: layer.Budget{Min: 10, Max: layer.Unbounded}}, true},
		{"timeout", layer.Spec{ID: "a", Timeout: time.Second}, true},
		{"negative timeout", layer.Spec{ID: "a", Timeout: -time.Second}, false},
		{"negative slot", layer.Spec{ID: "a", Slot: -5}, true},
		{"bad id", layer.Spec{ID: "A"}, false},
		{"unknown scope", layer.Spec{ID: "a", Scope: "session"}, false},
		{"scope wrong case", layer.Spec{ID: "a", Scope: "Thread"}, false},
		{"negative min", layer.Spec{ID: "a", Budget: layer.Budget{Min: -1}}, false},
		{"negative max", layer.Spec{ID: "a", Budget: layer.Budget{Max: -1}}, false},
		{"min above unbounded max", layer.Spec{ID: "a", Budget: layer.Budget{Min: layer.Unbounded, Max: layer.Unbounded}}, true},
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

// S1.
func TestEnvScopeKey(t *testing.T) {
	env := layer.Env{ThreadID: "thread-1", ResourceID: "user-1", ExecutionID: "exec-1"}
	noRes := layer.Env{ThreadID: "thread-1", ExecutionID: "exec-1"}
	tests := []struct {
		env   layer.Env
		scope layer.Scope
		want  string
	}{
		{env, layer.ScopeThread, "thread:thread-1"},
		{env, "", "thread:thread-1"},
		{env, layer.ScopeResource, "resource:user-1"},
		{noRes, layer.ScopeResource, "anon:thread-1"},
		{env, layer.ScopeGlobal, "global:"},
		{env, layer.ScopeExecution, "execution:exec-1"},
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
		{"duplicate id", []layer.Layer{ok, layer.Func(layer.Spec{ID: "ok", Slot: 7}, nil)}, layer.ErrInvalidSpec},
		{"invalid id", []layer.Layer{layer.Func(layer.Spec{ID: "Bad ID"}, nil)}, layer.ErrInvalidSpec},
		{"negative budget", []layer.Layer{layer.Func(layer.Spec{ID: "a", Budget: layer.Budget{Max: -1}}, nil)}, layer.ErrInvalidSpec},
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
	envs := make(chan layer.Env, 1)
	s, err = layer.NewStack(layer.StackConfig{Layers: []layer.Layer{&envInit{spec: layer.Spec{ID: "env"}, envs: envs}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer s.Close(t.Context())
	if env := <-envs; env.ExecutionID == "" || env.Store == nil || env.Logger == nil {
		t.Errorf("zero config Env not defaulted: %+v", env)
	}
}
