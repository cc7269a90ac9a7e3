package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const pkgA = "example.com/a"

// ev builds one `go test -json` line.
func ev(action, pkg, test, output string) string {
	return fmt.Sprintf(`{"Action":%q,"Package":%q,"Test":%q,"Output":%q}`, action, pkg, test, output)
}

// passingRun is a package with a passing test, a skipped test and a
// skipped subtest, whose skip messages differ only in their details.
var passingRun = []string{
	ev("start", pkgA, "", ""),
	ev("run", pkgA, "TestOK", ""),
	ev("output", pkgA, "TestOK", "=== RUN   TestOK\n"),
	ev("output", pkgA, "TestOK", "    a_test.go:10: chatter of a passing test\n"),
	ev("output", pkgA, "TestOK", "--- PASS: TestOK (0.00s)\n"),
	ev("pass", pkgA, "TestOK", ""),
	ev("run", pkgA, "TestRedis", ""),
	ev("output", pkgA, "TestRedis", "    a_test.go:20: MEMLAYER_REDIS_URL is not set: start a server\n"),
	ev("output", pkgA, "TestRedis", "--- SKIP: TestRedis (0.00s)\n"),
	ev("skip", pkgA, "TestRedis", ""),
	ev("run", pkgA, "TestTable", ""),
	ev("run", pkgA, "TestTable/redis", ""),
	ev("output", pkgA, "TestTable/redis", "        a_test.go:30: MEMLAYER_REDIS_URL is not set  (run under .ci/with-redis).\n"),
	ev("output", pkgA, "TestTable/redis", "    --- SKIP: TestTable/redis (0.00s)\n"),
	ev("skip", pkgA, "TestTable/redis", ""),
	ev("run", pkgA, "TestTable/plain", ""),
	ev("pass", pkgA, "TestTable/plain", ""),
	ev("pass", pkgA, "TestTable", ""),
	ev("run", pkgA, "TestBare", ""),
	ev("output", pkgA, "TestBare", "--- SKIP: TestBare (0.00s)\n"),
	ev("skip", pkgA, "TestBare", ""),
	ev("output", pkgA, "", "-test.shuffle 42\n"),
	ev("output", pkgA, "", "PASS\n"),
	ev("output", pkgA, "", "ok  \texample.com/a\t0.10s\n"),
	ev("pass", pkgA, "", ""),
	ev("output", "example.com/b", "", "?   \texample.com/b\t[no test files]\n"),
	ev("skip", "example.com/b", "", ""),
}

// TestReport feeds recorded event streams to the report and checks what
// it prints and its exit status.
func TestReport(t *testing.T) {
	for _, c := range []struct {
		name  string
		lines []string
		want  string
		code  int
	}{
		{
			name:  "passing run",
			lines: passingRun,
			want: "ok  \texample.com/a\t0.10s\n" +
				"?   \texample.com/b\t[no test files]\n" +
				"make test: 3 tests passed, 3 skipped: 2 MEMLAYER_REDIS_URL is not set, 1 no reason given\n",
		},
		{
			name: "failing test: its output without -v framing or its passing subtests",
			lines: []string{
				ev("run", pkgA, "TestOK", ""),
				ev("output", pkgA, "TestOK", "    a_test.go:10: chatter of a passing test\n"),
				ev("pass", pkgA, "TestOK", ""),
				ev("run", pkgA, "TestBad", ""),
				ev("output", pkgA, "TestBad", "=== RUN   TestBad\n"),
				ev("run", pkgA, "TestBad/fine", ""),
				ev("output", pkgA, "TestBad/fine", "        a_test.go:35: chatter of a passing subtest\n"),
				ev("output", pkgA, "TestBad/fine", "    --- PASS: TestBad/fine (0.00s)\n"),
				ev("pass", pkgA, "TestBad/fine", ""),
				ev("run", pkgA, "TestBad/case", ""),
				ev("output", pkgA, "TestBad/case", "=== RUN   TestBad/case\n"),
				ev("output", pkgA, "TestBad/case", "        a_test.go:40: got 1, want 2\n"),
				ev("output", pkgA, "TestBad/case", "    --- FAIL: TestBad/case (0.00s)\n"),
				ev("fail", pkgA, "TestBad/case", ""),
				ev("output", pkgA, "TestBad", "--- FAIL: TestBad (0.00s)\n"),
				ev("fail", pkgA, "TestBad", ""),
				ev("output", pkgA, "", "-test.shuffle 7\n"),
				ev("output", pkgA, "", "FAIL\n"),
				ev("output", pkgA, "", "FAIL\texample.com/a\t0.20s\n"),
				ev("fail", pkgA, "", ""),
			},
			want: "        a_test.go:40: got 1, want 2\n" +
				"    --- FAIL: TestBad/case (0.00s)\n" +
				"--- FAIL: TestBad (0.00s)\n" +
				"-test.shuffle 7\n" +
				"FAIL\n" +
				"FAIL\texample.com/a\t0.20s\n" +
				"make test: FAIL: 2 tests failed (example.com/a.TestBad/case, example.com/a.TestBad), 1 package failed, 2 passed, 0 skipped\n",
			code: 1,
		},
		{
			name: "build failure, and a line that is not JSON",
			lines: []string{
				`{"ImportPath":"example.com/a [example.com/a.test]","Action":"build-output","Output":"a_test.go:3:1: syntax error\n"}`,
				`{"ImportPath":"example.com/a [example.com/a.test]","Action":"build-fail"}`,
				ev("start", pkgA, "", ""),
				ev("output", pkgA, "", "FAIL\texample.com/a [build failed]\n"),
				ev("fail", pkgA, "", ""),
				"go: some error that is not JSON",
			},
			want: "a_test.go:3:1: syntax error\n" +
				"FAIL\texample.com/a [build failed]\n" +
				"go: some error that is not JSON\n" +
				"make test: FAIL: 1 package failed, 0 passed, 0 skipped\n",
			code: 1,
		},
		{
			// A binary killed mid-test (a timeout, a crash) leaves a test
			// that never ended: its output is shown and the run fails,
			// even with no fail event.
			name: "cut off",
			lines: []string{
				ev("run", pkgA, "TestHang", ""),
				ev("output", pkgA, "TestHang", "=== RUN   TestHang\n"),
				ev("output", pkgA, "TestHang", "    a_test.go:50: waiting\n"),
			},
			want: "    a_test.go:50: waiting\n" +
				"make test: FAIL: 1 test failed (example.com/a.TestHang (unfinished)), output cut off, 0 passed, 0 skipped\n",
			code: 1,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			code := run(strings.NewReader(strings.Join(c.lines, "\n")+"\n"), &out, "make test")
			if out.String() != c.want {
				t.Errorf("output:\n%s\nwant:\n%s", out.String(), c.want)
			}
			if code != c.code {
				t.Errorf("exit status %d, want %d", code, c.code)
			}
		})
	}
}

func TestReason(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "no reason given"},
		{"  short mode.  ", "short mode"},
		{"MEMLAYER_REDIS_URL is not set (run under .ci/with-redis)", "MEMLAYER_REDIS_URL is not set"},
		{"two\tspaced   words\nsecond line", "two spaced words"},
		{"postgres: no server (see postgres_test.go)", "postgres: no server"},
		{"runs under make reliability (MEMLAYER_RELIABILITY=1): two runs", "runs under make reliability: two runs"},
	} {
		if got := Reason(c.in); got != c.want {
			t.Errorf("Reason(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A longer form is grouped under a shorter reason only at a ": " boundary.
func TestGrouped(t *testing.T) {
	got := grouped(map[string]int{
		"no server":               1,
		"no server: start one":    2,
		"no servers are running":  4,
		"postgres: no server":     8,
		"not set: run with X":     16,
		"not set: run with X: or": 32,
	})
	want := map[string]int{"no server": 3, "no servers are running": 4, "postgres: no server": 8, "not set: run with X": 48}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("grouped = %v, want %v", got, want)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestMakeTest runs the Makefile's test recipe with a stand-in go command
// that prints canned -json output and exits with a chosen status: make
// test must fail when go test fails, even when the output it printed
// shows no failure, and when a test fails, even if go test exits 0.
func TestMakeTest(t *testing.T) {
	if testing.Short() {
		t.Skip("runs make and the go command")
	}
	makeBin, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make is not installed")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pass := filepath.Join(dir, "pass.json")
	fail := filepath.Join(dir, "fail.json")
	write := func(name string, lines []string) {
		if err := os.WriteFile(name, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(pass, passingRun)
	write(fail, []string{ev("run", pkgA, "TestBad", ""), ev("fail", pkgA, "TestBad", ""), ev("fail", pkgA, "", "")})
	// The stand-in answers "go test" from $FAKE_JSON with $FAKE_STATUS and
	// hands anything else (go run) to the real go command.
	fake := filepath.Join(dir, "go")
	script := "#!/bin/sh\nif [ \"$1\" = test ]; then cat \"$FAKE_JSON\"; exit \"$FAKE_STATUS\"; fi\nexec " + goBin + " \"$@\"\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, json, status string
		ok                 bool
	}{
		{"all pass", pass, "0", true},
		{"go test fails, output clean", pass, "1", false},
		{"a test fails, go test exits 0", fail, "0", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(makeBin, "--no-print-directory", "-C", root, "test", "GO="+fake)
			// Run as a top-level make even under make test (whose make
			// passes MAKELEVEL and MAKEFLAGS down), so its messages read
			// "make: ..." and no jobserver is inherited.
			env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
				return strings.HasPrefix(kv, "MAKELEVEL=") || strings.HasPrefix(kv, "MAKEFLAGS=") || strings.HasPrefix(kv, "MFLAGS=")
			})
			cmd.Env = append(env,
				"FAKE_JSON="+c.json, "FAKE_STATUS="+c.status,
				// Set, so that .ci/with-redis and .ci/with-postgres start no server.
				"MEMLAYER_REDIS_URL=redis://127.0.0.1:1/0", "MEMLAYER_POSTGRES_URL=postgres://127.0.0.1:1/none")
			out, err := cmd.CombinedOutput()
			if (err == nil) != c.ok {
				t.Fatalf("make test: err = %v, want success %v; output:\n%s", err, c.ok, out)
			}
			// The summary is the last line but make's and go run's own.
			var last string
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if !strings.HasPrefix(l, "make: ") && !strings.HasPrefix(l, "make[") && !strings.HasPrefix(l, "exit status ") {
					last = l
				}
			}
			if !strings.HasPrefix(last, "make test: ") {
				t.Errorf("last line %q is not the summary; output:\n%s", last, out)
			}
		})
	}
}
