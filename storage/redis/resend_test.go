package redis_test

import (
	"bytes"
	"cmp"
	"errors"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync"
	"testing"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/redis"
)

// TestTrust35_ResentWriteIsNeverAConflict: a conditional write is applied
// but its reply is lost (the connection breaks). The Store sends it again
// with the same token. When the key still remembers the token, the write
// is reported done, once; when other writers have pushed the token out,
// it is reported as of unknown outcome (redis.ErrUnavailable), never as
// storage.ErrConflict, which would tell its caller that it was not
// applied. (A cluster failover test once stored one more increment than
// were acknowledged: go-redis had sent an applied write again, by
// itself, after 16 other writes.)
func TestTrust35_ResentWriteIsNeverAConflict(t *testing.T) {
	direct := serverURL(t)
	p := newBreaker(t, direct)
	ns := namespace(t)
	s := newStore(t, redis.Config{URL: p.url(), Namespace: ns})
	other := newStore(t, redis.Config{URL: direct, Namespace: ns})
	ctx := t.Context()

	t.Run("put, token remembered", func(t *testing.T) {
		v0, err := s.Put(ctx, "k1", []byte("0"), storage.NoVersion)
		if err != nil {
			t.Fatal(err)
		}
		p.cutNextWrite(false)
		v1, err := s.Put(ctx, "k1", []byte("1"), v0)
		if err != nil {
			t.Fatalf("a write whose reply was lost, sent again: %v; want it done", err)
		}
		if p.cuts() != 1 {
			t.Fatalf("the proxy cut %d replies, want 1: the test did not lose a reply", p.cuts())
		}
		it, err := other.Get(ctx, "k1")
		if err != nil {
			t.Fatal(err)
		}
		if string(it.Value) != "1" || it.Version != v1 || v1 != v0+1 {
			t.Errorf("after the resent write: value %q version %d (Put said %d, was %d); want \"1\" at %d, applied once", it.Value, it.Version, v1, v0, v0+1)
		}
	})

	t.Run("put, token pushed out", func(t *testing.T) {
		v0, err := s.Put(ctx, "k2", []byte("mine-0"), storage.NoVersion)
		if err != nil {
			t.Fatal(err)
		}
		p.cutNextWrite(true)
		done := make(chan error, 1)
		go func() {
			_, err := s.Put(ctx, "k2", []byte("mine-1"), v0)
			done <- err
		}()
		p.waitHeld(t)
		// The first send was applied: 17 writes of another writer push
		// its token out before it is sent again.
		v := v0 + 1
		for i := range 17 {
			if v, err = other.Put(ctx, "k2", []byte("theirs-"+strconv.Itoa(i)), v); err != nil {
				t.Fatal(err)
			}
		}
		p.release()
		err = <-done
		if errors.Is(err, storage.ErrConflict) || !errors.Is(err, redis.ErrUnavailable) {
			t.Fatalf("a write applied, then sent again after 17 other writes: %v; want redis.ErrUnavailable (outcome unknown), not storage.ErrConflict", err)
		}
		it, err := other.Get(ctx, "k2")
		if err != nil {
			t.Fatal(err)
		}
		if string(it.Value) != "theirs-16" || it.Version != v {
			t.Errorf("the key holds %q at %d, want the last write \"theirs-16\" at %d", it.Value, it.Version, v)
		}
	})

	t.Run("conditional delete", func(t *testing.T) {
		// A first conditional delete loads the script, so that the cut
		// send below is the one that deletes (not a NOSCRIPT).
		var first int64
		for _, k := range []string{"k3-first", "k3"} {
			v, err := s.Put(ctx, k, []byte("x"), storage.NoVersion)
			if err != nil {
				t.Fatal(err)
			}
			first = cmp.Or(first, v)
		}
		if err := s.Delete(ctx, "k3-first", first+1); !errors.Is(err, storage.ErrConflict) {
			t.Fatalf("a delete at a wrong version: %v, want storage.ErrConflict", err)
		}
		it, err := s.Get(ctx, "k3")
		if err != nil {
			t.Fatal(err)
		}
		v0 := it.Version
		p.cutNextWrite(false)
		err = s.Delete(ctx, "k3", v0)
		if errors.Is(err, storage.ErrNotFound) || !errors.Is(err, redis.ErrUnavailable) {
			t.Fatalf("a delete applied, then sent again: %v; want redis.ErrUnavailable (outcome unknown), not storage.ErrNotFound", err)
		}
		if _, err := other.Get(ctx, "k3"); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("the deleted key: %v, want storage.ErrNotFound", err)
		}
	})

	t.Run("error reply to the resend", func(t *testing.T) {
		// The server answers the resend with an error: that says nothing
		// of the first send, which was applied.
		v0, err := s.Put(ctx, "k4", []byte("0"), storage.NoVersion)
		if err != nil {
			t.Fatal(err)
		}
		p.cutNextWrite(false)
		p.failWriteAfterCut()
		_, err = s.Put(ctx, "k4", []byte("1"), v0)
		if !errors.Is(err, redis.ErrUnavailable) {
			t.Fatalf("a write applied, then answered by an error when sent again: %v; want redis.ErrUnavailable (outcome unknown)", err)
		}
		if it, err := other.Get(ctx, "k4"); err != nil || string(it.Value) != "1" {
			t.Errorf("the key: %q, %v; want the first send's \"1\"", it.Value, err)
		}
	})

	t.Run("no cut", func(t *testing.T) {
		// Without a lost reply a stale version is a plain conflict.
		if _, err := s.Put(ctx, "k1", []byte("stale"), 1); !errors.Is(err, storage.ErrConflict) {
			t.Errorf("a stale write: %v, want storage.ErrConflict", err)
		}
	})
}

// breaker is a TCP proxy to a Redis server that can lose the reply to a
// write (EVAL or EVALSHA): it passes the write on, drops the reply and
// closes the connection, and can hold the next write until released.
type breaker struct {
	ln       net.Listener
	upstream string
	mu       sync.Mutex
	cut      bool          // lose the reply to the next write
	hold     bool          // and hold the write after it
	fail     bool          // or answer the write after it with an error
	held     chan struct{} // closed when the held write arrives
	released chan struct{} // closed by release
	n        int           // replies lost
}

func newBreaker(t *testing.T, serverURL string) *breaker {
	t.Helper()
	u, err := url.Parse(serverURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &breaker{ln: ln, upstream: u.Host}
	t.Cleanup(func() { ln.Close() })
	go b.serve()
	return b
}

func (b *breaker) url() string { return "redis://" + b.ln.Addr().String() + "/0" }

func (b *breaker) cutNextWrite(hold bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cut, b.hold = true, hold
	b.held, b.released = make(chan struct{}), make(chan struct{})
}

func (b *breaker) failWriteAfterCut() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fail = true
}

func (b *breaker) cuts() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

func (b *breaker) waitHeld(t *testing.T) {
	t.Helper()
	select {
	case <-b.held:
	case <-t.Context().Done():
		t.Fatal("the write was not sent again")
	}
}

func (b *breaker) release() { close(b.released) }

func (b *breaker) serve() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		go b.pipe(c)
	}
}

// pipe carries one client connection.
func (b *breaker) pipe(c net.Conn) {
	s, err := net.Dial("tcp", b.upstream)
	if err != nil {
		c.Close()
		return
	}
	var doomed sync.Once
	doom := make(chan struct{})
	go func() {
		// Replies: dropped, with both ends closed, once doomed.
		buf := make([]byte, 64<<10)
		for {
			n, err := s.Read(buf)
			select {
			case <-doom:
				c.Close()
				s.Close()
				return
			default:
			}
			if n > 0 {
				if _, werr := c.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				c.Close()
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if isWrite(buf[:n]) {
				b.mu.Lock()
				cut, hold, fail, held, released := b.cut, b.hold, b.fail, b.held, b.released
				switch {
				case cut:
					b.cut = false
					b.n++
					doomed.Do(func() { close(doom) })
				case hold:
					b.hold = false
				case fail:
					b.fail = false
				}
				b.mu.Unlock()
				if !cut && fail {
					if _, err := c.Write([]byte("-ERR injected failure\r\n")); err != nil {
						c.Close()
						s.Close()
						return
					}
					continue
				}
				if !cut && hold {
					close(held)
					<-released
				}
			}
			if _, werr := s.Write(buf[:n]); werr != nil {
				c.Close()
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				c.Close()
			}
			s.Close()
			return
		}
	}
}

// isWrite reports whether a chunk the client sent holds an EVAL or
// EVALSHA (go-redis sends command names in lower case).
func isWrite(chunk []byte) bool {
	return bytes.Contains(chunk, []byte("\r\nevalsha\r\n")) || bytes.Contains(chunk, []byte("\r\neval\r\n"))
}
