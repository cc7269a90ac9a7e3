package chainmemory_test

import (
	"strings"
	"testing"

	"github.com/memlayer/memlayer/chainmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/redact"
)

// TestMemory47_MemoryAdapterMasksTheTurn: langchaingo's Memory adapter
// hands the layers' Store a masked turn, as an Agent does; with
// Redaction.Disabled, the turn as it was said.
func TestMemory47_MemoryAdapterMasksTheTurn(t *testing.T) {
	const email, card = "jane.doe@corp.example", "4539148803436467"
	for _, disabled := range []bool{false, true} {
		var turns []layer.Turn
		st := newInitStack(t, &turnRecorder{Layer: layer.Text(layer.Spec{ID: "recorder"}, ""), turns: &turns})
		mem := chainmemory.New(st, chainmemory.Config{Redaction: redact.Policy{Disabled: disabled}})
		if err := mem.SaveContext(t.Context(), map[string]any{"input": "Mail " + email + ", card " + card}, map[string]any{"text": "Done for " + email}); err != nil {
			t.Fatal(err)
		}
		if len(turns) != 1 {
			t.Fatalf("%d turns stored, want 1", len(turns))
		}
		kept := strings.Contains(turns[0].Query+turns[0].Response, email) || strings.Contains(turns[0].Query, card)
		if kept != disabled {
			t.Errorf("disabled %v: the layers got %q / %q", disabled, turns[0].Query, turns[0].Response)
		}
	}
}
