package episodicmemory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// A tool result over agentloop's history cap (16 KiB) reaches the model
// cut; the scripted model finds the call's reference in the episodic
// block of its system prompt, calls the read tool with it, and reads the
// result whole, page after page (each page under the history cap).
func TestEpisodic16_AgentloopReadsLargeResultWhole(t *testing.T) {
	var report strings.Builder
	report.WriteString(`{"report":{"id":"report-7","rows":[`)
	for i := range 800 {
		fmt.Fprintf(&report, `{"n":%d,"text":"row %d of the quarterly report"},`, i, i)
	}
	report.WriteString(`{"n":-1}]}}`)
	full := report.String()
	if len(full) <= agentloop.DefaultMaxToolResultBytes {
		t.Fatalf("the result (%d bytes) must exceed the history cap", len(full))
	}
	fetch := agentloop.Tool{Name: "fetch_report", Call: func(context.Context, json.RawMessage) (string, error) { return full, nil }}
	var got strings.Builder // the pages read so far
	var readRef string
	ref := regexp.MustCompile(`\[([^\]\s]+)\] step \d+ fetch_report`)
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		res := r.ToolResults()
		switch {
		case len(res) == 0:
			return agenttest.Calls(agenttest.Call("fetch_report", `{"id":"report-7"}`)), nil
		case res[0].Name == "fetch_report":
			if len(res[0].Content) >= len(full) {
				return agenttest.Text("the history was not cut"), nil
			}
			m := ref.FindStringSubmatch(r.System())
			if m == nil {
				return agenttest.Text("no reference in the episodic block"), nil
			}
			readRef = m[1]
			return agenttest.Calls(agenttest.Call("episodic_memory_read", map[string]string{"ref": readRef})), nil
		default:
			// Read on until the page note says the end is reached.
			page := res[0].Content
			m := pageNote.FindStringSubmatch(page)
			if m == nil {
				got.WriteString(page)
				return agenttest.Text(fmt.Sprintf("read %d bytes", got.Len())), nil
			}
			got.WriteString(page[:len(page)-len(m[0])])
			if m[2] == m[3] {
				return agenttest.Text(fmt.Sprintf("read %d bytes", got.Len())), nil
			}
			return agenttest.Calls(agenttest.Call("episodic_memory_read", map[string]any{"ref": readRef, "offset": got.Len()})), nil
		}
	})
	ep, err := episodicmemory.New(episodicmemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	st := storage.NewMemoryStore()
	agent, err := agentloop.New(agentloop.Config{Model: model, Tools: []agentloop.Tool{fetch}, Layers: []layer.Layer{ep}, Store: st, DisableSpawnTool: true})
	if err != nil {
		t.Fatal(err)
	}
	out, err := agent.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "Summarise report-7."})
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("read %d bytes", len(full)); out.Output != want || got.String() != full {
		t.Fatalf("output %q (want %q); the pages read are %d bytes, want the %d whole", out.Output, want, got.Len(), len(full))
	}
	if n := len(model.Requests()); n != 2+(len(full)+episodicmemory.DefaultReadPageBytes-1)/episodicmemory.DefaultReadPageBytes {
		t.Errorf("%d model calls, want the fetch, one read per page and the answer", n)
	}
	// The log holds the fetch whole and the turn; the reads are not
	// episodes.
	var kinds []string
	for _, e := range episodes(t, bound(t, episodicmemory.Config{}, st, "t", "")) {
		kinds = append(kinds, e.Tool+string(e.Kind))
		if e.Tool == "fetch_report" && (e.Result != full || e.Size != 0 || e.Duration <= 0) {
			t.Errorf("the fetch episode keeps %d of %d bytes (size %d), duration %v", len(e.Result), len(full), e.Size, e.Duration)
		}
	}
	if want := []string{"fetch_reporttool", "turn"}; !slices.Equal(kinds, want) {
		t.Errorf("episodes %v, want %v", kinds, want)
	}
}
