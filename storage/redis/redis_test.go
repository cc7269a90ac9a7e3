package redis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/redis"
	"github.com/memlayer/memlayer/storage/storagetest"
)

// serverURL returns the test server from MEMLAYER_REDIS_URL. Without it the
// test is skipped, except in CI (CI=true), where a missing server is a
// failure.
func serverURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("MEMLAYER_REDIS_URL")
	if u == "" {
		msg := "MEMLAYER_REDIS_URL is not set: start a server (redis-server --port 6390 --save '' --appendonly no --daemonize yes) and set MEMLAYER_REDIS_URL=redis://127.0.0.1:6390/0 to run the Redis tests"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return u
}

// namespace returns a fresh namespace so that runs and tests never share
// keys.
func namespace(t testing.TB) string {
	var b [6]byte
	rand.Read(b[:])
	return "memlayer-test:" + hex.EncodeToString(b[:]) + ":"
}

// newStore returns a Store on the test server under a fresh namespace and
// removes its keys when the test ends.
func newStore(t testing.TB, cfg redis.Config) *redis.Store {
	t.Helper()
	if cfg.URL == "" && cfg.Client == nil {
		cfg.URL = serverURL(t)
	}
	if cfg.Namespace == "" {
		cfg.Namespace = namespace(t)
	}
	s, err := redis.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		cleanNamespace(t, cfg.URL, cfg.Namespace)
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func rawClient(t testing.TB, url string) *goredis.Client {
	t.Helper()
	opts, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return c
}

func cleanNamespace(t testing.TB, url, ns string) {
	if url == "" {
		return
	}
	opts, err := goredis.ParseURL(url)
	if err != nil {
		return
	}
	c := goredis.NewClient(opts)
	defer c.Close()
	ctx := context.Background()
	// Quote the glob characters some test namespaces hold.
	pattern := strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`).Replace(ns) + "*"
	iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
	for iter.Next(ctx) {
		c.Del(ctx, iter.Val())
	}
}

func TestConformance(t *testing.T) {
	url := serverURL(t)
	storagetest.RunWith(t, func(t *testing.T) storage.Store {
		return newStore(t, redis.Config{})
	}, storagetest.Options{
		// FLUSHDB would empty the server other tests share; emptying the
		// store's namespace wipes everything the store keeps.
		// TestTrust01_CASNoABAAfterRestartEmpty restarts a private server.
		Wipe: func(t *testing.T, s storage.Store) storage.Store {
			cleanNamespace(t, url, s.(*redis.Store).Namespace())
			return s
		},
	})
}

// TestTrust01_CASNoABAAfterRestartEmpty (issue 9, item 1): a writer holding
// a version it read before the server restarted without persistence (or
// was flushed, or the key expired) must get ErrConflict once the key is
// written again, from this process or another. Before the fix the key's
// versions started again at 1 and the stale write passed.
func TestTrust01_CASNoABAAfterRestartEmpty(t *testing.T) {
	srv := startServer(t)
	ctx := t.Context()
	a, err := redis.New(redis.Config{URL: srv.url()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var stale []int64
	v := storage.NoVersion
	for i := range 3 {
		if v, err = a.Put(ctx, "k", []byte("old-"+strconv.Itoa(i)), v); err != nil {
			t.Fatal(err)
		}
		stale = append(stale, v)
	}
	srv.stop()
	srv.start()
	// Another process (a second Store) writes the key as often again.
	b, err := redis.New(redis.Config{URL: srv.url()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	v = storage.NoVersion
	for i := range 3 {
		if v, err = b.Put(ctx, "k", []byte("new-"+strconv.Itoa(i)), v); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(stale, v) {
			t.Errorf("version %d given to key k before the restart and again after", v)
		}
	}
	for _, sv := range stale {
		if _, err := a.Put(ctx, "k", []byte("stale"), sv); !errors.Is(err, storage.ErrConflict) {
			t.Errorf("stale Put (version %d) after the restart: error = %v, want storage.ErrConflict", sv, err)
		}
		if err := a.Delete(ctx, "k", sv); !errors.Is(err, storage.ErrConflict) {
			t.Errorf("stale Delete (version %d) after the restart: error = %v, want storage.ErrConflict", sv, err)
		}
	}
	if it, err := b.Get(ctx, "k"); err != nil || string(it.Value) != "new-2" || it.Version != v {
		t.Errorf("Get = %q v%d, %v; want \"new-2\" v%d", it.Value, it.Version, err, v)
	}
}

// TestTrust01_CASNoABAAfterExpiry is the same after a TTL expiry.
func TestTrust01_CASNoABAAfterExpiry(t *testing.T) {
	s := newStore(t, redis.Config{TTL: func(string) time.Duration { return 50 * time.Millisecond }})
	ctx := t.Context()
	stale, err := s.Put(ctx, "k", []byte("old"), storage.NoVersion)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := s.Get(ctx, "k"); errors.Is(err, storage.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the key did not expire")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := s.Put(ctx, "k", []byte("new"), storage.NoVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "k", []byte("stale"), stale); !errors.Is(err, storage.ErrConflict) {
		t.Errorf("stale Put after expiry: error = %v, want storage.ErrConflict", err)
	}
}

func TestNamespaceIsolation(t *testing.T) {
	url := serverURL(t)
	base := namespace(t)
	// Namespaces with glob metacharacters, and one that a careless glob
	// would match ("x" for "*").
	nsA, nsB := base+"a*[b]?\\:", base+"aX[b]?\\:"
	a := newStore(t, redis.Config{URL: url, Namespace: nsA})
	b := newStore(t, redis.Config{URL: url, Namespace: nsB})
	ctx := t.Context()
	if _, err := a.Put(ctx, "k", []byte("from a"), storage.NoVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "k", []byte("from b"), storage.NoVersion); err != nil {
		t.Fatalf("b cannot create its own key: %v", err)
	}
	for _, tc := range []struct {
		s    *redis.Store
		want string
	}{{a, "from a"}, {b, "from b"}} {
		it, err := tc.s.Get(ctx, "k")
		if err != nil || string(it.Value) != tc.want {
			t.Errorf("namespace %q: Get = %q, %v; want %q", tc.s.Namespace(), it.Value, err, tc.want)
		}
		keys, err := tc.s.List(ctx, "")
		if err != nil || len(keys) != 1 || keys[0] != "k" {
			t.Errorf("namespace %q: List = %q, %v; want [k]", tc.s.Namespace(), keys, err)
		}
	}
	// The key is really stored under the namespace.
	n, err := rawClient(t, url).Exists(ctx, nsA+"k").Result()
	if err != nil || n != 1 {
		t.Errorf("EXISTS %q = %d, %v; want 1", nsA+"k", n, err)
	}
}

func TestDefaultNamespace(t *testing.T) {
	s, err := redis.New(redis.Config{URL: "redis://127.0.0.1:1/0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Namespace() != redis.DefaultNamespace {
		t.Errorf("Namespace() = %q, want %q", s.Namespace(), redis.DefaultNamespace)
	}
}

func TestTTL(t *testing.T) {
	url := serverURL(t)
	ns := namespace(t)
	s := newStore(t, redis.Config{URL: url, Namespace: ns, TTL: redis.PrefixTTL(300*time.Millisecond, "threads/")})
	raw := rawClient(t, url)
	ctx := t.Context()
	thread := storage.ThreadKey("t1", "checkpoint")
	layer := storage.LayerKey("wm", "r1", "state")
	for _, k := range []string{thread, layer} {
		if _, err := s.Put(ctx, k, []byte("v"), storage.NoVersion); err != nil {
			t.Fatal(err)
		}
	}
	if d := raw.PTTL(ctx, ns+thread).Val(); d <= 0 || d > 300*time.Millisecond {
		t.Errorf("PTTL of the thread key = %v, want in (0, 300ms]", d)
	}
	if d := raw.PTTL(ctx, ns+layer).Val(); d != -1 {
		t.Errorf("PTTL of the layer key = %v, want -1 (no expiry)", d)
	}
	// A later write renews the expiry.
	time.Sleep(150 * time.Millisecond)
	if _, err := s.Put(ctx, thread, []byte("v2"), storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if d := raw.PTTL(ctx, ns+thread).Val(); d < 200*time.Millisecond {
		t.Errorf("PTTL after rewrite = %v, want renewed to about 300ms", d)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		_, err := s.Get(ctx, thread)
		if errors.Is(err, storage.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread key still there after its TTL: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := s.Get(ctx, layer); err != nil {
		t.Errorf("layer key without TTL: %v", err)
	}
}

func TestTTLRemovedWhenZero(t *testing.T) {
	url := serverURL(t)
	ns := namespace(t)
	ttl := time.Minute
	s := newStore(t, redis.Config{URL: url, Namespace: ns, TTL: func(string) time.Duration { return ttl }})
	raw := rawClient(t, url)
	ctx := t.Context()
	if _, err := s.Put(ctx, "k", []byte("v"), storage.NoVersion); err != nil {
		t.Fatal(err)
	}
	if d := raw.PTTL(ctx, ns+"k").Val(); d <= 0 {
		t.Fatalf("PTTL = %v, want positive", d)
	}
	ttl = 0
	if _, err := s.Put(ctx, "k", []byte("v"), storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if d := raw.PTTL(ctx, ns+"k").Val(); d != -1 {
		t.Errorf("PTTL after a write with no TTL = %v, want -1", d)
	}
}

func TestPrefixTTL(t *testing.T) {
	f := redis.PrefixTTL(time.Hour, "threads/", "layers/scratch/")
	tests := []struct {
		key  string
		want time.Duration
	}{
		{"threads/t1/checkpoint", time.Hour},
		{"layers/scratch/x/state", time.Hour},
		{"layers/wm/x/state", 0},
		{"thread", 0},
	}
	for _, tc := range tests {
		if got := f(tc.key); got != tc.want {
			t.Errorf("PrefixTTL(%q) = %v, want %v", tc.key, got, tc.want)
		}
	}
}

func TestBadURL(t *testing.T) {
	for _, u := range []string{"http://localhost:6379", "redis://localhost:6379/notadb", "redis://local host", "redis://:secret@[::1:6379"} {
		s, err := redis.New(redis.Config{URL: u})
		if err == nil {
			s.Close()
			t.Errorf("New(%q) succeeded", u)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("error leaks the password: %v", err)
		}
		t.Log(err)
	}
}

func TestClosed(t *testing.T) {
	s, err := redis.New(redis.Config{URL: "redis://127.0.0.1:1/0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := t.Context()
	if _, err := s.Get(ctx, "k"); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Get after Close: %v", err)
	}
	if _, err := s.Put(ctx, "k", nil, storage.AnyVersion); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Put after Close: %v", err)
	}
	if err := s.Delete(ctx, "k", storage.AnyVersion); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Delete after Close: %v", err)
	}
	if _, err := s.List(ctx, ""); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("List after Close: %v", err)
	}
}

// A caller's client closed under the Store: operations fail with an error
// that is storage.ErrClosed and names this package and the operation.
func TestClientClosedUnderStore(t *testing.T) {
	c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := redis.New(redis.Config{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Get(t.Context(), "k")
	if !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("Get on a closed client: %v, want storage.ErrClosed", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, `storage/redis: get "k": `) {
		t.Errorf("error %q does not name the package and the operation", msg)
	}
}

func TestSharedClientNotClosed(t *testing.T) {
	url := serverURL(t)
	c := rawClient(t, url)
	s := newStore(t, redis.Config{Client: c, URL: url})
	if err := s.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("the caller's client was closed by Store.Close: %v", err)
	}
}

func TestTwoStoresNoLostUpdate(t *testing.T) {
	url := serverURL(t)
	ns := namespace(t)
	a := newStore(t, redis.Config{URL: url, Namespace: ns})
	b := newStore(t, redis.Config{URL: url, Namespace: ns})
	ctx := t.Context()
	if _, err := a.Put(ctx, "counter", []byte("0"), storage.NoVersion); err != nil {
		t.Fatal(err)
	}
	const workers, each = 10, 20
	errc := make(chan error, workers)
	for i := range workers {
		s := a
		if i%2 == 1 {
			s = b
		}
		go func() { errc <- increments(ctx, s, "counter", each) }()
	}
	for range workers {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	it, err := b.Get(ctx, "counter")
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa(workers * each); string(it.Value) != want {
		t.Fatalf("counter = %s, want %s", it.Value, want)
	}
}

func increments(ctx context.Context, s storage.Store, key string, n int) error {
	for range n {
		for {
			it, err := s.Get(ctx, key)
			if err != nil {
				return err
			}
			c, err := strconv.Atoi(string(it.Value))
			if err != nil {
				return err
			}
			_, err = s.Put(ctx, key, []byte(strconv.Itoa(c+1)), it.Version)
			if err == nil {
				break
			}
			if !errors.Is(err, storage.ErrConflict) {
				return err
			}
		}
	}
	return nil
}

// ---- a private server, for fault tests ----

// server is a redis-server this test started on a free loopback port.
type server struct {
	t    *testing.T
	port string
	cmd  *exec.Cmd
}

// startServer launches redis-server, which must be installed; without it
// the test is skipped (failed in CI).
func startServer(t *testing.T) *server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		msg := "redis-server is not installed (apt-get install -y redis-server): fault tests need to start and stop their own server"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	s := &server{t: t, port: port}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *server) url() string { return "redis://127.0.0.1:" + s.port + "/0" }

func (s *server) start() {
	s.t.Helper()
	s.cmd = exec.Command("redis-server", "--port", s.port, "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--loglevel", "warning")
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+s.port, 100*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on port %s did not start: %v", s.port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *server) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}

func TestServerDownAndBack(t *testing.T) {
	srv := startServer(t)
	s, err := redis.New(redis.Config{URL: srv.url() + "?dial_timeout=200ms&max_retries=1"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	if _, err := s.Put(ctx, "k", []byte("before"), storage.NoVersion); err != nil {
		t.Fatal(err)
	}

	srv.stop()
	ops := map[string]func() error{
		"get":    func() error { _, err := s.Get(ctx, "k"); return err },
		"put":    func() error { _, err := s.Put(ctx, "k", []byte("x"), storage.AnyVersion); return err },
		"delete": func() error { return s.Delete(ctx, "k", storage.AnyVersion) },
		"list":   func() error { _, err := s.List(ctx, ""); return err },
		"ping":   func() error { return s.Ping(ctx) },
	}
	for name, op := range ops {
		start := time.Now()
		err := op()
		if !errors.Is(err, redis.ErrUnavailable) {
			t.Errorf("%s with the server down: %v, want redis.ErrUnavailable", name, err)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "storage/redis: ") || !strings.Contains(msg, ": "+name) {
			t.Errorf("%s error %q does not name the package and the operation", name, msg)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s took %v to fail", name, d)
		}
		t.Logf("%s: %v (after %v)", name, err, time.Since(start).Round(time.Millisecond))
	}

	// Back up (empty: this server keeps nothing on disk): the same Store
	// works again without being recreated.
	srv.start()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := s.Put(ctx, "k", []byte("after"), storage.NoVersion)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery after the server came back: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	it, err := s.Get(ctx, "k")
	if err != nil || string(it.Value) != "after" {
		t.Fatalf("Get after recovery = %q, %v", it.Value, err)
	}
}

func TestContextDeadlineWhileServerStalls(t *testing.T) {
	srv := startServer(t)
	s, err := redis.New(redis.Config{URL: srv.url()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	if _, err := s.Put(ctx, "k", []byte("v"), storage.NoVersion); err != nil {
		t.Fatal(err)
	}
	// Stall every client for a second: the server accepts commands but
	// does not answer.
	raw := rawClient(t, srv.url())
	if err := raw.Do(ctx, "CLIENT", "PAUSE", 1000, "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]func(context.Context) error{
		"get": func(ctx context.Context) error { _, err := s.Get(ctx, "k"); return err },
		"put": func(ctx context.Context) error {
			_, err := s.Put(ctx, "k", []byte("late"), storage.AnyVersion)
			return err
		},
	} {
		tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		start := time.Now()
		err := op(tctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s on a stalled server: %v, want context.DeadlineExceeded", name, err)
		}
		if d := time.Since(start); d > 600*time.Millisecond {
			t.Errorf("%s returned after %v, want about 100ms", name, d)
		}
		t.Logf("%s: %v", name, err)
	}
}

func TestUnavailableServerFailsFast(t *testing.T) {
	// Nothing listens on port 1.
	s, err := redis.New(redis.Config{URL: "redis://127.0.0.1:1/0?dial_timeout=100ms&max_retries=1"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Ping(t.Context())
	if !errors.Is(err, redis.ErrUnavailable) {
		t.Fatalf("Ping of a closed port: %v, want redis.ErrUnavailable", err)
	}
	t.Log(err)
}

// TestOperate09_WaitReplicas (issue 13): with Config.WaitReplicas, a
// write that not enough replicas acknowledged in time fails with
// redis.ErrNotReplicated (it is applied on the master: an unknown
// outcome, as the error says), a lost race is still ErrConflict, and a
// read never waits. The test server has no replica.
func TestOperate09_WaitReplicas(t *testing.T) {
	s := newStore(t, redis.Config{WaitReplicas: 1, WaitTimeout: 50 * time.Millisecond})
	ctx := t.Context()
	start := time.Now()
	_, err := s.Put(ctx, "k", []byte("v1"), storage.NoVersion)
	if !errors.Is(err, redis.ErrNotReplicated) {
		t.Fatalf("Put without a replica: %v, want redis.ErrNotReplicated", err)
	}
	if d := time.Since(start); d < 50*time.Millisecond || d > 2*time.Second {
		t.Errorf("Put returned after %v, want about the 50ms WaitTimeout", d)
	}
	if msg := err.Error(); !strings.Contains(msg, `put "k"`) || !strings.Contains(msg, "0 of 1 replicas") {
		t.Errorf("error %q does not name the operation and the count", msg)
	}
	it, err := s.Get(ctx, "k")
	if err != nil || string(it.Value) != "v1" {
		t.Fatalf("Get after the unreplicated Put = %q, %v; want the applied \"v1\"", it.Value, err)
	}
	if _, err := s.Put(ctx, "k", []byte("stale"), storage.NoVersion); !errors.Is(err, storage.ErrConflict) || errors.Is(err, redis.ErrNotReplicated) {
		t.Errorf("losing Put: %v, want storage.ErrConflict only", err)
	}
	if err := s.Delete(ctx, "k", it.Version+1); !errors.Is(err, storage.ErrConflict) {
		t.Errorf("stale Delete: %v, want storage.ErrConflict", err)
	}
	if err := s.Delete(ctx, "k", it.Version); !errors.Is(err, redis.ErrNotReplicated) {
		t.Errorf("Delete: %v, want redis.ErrNotReplicated", err)
	}
	if err := s.Delete(ctx, "gone", storage.AnyVersion); !errors.Is(err, redis.ErrNotReplicated) {
		t.Errorf("unconditional Delete: %v, want redis.ErrNotReplicated", err)
	}
	if _, err := s.Get(ctx, "k"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Get after the Delete: %v, want storage.ErrNotFound (applied)", err)
	}
	// Zero replicas to wait for is the default: no error.
	plain := newStore(t, redis.Config{})
	if _, err := plain.Put(ctx, "k", []byte("v"), storage.NoVersion); err != nil {
		t.Errorf("Put without WaitReplicas: %v", err)
	}
}
