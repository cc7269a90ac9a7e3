package agentloop_test

import (
	"strings"
	"testing"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
)

// TestThreadTitleRedacted: the title a run derives for a new thread
// comes from the first request as stored, so the redaction that masks
// the stored message masks the title too; the run puts the thread in
// its resource's list.
func TestThreadTitleRedacted(t *testing.T) {
	store := storage.NewMemoryStore()
	a := mustAgent(t, agentloop.Config{Model: agenttest.New(agenttest.Reply(agenttest.Text("Noted."))), Store: store})
	const email = "jane.doe@mail.example"
	if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", ResourceID: "user-1", Input: "Write to " + email + " about the invoice"}); err != nil {
		t.Fatal(err)
	}
	c := thread.Catalog{Store: store}
	page, err := c.List(t.Context(), "user-1", thread.ListQuery{})
	if err != nil || len(page.Threads) != 1 {
		t.Fatalf("threads of user-1: %+v, %v", page, err)
	}
	th := page.Threads[0]
	msgs, err := c.Messages(t.Context(), "t", thread.MessageQuery{Limit: 1})
	if err != nil || len(msgs.Messages) != 1 {
		t.Fatalf("messages: %+v, %v", msgs, err)
	}
	if strings.Contains(th.Title, email) || !strings.HasPrefix(th.Title, "Write to ") || th.Title != thread.DeriveTitle(msgs.Messages[0].Text) {
		t.Errorf("title %q of stored request %q", th.Title, msgs.Messages[0].Text)
	}
}
