package prompt

import (
	"testing"

	"github.com/memlayer/memlayer/layer"
)

// A snake-case ID and its kebab-case spelling give the same variable.
func TestVarNameSnakeCase(t *testing.T) {
	for id, want := range map[string]string{
		"working_memory": "workingMemory", "working-memory": "workingMemory", "entity_memory": "entityMemory",
		"history_summary": "historySummary", "plan": "plan", "a_b-c": "aBC",
	} {
		if got := VarName(id); got != want {
			t.Errorf("VarName(%q) = %q, want %q", id, got, want)
		}
	}
}

// The variables of the built-in layers from before the naming scheme
// still render their blocks, unless a user variable or a layer takes
// the name.
func TestDeprecatedVars(t *testing.T) {
	recalled := []layer.Recalled{
		{ID: "entity_memory", Items: []layer.Item{{Text: "ENT"}}},
		{ID: "semantic_memory", Items: []layer.Item{{Text: "SEM"}}},
	}
	c := mustNew(t, Config{Template: "{{entities}}|{{semantic}}|{{entityMemory}}"})
	if out, err := c.Compile(recalled, nil); err != nil || out != "ENT|SEM|ENT" {
		t.Errorf("Compile = %q, %v", out, err)
	}
	if out, err := c.Compile(recalled, map[string]any{"semantic": "mine"}); err != nil || out != "ENT|mine|ENT" {
		t.Errorf("with a user variable semantic: %q, %v", out, err)
	}
	own := append(recalled[:1:1], layer.Recalled{ID: "entities", Items: []layer.Item{{Text: "OWN"}}})
	if out, err := c.Compile(own, nil); err != nil || out != "OWN||ENT" {
		t.Errorf("with a layer entities: %q, %v", out, err)
	}
}
