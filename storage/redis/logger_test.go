package redis_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/memlayer/memlayer/storage/redis"
)

// syncBuffer is a bytes.Buffer safe for the pool's background goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestOperate02_GoRedisLoggerToSlog (issue 13): with redis.SetLogger, the
// dial failures go-redis reports itself reach the caller's slog.Logger as
// warnings tagged component=go-redis, instead of standard error.
func TestOperate02_GoRedisLoggerToSlog(t *testing.T) {
	var buf syncBuffer
	redis.SetLogger(slog.New(slog.NewJSONHandler(&buf, nil)))
	// go-redis has one logger per process: leave a slog one behind (the
	// default logger), never the caller's buffer.
	t.Cleanup(func() { redis.SetLogger(nil) })

	// Nothing listens on port 1.
	s, err := redis.New(redis.Config{URL: "redis://127.0.0.1:1/0?dial_timeout=100ms&max_retries=1"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Ping(t.Context()); err == nil {
		t.Fatal("Ping of a closed port succeeded")
	}
	out := buf.String()
	var line string
	for l := range strings.Lines(out) {
		if strings.Contains(l, "failed to dial") {
			line = l
			break
		}
	}
	if line == "" {
		t.Fatalf("no dial failure reached the slog.Logger; it logged:\n%s", out)
	}
	for _, want := range []string{`"level":"WARN"`, `"component":"go-redis"`, `"msg":"connection pool: failed to dial`} {
		if !strings.Contains(line, want) {
			t.Errorf("record %s lacks %s", strings.TrimSpace(line), want)
		}
	}
}
