package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/history"
	"github.com/memlayer/memlayer/inspect"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/sqlite"
	"github.com/memlayer/memlayer/thread"
	"github.com/memlayer/memlayer/workingmemory"
)

// forged is stored text that tries to rewrite the terminal (an ESC
// sequence that clears the screen, a C1 control, a bidi override) and to
// forge lines of the command's output.
const forged = "Hi\x1b[2J\x1b]0;owned\x07\u009b31m\u202eesrever\n[9] assistant: forged line\rTHREAD  RESOURCE"

// trustStore writes, through the agent loop, two threads of resource
// "alice" ("t1" and "t2") whose messages, tool calls and results carry
// forged, one thread "t3" of "bob", one "t1/b" of "carol" (nested in
// t1's name), and thread-scoped layer records of t1 (one of them
// forged, not JSON), t2 and t1/b; it returns the SQLite file and the open store.
func trustStore(t *testing.T) (string, storage.Store) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "trust.db")
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	echo := agentloop.Tool{Name: "echo", Description: "echo", Call: func(_ context.Context, args json.RawMessage) (string, error) {
		return "result " + forged, nil
	}}
	model := agenttest.NewFunc(func(_ context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		if len(r.ToolResults()) > 0 {
			return agenttest.Text("answer " + forged), nil
		}
		return agenttest.Calls(agenttest.Call("echo", map[string]string{"note": forged})), nil
	})
	a, err := agentloop.New(agentloop.Config{Name: "agent\x1b[1m", Model: model, Store: st, Tools: []agentloop.Tool{echo}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ thread, resource string }{{"t1", "alice"}, {"t2", "alice"}, {"t3", "bob"}, {"t1/b", "carol"}} {
		if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: r.thread, ResourceID: r.resource, Input: "user " + forged}); err != nil {
			t.Fatal(err)
		}
	}
	for _, th := range []string{"t1", "t2", "t1/b"} {
		if _, err := st.Put(t.Context(), storage.LayerKey("working-memory", th, "state"), []byte(`{"task":"x"}`), storage.AnyVersion); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Put(t.Context(), storage.LayerKey("working-memory", "t1", "note"), []byte(forged), storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	return db, st
}

// controls finds what a terminal acts on: C0 controls other than the
// newline, DEL, C1 controls, bidi overrides and isolates, line and
// paragraph separators.
var controls = regexp.MustCompile("[\x00-\x09\x0b-\x1f\x7f\u0080-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")

// TestTrust321_ShowAndThreadsEscapeControlCharacters: show, threads and
// state print no control character a stored value holds, and no stored
// newline starts a line of their output; -json keeps the exact text.
func TestTrust321_ShowAndThreadsEscapeControlCharacters(t *testing.T) {
	db, _ := trustStore(t)
	for _, args := range [][]string{{"show", "t1"}, {"threads"}, {"state", "working-memory", "t1"}} {
		code, out, errs := memlayer(t, "", append([]string{"-store", db}, args...)...)
		if code != 0 {
			t.Fatalf("memlayer %v: %d %s", args, code, errs)
		}
		if m := controls.FindAllString(out, -1); len(m) > 0 {
			t.Errorf("memlayer %v printed %d control characters %q:\n%s", args, len(m), m, out)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "[9] assistant: forged") || strings.HasPrefix(strings.TrimSpace(l), "THREAD  RESOURCE") && args[0] != "threads" {
				t.Errorf("memlayer %v: a stored value forged the line %q", args, l)
			}
		}
		if args[0] == "show" && !strings.Contains(out, `Hi\x1b[2J`) {
			t.Errorf("show does not show the escaped ESC:\n%s", out)
		}
	}
	code, out, errs := memlayer(t, "", "-store", db, "-json", "show", "t1")
	var v threadView
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || len(v.Messages) == 0 || v.Messages[0].Text != "user "+forged {
		t.Errorf("show -json: %d %q %q", code, out, errs)
	}
}

// TestTrust321_JSONEraseWritesOnlyJSON: erase -json without -y asks on
// standard error, so standard output is the JSON alone; unanswered, it
// deletes nothing.
func TestTrust321_JSONEraseWritesOnlyJSON(t *testing.T) {
	db, st := trustStore(t)
	before, _ := st.List(t.Context(), "")
	code, out, errs := memlayer(t, "", "-store", db, "-json", "erase", "alice")
	if code != 1 || out != "" || !strings.Contains(errs, "? [y/N]") || !strings.Contains(errs, "nothing was deleted") {
		t.Errorf("unanswered: status %d, stdout %q, stderr %q", code, out, errs)
	}
	if after, _ := st.List(t.Context(), ""); len(after) != len(before) {
		t.Fatalf("an unanswered erase deleted %d records", len(before)-len(after))
	}
	code, out, errs = memlayer(t, "y\n", "-store", db, "-json", "erase", "alice")
	var e inspect.Erased
	if code != 0 || json.Unmarshal([]byte(out), &e) != nil || !slices.Equal(sorted(e.Threads), []string{"t1", "t2"}) {
		t.Errorf("answered: status %d, stdout %q, stderr %q", code, out, errs)
	}
	if !strings.Contains(errs, `erase `) || !strings.Contains(errs, "? [y/N]") {
		t.Errorf("the prompt is not on standard error: %q", errs)
	}
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// TestTrust321_EraseOfNothingFails: erasing a resource nothing is stored
// for says 0 were found and exits 1, with and without -y.
func TestTrust321_EraseOfNothingFails(t *testing.T) {
	db, st := trustStore(t)
	before, _ := st.List(t.Context(), "")
	for _, args := range [][]string{{"erase", "-y", "nobody"}, {"-y", "-json", "erase", "nobody"}, {"erase", "nobody"}} {
		code, out, errs := memlayer(t, "y\n", append([]string{"-store", db}, args...)...)
		if code != 1 || out != "" || !strings.Contains(errs, `0 records found for resource "nobody"`) {
			t.Errorf("memlayer %v: status %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	if after, _ := st.List(t.Context(), ""); len(after) != len(before) {
		t.Errorf("%d records deleted", len(before)-len(after))
	}
}

// TestTrust321_FlagsAfterArguments: flags are taken after the command's
// arguments as before them; "--" ends the flags; a flag the command does
// not take, or an unknown one, is named in the error.
func TestTrust321_FlagsAfterArguments(t *testing.T) {
	db, st := trustStore(t)
	code, out, errs := memlayer(t, "", "show", "t1", "-json", "-store", db)
	var v threadView
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Thread.ThreadID != "t1" {
		t.Errorf("show t1 -json -store DB: status %d, stdout %.200q, stderr %q", code, out, errs)
	}
	code, out, errs = memlayer(t, "", "-store", db, "threads", "-json", "-resource", "bob")
	var info thread.Info
	if code != 0 || json.Unmarshal([]byte(out), &info) != nil || info.ThreadID != "t3" {
		t.Errorf("threads -json -resource bob: status %d, stdout %q, stderr %q", code, out, errs)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"show", "t1", "-bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"show", "t1", "-y"}, "show does not take -y"},
		{[]string{"threads", "-replace"}, "threads does not take -replace"},
		{[]string{"show", "t1", "t2"}, "show takes 1 argument(s), got 2"},
		{[]string{"show", "--", "-json"}, `thread "-json"`},
	} {
		code, out, errs := memlayer(t, "", append([]string{"-store", db}, c.args...)...)
		if code == 0 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("memlayer %v: status %d, stdout %q, stderr %q; want %q", c.args, code, out, errs, c.want)
		}
	}
	before, _ := st.List(t.Context(), "")
	code, out, errs = memlayer(t, "", "-store", db, "erase", "bob", "-y")
	if code != 0 || !strings.Contains(out, `erased resource "bob": 1 threads`) {
		t.Errorf("erase bob -y: status %d, stdout %q, stderr %q", code, out, errs)
	}
	if after, _ := st.List(t.Context(), ""); len(after) >= len(before) {
		t.Errorf("erase bob -y deleted nothing")
	}
}

// TestTrust321_DeleteThread: delete asks first on standard error (no
// deletes nothing), then deletes the thread's records and its
// thread-scoped layer records, and nothing of the resource's other
// thread; deleting it again finds 0 and exits 1.
func TestTrust321_DeleteThread(t *testing.T) {
	db, st := trustStore(t)
	before, _ := st.List(t.Context(), "")
	code, out, errs := memlayer(t, "n\n", "-store", db, "delete", "t1")
	if code != 1 || out != "" || !strings.Contains(errs, `delete thread "t1"`) || !strings.Contains(errs, "nothing was deleted") {
		t.Errorf("delete answered no: status %d, stdout %q, stderr %q", code, out, errs)
	}
	if after, _ := st.List(t.Context(), ""); len(after) != len(before) {
		t.Fatalf("a cancelled delete deleted %d records", len(before)-len(after))
	}
	code, out, errs = memlayer(t, "y\n", "-store", db, "delete", "t1")
	if code != 0 || !strings.Contains(out, `deleted thread "t1"`) || !strings.Contains(out, "thread.head") || !strings.Contains(out, "layer."+workingmemory.DefaultID) {
		t.Errorf("delete: status %d, stdout %q, stderr %q", code, out, errs)
	}
	after, _ := st.List(t.Context(), "")
	for _, k := range after {
		if strings.HasPrefix(k, storage.ThreadPrefix("t1")) || strings.HasPrefix(k, "layers/working-memory/t1/") {
			t.Errorf("left after delete t1: %s", k)
		}
	}
	for _, k := range []string{storage.ThreadKey("t2", thread.HeadName), storage.LayerKey("working-memory", "t2", "state"),
		storage.ThreadKey("t1/b", thread.HeadName), storage.LayerKey("working-memory", "t1/b", "state")} {
		if !slices.Contains(after, k) {
			t.Errorf("delete t1 took %s", k)
		}
	}
	code, out, errs = memlayer(t, "", "-store", db, "delete", "-y", "t1")
	if code != 1 || out != "" || !strings.Contains(errs, `0 records found for thread "t1"`) {
		t.Errorf("second delete: status %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, errs = memlayer(t, "", "-store", db, "-json", "delete", "t2", "-y")
	var e inspect.Erased
	if code != 0 || json.Unmarshal([]byte(out), &e) != nil || !slices.Equal(e.Threads, []string{"t2"}) || e.Counts["thread.head"] != 1 {
		t.Errorf("delete -json -y: status %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestTrust321_ShowSaysWhatWasElided: show marks the arguments retention
// elided (history.Config.RetainMessages) with their size and
// hash; -json carries the same in "elided".
func TestTrust321_ShowSaysWhatWasElided(t *testing.T) {
	db := filepath.Join(t.TempDir(), "elided.db")
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	big := map[string]string{"notes": strings.Repeat("n", 8<<10)}
	model := agenttest.NewFunc(func(_ context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		if len(r.ToolResults()) > 0 {
			return agenttest.Text("ok"), nil
		}
		return agenttest.Calls(agenttest.Call("echo", big)), nil
	})
	echo := agentloop.Tool{Name: "echo", Description: "echo", Call: func(context.Context, json.RawMessage) (string, error) { return "done", nil }}
	a, err := agentloop.New(agentloop.Config{Model: model, Store: st, Tools: []agentloop.Tool{echo}, History: history.Config{RetainMessages: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "turn " + string(rune('a'+i))}); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := memlayer(t, "", "-store", db, "show", "t")
	if code != 0 || !strings.Contains(out, `echo({"_elided":"8204 bytes"}) [elided: 8204 bytes, sha256 `) {
		t.Errorf("show: status %d, stderr %q, stdout:\n%.2000s", code, errs, out)
	}
	code, out, _ = memlayer(t, "", "-store", db, "-json", "show", "t")
	var v threadView
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || len(v.Messages) < 2 || v.Messages[1].ToolCalls[0].Elided == nil {
		t.Errorf("show -json: status %d, %.300q", code, out)
	}
}
