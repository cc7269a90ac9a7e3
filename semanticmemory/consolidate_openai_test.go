package semanticmemory_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms/openai"

	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
)

// openAIConsolidator is an OpenAI chat-completions server for
// consolidation: it answers the propose call with propose and the decide
// call with decide (each given the request's last message), and records
// the messages it got.
type openAIConsolidator struct {
	propose, decide func(in string) string

	mu       sync.Mutex
	messages [][]struct{ Role, Content string }
}

func (s *openAIConsolidator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer t" {
		http.Error(w, "unexpected "+r.URL.Path, http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.messages = append(s.messages, req.Messages)
	s.mu.Unlock()
	in := req.Messages[len(req.Messages)-1].Content
	answer := s.decide
	if strings.HasPrefix(in, "<turn>") {
		answer = s.propose
	}
	content, _ := json.Marshal(answer(in))
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"finish_reason":"stop",`+
		`"message":{"role":"assistant","content":`+string(content)+`}}],"usage":{"prompt_tokens":10,"completion_tokens":10,"total_tokens":20}}`)
}

// TestConsolidateOpenAI runs consolidation through langchaingo's OpenAI
// client against a local server: the instructions go as the system
// message, the fenced turn and board as the user's, and the answers,
// wrapped in a code fence as models often do, update and add facts.
func TestConsolidateOpenAI(t *testing.T) {
	fake := &openAIConsolidator{
		propose: func(string) string {
			return "```json\n" + proposals("preference", "The user prefers green tea.", "profile", "The user lives in Lisbon.")("") + "\n```"
		},
		decide: func(board string) string {
			return decisions(func(board string) []map[string]any {
				return []map[string]any{{"fact": 1, "op": "update", "id": handleOf(board, "tea")}, {"fact": 2, "op": "add"}}
			})(board)
		},
	}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	llm, err := openai.New(openai.WithBaseURL(srv.URL+"/v1"), openai.WithToken("t"), openai.WithModel("gpt-4o-mini"))
	if err != nil {
		t.Fatal(err)
	}
	l := bindConsolidating(t, semanticmemory.Config{Consolidate: &semanticmemory.Consolidator{Model: llm}}, storage.NewMemoryStore(), "a")
	tea := remember(t, l, "preference", "The user prefers black tea.")
	consolidate(t, l, 1, "I switched to green tea since I moved to Lisbon.", "Nice!")
	if err := l.Close(t.Context()); err != nil {
		t.Fatal(err)
	}

	facts, err := l.Facts(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(facts) != 2 || facts[0].ID != tea.ID || facts[0].Text != "The user prefers green tea." || facts[0].Version != 2 || facts[1].Text != "The user lives in Lisbon." {
		t.Errorf("facts = %+v, want the tea fact updated and Lisbon added", facts)
	}
	if len(fake.messages) != 2 {
		t.Fatalf("%d requests, want 2 (propose, decide)", len(fake.messages))
	}
	for i, msgs := range fake.messages {
		if len(msgs) != 2 || msgs[0].Role != "system" || msgs[1].Role != "user" {
			t.Errorf("request %d: %+v, want a system and a user message", i, msgs)
		}
	}
	if board := fake.messages[1][1].Content; !strings.Contains(board, "new 1 [preference] The user prefers green tea.") ||
		!strings.Contains(board, "[preference] The user prefers black tea.") || strings.Contains(board, tea.ID+" ") {
		t.Errorf("board sent:\n%s\nwant the new fact and the stored one by its handle, not its ID", board)
	}
}
