package reliability

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Environment variables of the suite.
const (
	// heavyEnv turns on the full scenarios (make reliability).
	heavyEnv = "MEMLAYER_RELIABILITY"
	// workerEnv makes the test binary a worker process of that role.
	workerEnv = "MEMLAYER_RELIABILITY_WORKER"
	// workerArgsEnv carries the worker's arguments as JSON.
	workerArgsEnv = "MEMLAYER_RELIABILITY_ARGS"
)

// TestMain runs the test binary as a worker process when workerEnv names a
// role: the multi-process scenarios start copies of this binary rather
// than a separate command, so the workers are built with the same flags
// (-race included) as the tests.
func TestMain(m *testing.M) {
	if role := os.Getenv(workerEnv); role != "" {
		os.Exit(runWorker(role, os.Getenv(workerArgsEnv)))
	}
	quietLogs()
	code := m.Run()
	stopSharedRedis()
	stopSharedPostgres()
	os.Exit(code)
}

// quietLogs drops the warnings the scenarios provoke on purpose
// (quarantined state, failed hooks, a Redis server that is down): the
// tests assert those outcomes themselves. Errors are still logged.
func quietLogs() {
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	goredis.SetLogger(discardRedisLog{})
}

// discardRedisLog drops go-redis's pool messages ("failed to dial after 5
// attempts"), which the server-fault scenario provokes on purpose.
type discardRedisLog struct{}

func (discardRedisLog) Printf(context.Context, string, ...any) {}

// heavy reports whether the full scenarios run. Under plain go test
// (make test) they run in a reduced form so that the normal suite stays
// fast.
func heavy() bool { return os.Getenv(heavyEnv) == "1" }

// parallelInMakeTest runs t in parallel with the other tests that call it,
// under make test: these scenarios spend most of their time waiting (for
// worker processes, servers and locks), not computing, and share nothing
// but the servers, where each uses its own namespace, schema or file.
// Under make reliability (heavy) they run one at a time, so that each
// FIGURE line measures one scenario alone.
func parallelInMakeTest(t *testing.T) {
	if !heavy() {
		t.Parallel()
	}
}

// inCI reports whether missing servers are failures rather than skips.
func inCI() bool { return os.Getenv("CI") == "true" }

// pick returns full under MEMLAYER_RELIABILITY=1 and reduced otherwise.
func pick(full, reduced int) int {
	if heavy() {
		return full
	}
	return reduced
}

// workers maps a role to the function a worker process runs. A worker
// reads its arguments from raw, writes lines to out, reads commands from
// in, and returns an error that makes the process exit with status 1.
var workers = map[string]func(ctx context.Context, raw string, in *bufio.Scanner, out *lineWriter) error{}

func runWorker(role, raw string) int {
	fn, ok := workers[role]
	if !ok {
		fmt.Fprintf(os.Stderr, "reliability: unknown worker role %q\n", role)
		return 2
	}
	in := bufio.NewScanner(os.Stdin)
	out := &lineWriter{w: os.Stdout}
	if err := fn(context.Background(), raw, in, out); err != nil {
		fmt.Fprintf(os.Stderr, "reliability: worker %s: %v\n", role, err)
		return 1
	}
	return 0
}

// lineWriter writes whole lines, from several goroutines, unbuffered: a
// line the worker wrote before it was killed is readable by the parent.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format+"\n", args...)
}

// worker is a worker process seen from the test.
type worker struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // stdout, line by line; closed at EOF
	stderr *syncWriter
	done   chan struct{} // closed when the process has exited
	exit   error         // the exit status, set before done is closed
}

// runWorkers starts procs workers of role, worker p with args(p), waits
// until every one is ready, releases them together, and returns each
// one's "result" line decoded into an R (waiting at most resultWait for
// each) with the wall time from release to the last result. It waits for
// every worker to exit.
func runWorkers[R any](t *testing.T, role string, procs int, resultWait time.Duration, args func(p int) any) ([]R, time.Duration) {
	t.Helper()
	ws := make([]*worker, procs)
	for p := range ws {
		ws[p] = startWorker(t, role, args(p))
	}
	for _, w := range ws {
		w.expect(t, "ready", time.Minute)
	}
	start := time.Now()
	for _, w := range ws {
		w.send(t, "go")
	}
	results := make([]R, procs)
	for p, w := range ws {
		line := w.expect(t, "result", resultWait)
		if err := json.Unmarshal([]byte(line), &results[p]); err != nil {
			t.Fatalf("worker %d result %q: %v", p, line, err)
		}
	}
	elapsed := time.Since(start)
	for _, w := range ws {
		w.wait(t, time.Minute)
	}
	return results, elapsed
}

// startWorker starts this test binary as a worker of role with args
// (marshalled to JSON). The process is killed when the test ends.
func startWorker(t *testing.T, role string, args any) *worker {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatalf("worker args: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerEnv+"="+role, workerArgsEnv+"="+string(raw))
	w := &worker{cmd: cmd, lines: make(chan string, 1<<16), stderr: &syncWriter{b: &strings.Builder{}}, done: make(chan struct{})}
	cmd.Stderr = w.stderr
	if w.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start worker %s: %v", role, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
		close(w.lines)
		w.exit = cmd.Wait()
		close(w.done)
	}()
	t.Cleanup(func() {
		select {
		case <-w.done:
		default:
			_ = cmd.Process.Kill()
			<-w.done
		}
	})
	return w
}

// syncWriter guards a strings.Builder written by exec's copier and read by
// the test.
type syncWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (w *worker) errText() string { return w.stderr.String() }

// expect waits for a line starting with prefix and returns the rest of it.
func (w *worker) expect(t *testing.T, prefix string, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-w.lines:
			if !ok {
				<-w.done
				t.Fatalf("worker exited before %q: %v\nstderr:\n%s", prefix, w.exit, w.errText())
			}
			if rest, found := strings.CutPrefix(line, prefix); found {
				return strings.TrimSpace(rest)
			}
		case <-deadline:
			t.Fatalf("no %q from the worker within %v\nstderr:\n%s", prefix, timeout, w.errText())
		}
	}
}

// send writes one command line to the worker.
func (w *worker) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(w.stdin, line+"\n"); err != nil {
		t.Fatalf("write to worker: %v", err)
	}
}

// wait waits for the worker to exit and fails the test on a non-zero
// status.
func (w *worker) wait(t *testing.T, timeout time.Duration) {
	t.Helper()
	for range w.lines { // drain
	}
	select {
	case <-w.done:
		if w.exit != nil {
			t.Fatalf("worker failed: %v\nstderr:\n%s", w.exit, w.errText())
		}
	case <-time.After(timeout):
		t.Fatalf("worker did not exit within %v", timeout)
	}
}

// waitFor reads a command line from the parent, failing when stdin closes.
func waitFor(in *bufio.Scanner, want string) error {
	for in.Scan() {
		if strings.TrimSpace(in.Text()) == want {
			return nil
		}
	}
	return fmt.Errorf("stdin closed before %q", want)
}
