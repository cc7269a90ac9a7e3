package redis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/memlayer/memlayer/storage"
)

func TestURLOptions(t *testing.T) {
	tests := []struct {
		url      string
		addr     string
		db       int
		tls      bool
		user     string
		password string
	}{
		{"", "127.0.0.1:6379", 0, false, "", ""},
		{"redis://cache.internal:6380/2", "cache.internal:6380", 2, false, "", ""},
		{"rediss://:s3cret@cache.internal/1", "cache.internal:6379", 1, true, "", "s3cret"},
		{"rediss://app:pw@10.0.0.1:7000", "10.0.0.1:7000", 0, true, "app", "pw"},
		{"redis://localhost?db=3&dial_timeout=2s", "localhost:6379", 3, false, "", ""},
	}
	for _, tc := range tests {
		s, err := New(Config{URL: tc.url})
		if err != nil {
			t.Errorf("New(%q): %v", tc.url, err)
			continue
		}
		o := s.client.(*goredis.Client).Options()
		if o.Addr != tc.addr || o.DB != tc.db || (o.TLSConfig != nil) != tc.tls || o.Username != tc.user || o.Password != tc.password {
			t.Errorf("New(%q): addr %q db %d tls %v user %q password %q; want %q %d %v %q %q",
				tc.url, o.Addr, o.DB, o.TLSConfig != nil, o.Username, o.Password, tc.addr, tc.db, tc.tls, tc.user, tc.password)
		}
		if !o.ContextTimeoutEnabled {
			t.Errorf("New(%q): ContextTimeoutEnabled is off; context deadlines would not bound network waits", tc.url)
		}
		s.Close()
	}
}

func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"redis://localhost:6379/0", "redis://localhost:6379/0"},
		{"redis://:pw@host/0", "redis://xxxxx@host/0"},
		{"rediss://user:p@ss@host:1/0?x=a@b", "rediss://xxxxx@host:1/0?x=a@b"},
		{"no scheme", "no scheme"},
	}
	for _, tc := range tests {
		if got := redactURL(tc.in); got != tc.want {
			t.Errorf("redactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestGlobEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"layers/wm/t1/", "layers/wm/t1/"},
		{"a*b", `a\*b`},
		{"a?b", `a\?b`},
		{"[x]", `\[x\]`},
		{`back\slash`, `back\\slash`},
		{"%_^-", "%_^-"},
	}
	for _, tc := range tests {
		if got := globEscape(tc.in); got != tc.want {
			t.Errorf("globEscape(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestRetriedPutIsIdempotent replays a conditional write with the same
// token, as go-redis does when the reply to the first attempt is lost: the
// replay must report the write as done, not conflict with itself, and must
// not write twice.
func TestRetriedPutIsIdempotent(t *testing.T) {
	run, _ := putRunner(t, "idem")
	ifVersion := storage.NoVersion
	for _, name := range []string{"create", "update"} {
		first := run(ifVersion, "token-"+name)
		again := run(ifVersion, "token-"+name)
		v, ok := first.(string)
		if !ok || again != first {
			t.Errorf("%s: first run = %v, replay = %v; want the same new version twice", name, first, again)
		}
		// Another writer with the same stale version still conflicts.
		if other := run(ifVersion, "someone-else"); !isConflict(other) {
			t.Errorf("%s: a different writer with a stale version got %v, want a conflict", name, other)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("%s: version %q: %v", name, v, err)
		}
		ifVersion = n
	}
}

// TestTrust23_ReplayAfterAnotherWriteIsNotAConflict: a write whose reply
// was lost is sent again by go-redis after another writer has written the
// key. It was applied, so the replay reports the version it made, not a
// conflict that would tell its caller it was not (a failover test saw
// one more increment stored than were acknowledged). Tokens older than
// the last 16 writes are forgotten.
func TestTrust23_ReplayAfterAnotherWriteIsNotAConflict(t *testing.T) {
	run, fields := putRunner(t, "replay")
	version := func(res any) int64 {
		t.Helper()
		v, err := strconv.ParseInt(fmt.Sprint(res), 10, 64)
		if err != nil || isConflict(res) {
			t.Fatalf("reply %v, want a version", res)
		}
		return v
	}
	v0 := version(run(storage.NoVersion, "create"))
	mine := run(v0, "mine")
	v1 := version(mine)
	v2 := version(run(v1, "theirs"))
	if again := run(v0, "mine"); again != mine {
		t.Errorf("replay after another write = %v, want %v (the version it made)", again, mine)
	}
	// After 16 more writes the token is forgotten: a replay is a conflict.
	v := v2
	for i := range 16 {
		v = version(run(v, fmt.Sprintf("w%d", i)))
	}
	if again := run(v0, "mine"); !isConflict(again) {
		t.Errorf("replay after 17 writes = %v, want a conflict", again)
	}
	if n := fields(); n > 2+1+16 {
		t.Errorf("the key holds %d fields, want at most 19 (value, version, token list, 16 tokens)", n)
	}
}

// putRunner returns a function that runs putScript on one key of a
// fresh namespace of the test server, with the given version and write
// token, and returns its reply, and a function that counts the key's hash
// fields. Without a server the test is skipped (failed in CI).
func putRunner(t *testing.T, name string) (run func(ifVersion int64, token string) any, fields func() int64) {
	t.Helper()
	url := os.Getenv("MEMLAYER_REDIS_URL")
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("MEMLAYER_REDIS_URL is not set")
		}
		t.Skip("MEMLAYER_REDIS_URL is not set")
	}
	s, err := New(Config{URL: url, Namespace: "memlayer-test:" + name + ":" + time.Now().Format("150405.000000") + ":"})
	if err != nil {
		t.Fatal(err)
	}
	key := []string{s.ns + "k"}
	t.Cleanup(func() {
		s.client.Del(context.Background(), key[0])
		s.Close()
	})
	run = func(ifVersion int64, token string) any {
		t.Helper()
		res, err := putScript.Run(t.Context(), s.client, key, "v", ifVersion, 0, token, storage.FirstVersion()).Result()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	fields = func() int64 {
		n, err := s.client.HLen(t.Context(), key[0]).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	return run, fields
}

func isConflict(res any) bool {
	_, ok := conflictVersion(res)
	return ok
}

// TestVersionsBeyondLuaNumbers writes versions above 2^53, which Lua's
// doubles cannot tell apart from their neighbours: the scripts must
// compare and increment them exactly.
func TestVersionsBeyondLuaNumbers(t *testing.T) {
	url := os.Getenv("MEMLAYER_REDIS_URL")
	if url == "" {
		t.Skip("MEMLAYER_REDIS_URL is not set")
	}
	s, err := New(Config{URL: url, Namespace: "memlayer-test:big:" + time.Now().Format("150405.000000") + ":"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	key := s.ns + "k"
	defer s.client.Del(ctx, key)
	const big = int64(1)<<62 + 1 // 2^62+1 and 2^62 are the same double
	if err := s.client.HSet(ctx, key, "v", "x", "n", strconv.FormatInt(big, 10), "w", "").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "k", []byte("y"), big-1); !errors.Is(err, storage.ErrConflict) {
		t.Errorf("Put with version %d (stored %d): error = %v, want a conflict", big-1, big, err)
	}
	if err := s.Delete(ctx, "k", big-1); !errors.Is(err, storage.ErrConflict) {
		t.Errorf("Delete with version %d (stored %d): error = %v, want a conflict", big-1, big, err)
	}
	v, err := s.Put(ctx, "k", []byte("y"), big)
	if err != nil || v != big+1 {
		t.Fatalf("Put with the stored version = %d, %v; want %d", v, err, big+1)
	}
	it, err := s.Get(ctx, "k")
	if err != nil || it.Version != big+1 || string(it.Value) != "y" {
		t.Errorf("Get = %q v%d, %v; want \"y\" v%d", it.Value, it.Version, err, big+1)
	}
}

// FuzzGlobEscape reads the escaped pattern back the way Redis's matcher
// does: every metacharacter must be quoted, and the literal text must be
// the input.
func FuzzGlobEscape(f *testing.F) {
	for _, s := range []string{"", "layers/wm/t/", "*", "a?b", "[x]", `\`, `\*`, "日本*", "%_"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := globEscape(s)
		var lit []byte
		for i := 0; i < len(p); i++ {
			switch p[i] {
			case '\\':
				if i+1 == len(p) {
					t.Fatalf("globEscape(%q) = %q ends in a lone backslash", s, p)
				}
				i++
				lit = append(lit, p[i])
			case '*', '?', '[', ']':
				t.Fatalf("globEscape(%q) = %q leaves %q unquoted at %d", s, p, p[i], i)
			default:
				lit = append(lit, p[i])
			}
		}
		if string(lit) != s {
			t.Fatalf("globEscape(%q) = %q reads back as %q", s, p, lit)
		}
	})
}

// replyErr is an error reply of the server, as go-redis returns one.
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

// TestRedirectLeftAfterRedirectsIsUnavailable: a MOVED or ASK reply that
// go-redis still holds after following its redirects (a failover moving
// the slot while the layout it knows is stale) is ErrUnavailable on a
// cluster, never a raw "MOVED …" error (TestOperate08 saw one surface
// under WaitReplicas); any other reply stays what it is.
func TestRedirectLeftAfterRedirectsIsUnavailable(t *testing.T) {
	cluster := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, MaxRetries: -1})
	defer cluster.Close()
	s := &Store{client: cluster, cluster: cluster}
	for _, reply := range []string{"MOVED 2110 127.0.0.1:34105", "ASK 13513 127.0.0.1:44683"} {
		err := s.wrap(t.Context(), "put", "k", fmt.Errorf("wrapped: %w", replyErr(reply)))
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("wrap(%q) = %v, want ErrUnavailable", reply, err)
		}
	}
	if err := s.wrap(t.Context(), "put", "k", replyErr("ERR wrong number of arguments")); errors.Is(err, ErrUnavailable) {
		t.Errorf("an ordinary error reply became %v", err)
	}
	one := &Store{client: goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"})}
	defer one.client.(*goredis.Client).Close()
	if err := one.wrap(t.Context(), "put", "k", replyErr("MOVED 1 127.0.0.1:2")); errors.Is(err, ErrUnavailable) {
		t.Errorf("on one server a MOVED reply became %v", err)
	}
}
