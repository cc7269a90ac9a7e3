package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/sqlite"
	"github.com/memlayer/memlayer/thread"
)

// TestThreadsCommand: the command lists a resource's threads page by
// page with titles and a metadata filter, sets and shows titles and
// metadata, pages a thread's messages and deletes a thread, leaving the
// threads whose IDs nest in it or share its prefix; each mistake exits
// 2 (a bad command line) or 1 (a failure) and changes nothing.
func TestThreadsCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "threads.db")
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	t.Setenv("MEMLAYER_STORE", db)
	checkThreadsCommand(t, st)
}

// checkThreadsCommand runs the checks of TestThreadsCommand on st, an
// empty store, through the command with store flags sf.
func checkThreadsCommand(t *testing.T, st storage.Store, sf ...string) {
	ctx := t.Context()
	for _, th := range []struct{ id, resource string }{{"t1", "r"}, {"t1/x", "r"}, {"t1x", "r"}, {"u", "r/x"}, {"v", "rx"}} {
		time.Sleep(time.Millisecond)
		w := thread.NewWriter(st, th.id, nil)
		err := w.Write(ctx, thread.Step{ResourceID: th.resource, Messages: []thread.Message{
			{Role: thread.RoleUser, Text: "Please handle " + th.id}, {Role: thread.RoleAssistant, Text: "done " + th.id}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	ok := func(args ...string) string {
		t.Helper()
		code, out, errs := memlayer(t, "", append(clone(sf), args...)...)
		if code != 0 {
			t.Fatalf("memlayer %v: status %d: %s", args, code, errs)
		}
		return out
	}
	fails := func(code int, want string, args ...string) {
		t.Helper()
		got, out, errs := memlayer(t, "", append(clone(sf), args...)...)
		if got != code || !strings.Contains(errs, want) || out != "" {
			t.Errorf("memlayer %v: status %d, stdout %q, stderr %q; want %d and %q", args, got, out, errs, code, want)
		}
	}

	out := ok("threads", "-resource", "r", "-limit", "2")
	if !strings.Contains(out, "TITLE") || !strings.Contains(out, "Please handle t1x") || !strings.Contains(out, "t1/x") || strings.Contains(out, "  t1  ") {
		t.Errorf("first page:\n%s", out)
	}
	cursor := regexp.MustCompile(`next page: -cursor (\S+)`).FindStringSubmatch(out)
	if cursor == nil {
		t.Fatalf("no cursor:\n%s", out)
	}
	if out := ok("threads", "-resource", "r", "-limit", "2", "-cursor", cursor[1]); !strings.Contains(out, "Please handle t1\n") && !strings.Contains(out, "t1  ") || strings.Contains(out, "next page") {
		t.Errorf("second page:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(ok("-json", "threads", "-resource", "r", "-limit", "2")), "\n")
	var first thread.Thread
	var next struct{ Next string }
	if len(lines) != 3 || json.Unmarshal([]byte(lines[0]), &first) != nil || first.ThreadID != "t1x" || first.Title != "Please handle t1x" ||
		json.Unmarshal([]byte(lines[2]), &next) != nil || next.Next == "" {
		t.Errorf("-json threads -resource:\n%s", strings.Join(lines, "\n"))
	}

	// Titles and metadata.
	if out := ok("title", "t1", "Launch plan"); !strings.Contains(out, "title:     Launch plan (set)") {
		t.Errorf("title set:\n%s", out)
	}
	if out := ok("title", "t1x"); !strings.Contains(out, "title:     Please handle t1x (derived)") {
		t.Errorf("title derived:\n%s", out)
	}
	ok("title", "t1x", "Set for a while")
	if out := ok("title", "t1x", ""); !strings.Contains(out, "title:     Please handle t1x (derived)") {
		t.Errorf("title derived again:\n%s", out)
	}
	if out := ok("meta", "t1", "project=apollo", "tier=gold"); !strings.Contains(out, "meta:      project=apollo") {
		t.Errorf("meta set:\n%s", out)
	}
	ok("meta", "t1x", "project=apollo")
	ok("meta", "-unset", "project", "t1x")
	if out := ok("threads", "-resource", "r", "-meta", "project=apollo"); !strings.Contains(out, "Launch plan") || strings.Contains(out, "t1x") {
		t.Errorf("threads -meta:\n%s", out)
	}
	if out := ok("show", "t1"); !strings.Contains(out, "title:     Launch plan") || !strings.Contains(out, "metadata:  project=apollo tier=gold") {
		t.Errorf("show:\n%s", out)
	}
	fails(1, "the thread has no resource", "meta", "new", "k=v")
	if out := ok("meta", "-resource", "r", "new", "k=v"); !strings.Contains(out, "resource:  r") {
		t.Errorf("meta of a new thread:\n%s", out)
	}
	fails(1, "belongs to another resource", "title", "-resource", "rx", "t1", "mine")
	fails(2, "control character", "title", "t1", "bad\x1b[2J")
	fails(2, `"nokey" is not KEY=VALUE`, "meta", "t1", "nokey")
	fails(2, "title takes 1 to 2 arguments", "title", "t1", "a", "b")
	fails(2, "give -resource", "threads", "-cursor", cursor[1])
	fails(2, "invalid query", "threads", "-resource", "r", "-cursor", "garbage")
	fails(2, "more than MaxIDLen", "-json", "title", strings.Repeat("x", thread.MaxIDLen+1))
	if out := ok("title", "t1"); !strings.Contains(out, "Launch plan (set)") {
		t.Errorf("title after the mistakes:\n%s", out)
	}

	// Messages, paged.
	if out := ok("messages", "-limit", "1", "t1"); !strings.Contains(out, "[0] user: Please handle t1\n") || !strings.Contains(out, "next page: -from 1") {
		t.Errorf("messages:\n%s", out)
	}
	var page thread.MessagePage
	if err := json.Unmarshal([]byte(ok("-json", "messages", "-from", "-1", "t1")), &page); err != nil || page.First != 1 || page.Total != 2 || page.Messages[0].Text != "done t1" {
		t.Errorf("messages -from -1: %+v, %v", page, err)
	}
	fails(1, "not found", "messages", "none")
	fails(2, "invalid query", "messages", "-limit", "-1", "t1")

	// Delete: t1 goes, t1/x and t1x stay.
	if out := ok("delete", "-y", "t1"); !strings.Contains(out, "thread.meta") {
		t.Errorf("delete:\n%s", out)
	}
	out = ok("threads", "-resource", "r")
	if strings.Contains(out, "Launch plan") || !strings.Contains(out, "t1/x") || !strings.Contains(out, "t1x") {
		t.Errorf("threads after delete:\n%s", out)
	}
	fails(1, "0 records found", "delete", "-y", "t1")
	fails(1, "not found", "title", "t1")

	// A list lost (or a thread written by a build that kept none) comes
	// back with reindex.
	if err := st.Delete(ctx, thread.IndexKey("r"), storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if out := ok("threads", "-resource", "r"); strings.Contains(out, "t1x") {
		t.Errorf("threads with the list gone:\n%s", out)
	}
	if out := ok("reindex"); !strings.Contains(out, "reindexed") {
		t.Errorf("reindex: %q", out)
	}
	if out := ok("threads", "-resource", "r"); !strings.Contains(out, "t1x") || !strings.Contains(out, "t1/x") {
		t.Errorf("threads after reindex:\n%s", out)
	}
	fails(2, "reindex takes 0 argument(s)", "reindex", "r")
}
