package agentloop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
)

// publishTools are a CMS's two tools: read a page, update it.
func publishTools(fail func(id string) bool) []agentloop.Tool {
	type getIn struct {
		ID string `json:"id"`
	}
	type updateIn struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	return []agentloop.Tool{
		agentloop.NewTool("cms_getPage", "Read a page.", json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`),
			func(_ context.Context, in getIn) (map[string]any, error) {
				return map[string]any{"page": map[string]string{"id": in.ID, "status": "draft"}}, nil
			}),
		agentloop.NewTool("cms_updatePage", "Update a page.", json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"status":{"type":"string"}},"required":["id"]}`),
			func(_ context.Context, in updateIn) (map[string]any, error) {
				if fail(in.ID) {
					return nil, fmt.Errorf("page %s is locked", in.ID)
				}
				return map[string]any{"page": map[string]string{"id": in.ID, "status": in.Status}}, nil
			}),
	}
}

var pageInRequest = regexp.MustCompile(`page-\d+`)

// publishPolicy is the scripted model of a CMS agent asked to publish a
// page: it reads the page, sets its status to published, and answers
// from the update's result.
func publishPolicy(_ context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
	id := pageInRequest.FindString(r.LastUser())
	res := r.ToolResults()
	switch {
	case len(res) == 0:
		return agenttest.Calls(agenttest.Call("cms_getPage", map[string]string{"id": id})), nil
	case res[len(res)-1].Name == "cms_getPage":
		return agenttest.Calls(agenttest.Call("cms_updatePage", map[string]string{"id": id, "status": "published"})), nil
	case strings.Contains(res[len(res)-1].Content, "locked"):
		return agenttest.Text("I could not publish it: the page is locked."), nil
	}
	return agenttest.Text("Published " + id + "."), nil
}

// TestSkillInPrompt: an agent with a semantic memory (its defaults: skill
// extraction on) publishes pages in two threads of one editor; a later
// request to publish a page, in a third thread, has the publish skill in
// its system prompt. Failed runs teach nothing, another editor's runs
// teach this one nothing, and with NoSkills nothing is learned.
func TestSkillInPrompt(t *testing.T) {
	const skillLine = `cms_getPage {"id":"<id>"} → cms_updatePage {"id":"<id>","status":"published"}`
	type run struct {
		resource, thread, input string
	}
	tests := []struct {
		name     string
		noSkills bool
		runs     []run
		want     bool
	}{
		{"learned", false, []run{{"editor-1", "t1", "Publish page-101"}, {"editor-1", "t2", "Please publish page-102"}}, true},
		{"failed runs", false, []run{{"editor-1", "t1", "Publish page-901"}, {"editor-1", "t2", "Please publish page-902"}, {"editor-1", "t3", "Publish page-903"}}, false},
		{"another editor", false, []run{{"editor-2", "t1", "Publish page-101"}, {"editor-2", "t2", "Please publish page-102"}}, false},
		{"off", true, []run{{"editor-1", "t1", "Publish page-101"}, {"editor-1", "t2", "Please publish page-102"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sem, err := semanticmemory.New(semanticmemory.Config{NoSkills: tt.noSkills})
			if err != nil {
				t.Fatal(err)
			}
			model := agenttest.NewFunc(publishPolicy)
			a := mustAgent(t, agentloop.Config{Model: model, Store: storage.NewMemoryStore(), Layers: []layer.Layer{sem},
				Tools: publishTools(func(id string) bool { return strings.HasPrefix(id, "page-9") })})
			for _, r := range tt.runs {
				if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: r.thread, ResourceID: r.resource, Input: r.input}); err != nil {
					t.Fatal(err)
				}
				for _, req := range model.Requests() {
					if strings.Contains(req.System(), skillLine) {
						t.Fatalf("a skill in the prompt before it was learned:\n%s", req.System())
					}
				}
			}
			model.Reset()
			if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t-later", ResourceID: "editor-1", Input: "Can you publish page-250?"}); err != nil {
				t.Fatal(err)
			}
			first := model.Requests()[0].System()
			if got := strings.Contains(first, skillLine) && strings.Contains(first, `Skill "publish page"`); got != tt.want {
				t.Errorf("skill in the later request's prompt: %v, want %v\n%s", got, tt.want, first)
			}
		})
	}
}
