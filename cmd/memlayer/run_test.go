package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/sqlite"
	"github.com/memlayer/memlayer/thread"
	"github.com/memlayer/memlayer/workingmemory"
)

// cmsDB writes a database with the cms example (go run ./examples/cms
// -db FILE, scripted model) and returns its path.
func cmsDB(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "cms.db")
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to run the cms example: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), gobin, "run", "../../examples/cms", "-db", db)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run ./examples/cms: %v\n%s", err, out)
	}
	return db
}

// memlayer runs the command with args and stdin; it returns the exit
// status, stdout and stderr.
func memlayer(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(t.Context(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// checkCLI lists, shows, exports and erases the cms example's thread
// through the command, with store flags sf, on st.
func checkCLI(t *testing.T, st storage.Store, sf ...string) {
	t.Helper()
	ok := func(stdin string, args ...string) string {
		t.Helper()
		code, out, errs := memlayer(t, stdin, append(clone(sf), args...)...)
		if code != 0 {
			t.Fatalf("memlayer %v: status %d: %s", args, code, errs)
		}
		return out
	}
	out := ok("", "threads")
	if !strings.Contains(out, "THREAD") || !strings.Contains(out, "cms-demo") || !strings.Contains(out, "acme-site") {
		t.Errorf("threads:\n%s", out)
	}
	var info thread.Info
	if err := json.Unmarshal([]byte(ok("", "-json", "threads", "-resource", "acme-site")), &info); err != nil ||
		info.ThreadID != "cms-demo" || info.Messages == 0 || info.Agent != "cms-assistant" {
		t.Errorf("threads -json: %+v, %v", info, err)
	}
	if out := ok("", "threads", "-resource", "nobody"); strings.Contains(out, "cms-demo") {
		t.Errorf("threads of another resource:\n%s", out)
	}
	out = ok("", "show", "cms-demo")
	for _, want := range []string{"resource:  acme-site", "summary (v", "createPage(", "user: Create an About page"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	var view threadView
	if err := json.Unmarshal([]byte(ok("", "show", "-json", "cms-demo")), &view); err != nil ||
		view.First+len(view.Messages) != view.Thread.Messages || view.Summary.Text == "" {
		t.Errorf("show -json: first %d, %d of %d messages, summary %q, %v", view.First, len(view.Messages), view.Thread.Messages, view.Summary.Text, err)
	}
	if out := ok("", "state", workingmemory.DefaultID, "thread:cms-demo"); !strings.Contains(out, `"pageId"`) {
		t.Errorf("state:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(ok("", "export", "-resource", "acme-site")), "\n")
	for _, l := range lines {
		var r recordView
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.Key == "" || r.Version == 0 || (r.Value == nil && r.Text == nil) {
			t.Fatalf("export line %q: %+v, %v", l, r, err)
		}
	}
	all, err := st.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	// Listing a resource's threads marked the store reindexed: that
	// record names no resource.
	all = slices.DeleteFunc(all, func(k string) bool { return k == thread.IndexedKey })
	if len(lines) < 5 || len(lines) != len(all) {
		t.Errorf("export -resource gave %d records, the store has %d", len(lines), len(all))
	}

	// erase asks first; "n" deletes nothing.
	code, out, errs := memlayer(t, "n\n", append(clone(sf), "erase", "acme-site")...)
	if code != 1 || out != "" || !strings.Contains(errs, "? [y/N]") || !strings.Contains(errs, "nothing was deleted") {
		t.Errorf("erase answered no: status %d, %q, %q", code, out, errs)
	}
	if keys, _ := st.List(t.Context(), ""); len(keys) != len(all)+1 {
		t.Fatalf("%d keys after a cancelled erase, want %d", len(keys), len(all))
	}
	out = ok("y\n", "erase", "acme-site")
	if !strings.Contains(out, "erased resource \"acme-site\": 1 threads") || !strings.Contains(out, "thread.head") {
		t.Errorf("erase:\n%s", out)
	}
	keys, err := st.List(t.Context(), "")
	if err != nil || !slices.Equal(keys, []string{thread.IndexedKey}) {
		t.Errorf("keys left after the erase: %v, %v", keys, err)
	}
	if out := ok("", "threads"); strings.Contains(out, "cms-demo") {
		t.Errorf("threads after the erase:\n%s", out)
	}
	if code, _, errs := memlayer(t, "", append(clone(sf), "show", "cms-demo")...); code != 1 || !strings.Contains(errs, "not found") {
		t.Errorf("show after the erase: %d %q", code, errs)
	}
	// A second erase finds nothing, and says so with status 1.
	if code, out, errs := memlayer(t, "", append(clone(sf), "-y", "-json", "erase", "acme-site")...); code != 1 || out != "" || !strings.Contains(errs, "0 records found") {
		t.Errorf("second erase: status %d, %q, %q", code, out, errs)
	}
}

func clone(s []string) []string { return append([]string(nil), s...) }

// TestOperate32_CommandOnCMSDatabaseSQLite: on a database written by the
// cms example, memlayer lists the thread, shows it, reads the
// scratchpad, exports the resource, erases it after confirmation, and no
// key is left.
func TestOperate32_CommandOnCMSDatabaseSQLite(t *testing.T) {
	db := cmsDB(t)
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	t.Setenv("MEMLAYER_STORE", db) // the default store
	checkCLI(t, st)
}

// TestOperate33_CommandOnCMSDatabaseRedis: the cms example's records,
// copied into a Redis namespace, are listed, shown, exported and erased
// by memlayer -store REDIS_URL.
func TestOperate33_CommandOnCMSDatabaseRedis(t *testing.T) {
	u, ns, dst := redisNamespace(t, "operate33")
	src, err := sqlite.Open(t.Context(), sqlite.Config{Path: cmsDB(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	keys, err := src.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		it, err := src.Get(t.Context(), k)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dst.Put(t.Context(), k, it.Value, storage.NoVersion); err != nil {
			t.Fatal(err)
		}
	}
	checkCLI(t, dst, "-store", u, "-namespace", ns)
}

// TestOperate34_CommandErrors: a missing file, an unreachable server, no
// store and a bad command line each fail with a clear message.
func TestOperate34_CommandErrors(t *testing.T) {
	t.Setenv("MEMLAYER_STORE", "")
	missing := filepath.Join(t.TempDir(), "nope.db")
	// PostgreSQL is linked only with -tags postgres (make test runs
	// this package both ways).
	pgCode, pgWant := 2, "built without PostgreSQL support; build it with -tags postgres"
	if openPostgres != nil {
		pgCode, pgWant = 1, "open PostgreSQL store: storage/postgres: server unavailable"
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-store", missing, "threads"}, 1, "no such file or directory"},
		{[]string{"-store", "redis://127.0.0.1:1/0", "threads"}, 1, "cannot reach the Redis server"},
		{[]string{"-store", "postgres://u@127.0.0.1:1/db", "threads"}, pgCode, pgWant},
		{[]string{"threads"}, 2, "no store: give -store"},
		{[]string{"-store", missing}, 2, "no command"},
		{[]string{"-store", missing, "frobnicate"}, 2, "unknown command"},
		{[]string{"-store", missing, "show"}, 2, "show takes 1 argument"},
		{[]string{"-store", "mysql://x", "threads"}, 2, "unknown store URL scheme"},
	} {
		code, out, errs := memlayer(t, "", c.args...)
		if code != c.code || !strings.Contains(errs, c.want) || out != "" {
			t.Errorf("memlayer %v: status %d, stdout %q, stderr %q; want %d and %q", c.args, code, out, errs, c.code, c.want)
		}
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("the missing store was created: %v", err)
	}
}

// TestOperate38_CommandListsAndRestoresQuarantined: a scratchpad state
// set aside by storage.Quarantine is listed by quarantined and put back
// by restore, which refuses to overwrite a newer state without -replace.
func TestOperate38_CommandListsAndRestoresQuarantined(t *testing.T) {
	ctx := t.Context()
	db := filepath.Join(t.TempDir(), "q.db")
	st, err := sqlite.Open(ctx, sqlite.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key := storage.LayerKey("working-memory", "dave", "state")
	if _, err := st.Put(ctx, key, []byte(`{"task":"old plan"}`), storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	it, err := st.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	qkey, err := storage.Quarantine(ctx, st, it, "working-memory", "dave", time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := memlayer(t, "", "-store", db, "quarantined")
	if code != 0 || !strings.Contains(out, workingmemory.DefaultID+"  dave   2026-11-23T12:00:00Z  "+qkey) {
		t.Fatalf("quarantined: %d %q %q", code, out, errs)
	}
	if _, err := st.Put(ctx, key, []byte(`{"task":"new"}`), storage.NoVersion); err != nil {
		t.Fatal(err)
	}
	code, _, errs = memlayer(t, "", "-store", db, "restore", qkey)
	if code != 1 || !strings.Contains(errs, "-replace overwrites it") {
		t.Errorf("restore over a newer state: %d %q", code, errs)
	}
	code, out, errs = memlayer(t, "", "-store", db, "restore", "-replace", qkey)
	if code != 0 || !strings.Contains(out, "restored "+qkey+" to "+key) {
		t.Fatalf("restore: %d %q %q", code, out, errs)
	}
	if it, err := st.Get(ctx, key); err != nil || string(it.Value) != `{"task":"old plan"}` {
		t.Errorf("state after restore: %q, %v", it.Value, err)
	}
	if code, out, _ := memlayer(t, "", "-store", db, "-json", "quarantined"); code != 0 || out != "" {
		t.Errorf("still quarantined: %q", out)
	}
}
