// Package pgtest starts throwaway PostgreSQL servers on loopback for tests:
// the tests of package postgres, its examples and the reliability suite.
//
// [URL] names the server a test should use: the one of
// MEMLAYER_POSTGRES_URL when it is set, or else one server this package
// starts once per test binary ([Main] stops it). Without either it skips
// the test, saying why.
//
// A server is a cluster made by initdb in a temporary directory and run
// by pg_ctl on a free loopback port, with its unix socket in the same
// directory. PostgreSQL refuses to run as root: as root, the cluster
// belongs to an unprivileged user (postgres if it exists, else nobody).
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/postgres"
)

// EnvURL is the environment variable naming a server of the user's.
const EnvURL = "MEMLAYER_POSTGRES_URL"

// binDirs are searched after the PATH for initdb, pg_ctl and postgres.
var binDirs = []string{"/usr/lib/postgresql/17/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/15/bin"}

func lookBin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range binDirs {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not installed (apt-get install -y postgresql)", name)
}

// Tools reports why a server cannot be started here, or "".
var Tools = sync.OnceValue(func() string {
	for _, bin := range []string{"initdb", "pg_ctl", "postgres"} {
		if _, err := lookBin(bin); err != nil {
			return err.Error() + "; or set " + EnvURL + " to a server of yours"
		}
	}
	return ""
})

// Server is a PostgreSQL cluster started by [Start].
type Server struct {
	dir  string // holds data/ and the socket
	port int
	cred *syscall.Credential // nil when not root
	mu   sync.Mutex
}

// URL returns a postgres:// URL for the server's database "postgres".
func (s *Server) URL() string {
	return fmt.Sprintf("postgres://memlayer@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// Dir returns the server's directory; its data directory is Dir()/data.
func (s *Server) Dir() string { return s.dir }

func (s *Server) command(name string, args ...string) (*exec.Cmd, error) {
	bin, err := lookBin(name)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC")
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd, nil
}

func (s *Server) run(name string, args ...string) error {
	cmd, err := s.command(name, args...)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return nil
}

// unprivileged returns the user a root process runs the server as.
func unprivileged() (*syscall.Credential, string, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, name, nil
	}
	return nil, "", errors.New("running as root and neither user postgres nor nobody exists to run the server as")
}

// Start creates a cluster in a new temporary directory and starts it on a
// free loopback port. Its superuser is memlayer, trusted on loopback
// without a password. Stop it with [Server.Stop].
func Start() (_ *Server, err error) {
	if why := Tools(); why != "" {
		return nil, errors.New(why)
	}
	dir, err := os.MkdirTemp("", "memlayer-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	if os.Geteuid() == 0 {
		cred, _, err := unprivileged()
		if err != nil {
			return nil, err
		}
		s.cred = cred
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	if s.port, err = freePort(); err != nil {
		return nil, err
	}
	if err := s.run("initdb", "-D", filepath.Join(dir, "data"), "-U", "memlayer", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		return nil, err
	}
	conf := fmt.Sprintf("listen_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\n"+
		"max_connections = 200\nshared_buffers = 64MB\nlogging_collector = off\n", s.port, dir)
	f, err := os.OpenFile(filepath.Join(dir, "data", "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	_, err = f.WriteString(conf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return s, s.Restart()
}

// Restart starts the server again after [Server.Kill] (or starts it the
// first time) and waits until it accepts connections. Recovery from a
// kill happens here.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.run("pg_ctl", "start", "-w", "-t", "60", "-D", filepath.Join(s.dir, "data"),
		"-l", filepath.Join(s.dir, "server.log")); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
		return fmt.Errorf("%w\nserver log:\n%s", err, log)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		c, err := pgx.Connect(ctx, s.URL())
		if err == nil {
			c.Close(ctx)
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("server on port %d not ready: %w", s.port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pid returns the postmaster's pid from its pid file, or 0.
func (s *Server) pid() int {
	b, err := os.ReadFile(filepath.Join(s.dir, "data", "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}

// Kill kills the server with SIGKILL, the postmaster and every backend,
// and waits until they are gone: a crash that gives no process a chance
// to flush or say goodbye. The postmaster is stopped (SIGSTOP) first, so
// that it starts no recovery while its children die. [Server.Restart]
// brings it back through crash recovery.
func (s *Server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	pid := s.pid()
	if pid <= 0 {
		return errors.New("pgtest: no postmaster.pid: the server is not running")
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("pgtest: stop %d: %w", pid, err)
	}
	kids := children(pid)
	for _, k := range kids {
		syscall.Kill(k, syscall.SIGKILL)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range append(kids, pid) {
		for syscall.Kill(p, 0) == nil {
			if time.Now().After(deadline) {
				return fmt.Errorf("pgtest: process %d of server %d still running 10s after SIGKILL", p, pid)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return nil
}

// children returns the pids whose parent is pid, from /proc.
func children(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// "pid (comm) state ppid ...": comm may hold spaces and parens.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b)[i+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// Stop stops the server by its own pid (SIGQUIT to the postmaster, an
// immediate shutdown; SIGKILL after ten seconds) and deletes its
// directory. It may be called more than once.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pid := s.pid(); pid > 0 && syscall.Kill(pid, syscall.SIGQUIT) == nil {
		deadline := time.Now().Add(10 * time.Second)
		for syscall.Kill(pid, 0) == nil {
			if time.Now().After(deadline) {
				for _, k := range children(pid) {
					syscall.Kill(k, syscall.SIGKILL)
				}
				syscall.Kill(pid, syscall.SIGKILL)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var shared struct {
	once sync.Once
	srv  *Server
	err  error
}

// URL returns the URL of the server a test should use:
// MEMLAYER_POSTGRES_URL when set, or else the server this package starts
// on first use (stopped by [Main]). Without either it skips t with the
// reason; with CI=true it fails t instead, so that CI cannot pass by
// skipping.
func URL(t testing.TB) string {
	t.Helper()
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	shared.once.Do(func() { shared.srv, shared.err = Start() })
	if shared.err != nil {
		why := "no PostgreSQL server: " + EnvURL + " is unset and a throwaway server cannot start: " + shared.err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	return shared.srv.URL()
}

// Main runs a test binary's tests and then stops the server [URL]
// started, if any. Call it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
func Main(m *testing.M) int {
	code := m.Run()
	if shared.srv != nil {
		shared.srv.Stop()
	}
	return code
}

// Open returns a store on the server at url in a fresh schema whose name
// starts with prefix (a-z, 0-9, '_'), closed and dropped when tb ends.
func Open(tb testing.TB, url, prefix string) *postgres.Store {
	tb.Helper()
	schema := fmt.Sprintf("%s_%d_%d", prefix, os.Getpid(), schemaSeq.Add(1))
	s, err := postgres.Open(context.Background(), postgres.Config{URL: url, Schema: schema})
	if err != nil {
		tb.Fatalf("pgtest: open: %v", err)
	}
	tb.Cleanup(func() {
		if _, err := s.Pool().Exec(context.Background(), `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			tb.Errorf("pgtest: drop schema %s: %v", schema, err)
		}
		s.Close()
	})
	return s
}

// schemaSeq numbers the schemas of [Open].
var schemaSeq atomic.Int64

// Opener returns a function that opens a store on the server
// MEMLAYER_POSTGRES_URL names (.ci/with-postgres starts one), each in a
// fresh schema whose name starts with prefix, dropped when its test
// ends; nil when the variable is unset. It has the shape of
// storagetest.Backend's Open.
func Opener(prefix string) func(tb testing.TB, n int) storage.Store {
	u := os.Getenv(EnvURL)
	if u == "" {
		return nil
	}
	return func(tb testing.TB, _ int) storage.Store { return Open(tb, u, prefix) }
}
