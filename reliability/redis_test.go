package reliability

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/redis"
)

func init() {
	openers["redis"] = func(ctx context.Context, s storeSpec) (storage.Store, func() error, error) {
		st, err := redis.New(redis.Config{URL: s.URL, Namespace: s.Namespace})
		if err != nil {
			return nil, nil, err
		}
		return st, st.Close, nil
	}
	redisSpec = sharedRedisSpec
	stopSharedRedis = func() {
		if shared.server != nil {
			shared.server.stop()
		}
	}
}

// shared is the Redis server of the suite: MEMLAYER_REDIS_URL, or one
// started on a free port for the package's tests.
var shared struct {
	once   sync.Once
	url    string
	server *redisServer
	err    error
}

// sharedRedisSpec returns a fresh namespace on the suite's Redis server.
// Without MEMLAYER_REDIS_URL and without a redis-server binary the Redis
// runs are skipped (the test logs why), except in CI, where it fails.
func sharedRedisSpec(t *testing.T) (storeSpec, bool) {
	t.Helper()
	shared.once.Do(func() {
		if u := os.Getenv("MEMLAYER_REDIS_URL"); u != "" {
			shared.url = u
			return
		}
		bin, err := exec.LookPath("redis-server")
		if err != nil {
			shared.err = fmt.Errorf("MEMLAYER_REDIS_URL is not set and redis-server is not on PATH (apt-get install redis-server)")
			return
		}
		shared.server, shared.err = startRedis(bin, os.TempDir(), false)
		if shared.err == nil {
			shared.url = shared.server.url
		}
	})
	if shared.err != nil {
		if inCI() {
			t.Fatalf("redis: %v", shared.err)
		}
		t.Logf("redis: skipped: %v", shared.err)
		return storeSpec{}, false
	}
	ns := fmt.Sprintf("memlayer-reliability:%s:%d:", t.Name(), time.Now().UnixNano())
	return storeSpec{Backend: "redis", URL: shared.url, Namespace: ns}, true
}

// redisServer is a redis-server process this suite started.
type redisServer struct {
	bin, dir string
	port     int
	persist  bool
	url      string
	cmd      *exec.Cmd
	done     chan struct{}
}

// startRedis starts redis-server on a free loopback port, its files in
// dir. With persist, it appends every write to an AOF file and fsyncs it
// before answering (appendfsync always), so an acknowledged write
// survives a SIGKILL of the server; without, it keeps nothing on disk.
func startRedis(bin, dir string, persist bool) (*redisServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &redisServer{bin: bin, dir: dir, port: port, persist: persist, url: fmt.Sprintf("redis://127.0.0.1:%d/0", port)}
	return s, s.start()
}

func (s *redisServer) start() error {
	args := []string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir, "--save", ""}
	if s.persist {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	cmd := exec.Command(s.bin, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.port), 100*time.Millisecond)
		if err == nil {
			_, err = c.Write([]byte("PING\r\n"))
			buf := make([]byte, 7)
			if err == nil {
				_ = c.SetReadDeadline(time.Now().Add(time.Second))
				_, err = c.Read(buf)
			}
			c.Close()
			if err == nil && string(buf) == "+PONG\r\n" {
				return nil
			}
		}
		select {
		case <-s.done:
			return fmt.Errorf("redis-server exited at start:\n%s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			s.stop()
			return fmt.Errorf("redis-server did not answer on port %d", s.port)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop kills the server (SIGKILL: no shutdown save) and waits for it.
func (s *redisServer) stop() {
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}
