package redis_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/redis"
	"github.com/memlayer/memlayer/storage/redis/redistest"
	"github.com/memlayer/memlayer/storage/storagetest"
)

// ---- a Redis Cluster on loopback, started by the tests ----

// The cluster helpers live in package redistest, which the reliability
// suite imports too.
type (
	cluster     = redistest.Cluster
	clusterNode = redistest.Node
)

// clusterTools reports why the cluster tests cannot run here, or "".
var clusterTools = redistest.Tools

// startCluster starts a cluster (see redistest.Start).
func startCluster(masters, replicas int) (*cluster, error) { return redistest.Start(masters, replicas) }

// needClusterTools skips the test without redis-server and redis-cli (fails
// it in CI, which installs them).
func needClusterTools(t testing.TB) {
	t.Helper()
	if msg := clusterTools(); msg != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// The cluster shared by the tests that do not stop nodes: three masters,
// no replicas, started by the first test that needs it and stopped by
// TestMain.
var shared struct {
	once sync.Once
	c    *cluster
	err  error
}

// clusterURL returns the URL of the shared three-master cluster.
func clusterURL(t testing.TB) string {
	t.Helper()
	needClusterTools(t)
	shared.once.Do(func() {
		start := time.Now()
		shared.c, shared.err = startCluster(3, 0)
		if shared.err == nil {
			fmt.Fprintf(os.Stderr, "storage/redis: started a three-master Redis Cluster in %v\n", time.Since(start).Round(time.Millisecond))
		}
	})
	if shared.err != nil {
		t.Fatalf("starting a Redis Cluster: %v", shared.err)
	}
	return shared.c.URL()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.c != nil {
		shared.c.Stop()
	}
	os.Exit(code)
}

// rawCluster returns a go-redis cluster client on url, closed with the test.
func rawCluster(t testing.TB, url string) *goredis.ClusterClient {
	t.Helper()
	addrs := strings.Split(strings.TrimPrefix(url, "redis+cluster://"), ",")
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { c.Close() })
	return c
}

// cleanClusterNamespace deletes every key of namespace ns on every master.
func cleanClusterNamespace(t testing.TB, c *goredis.ClusterClient, ns string) {
	pattern := strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`).Replace(ns) + "*"
	err := c.ForEachMaster(context.Background(), func(ctx context.Context, n *goredis.Client) error {
		iter := n.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			if err := n.Del(ctx, iter.Val()).Err(); err != nil {
				return err
			}
		}
		return iter.Err()
	})
	if err != nil && !errors.Is(err, goredis.ErrClosed) {
		t.Errorf("cleaning namespace %q: %v", ns, err)
	}
}

// newClusterStore returns a Store on the shared cluster under a fresh
// namespace, whose keys are removed when the test ends.
func newClusterStore(t testing.TB, url, ns string) *redis.Store {
	t.Helper()
	s, err := redis.New(redis.Config{URL: url, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	raw := rawCluster(t, url)
	t.Cleanup(func() {
		cleanClusterNamespace(t, raw, ns)
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// TestOperate05_ClusterConformance (issue 13): the conformance suite on a
// real three-master Redis Cluster.
func TestOperate05_ClusterConformance(t *testing.T) {
	url := clusterURL(t)
	raw := rawCluster(t, url)
	storagetest.RunWith(t, func(t *testing.T) storage.Store {
		s := newClusterStore(t, url, namespace(t))
		if !s.Cluster() {
			t.Fatal("a redis+cluster:// URL gave a single-server store")
		}
		return s
	}, storagetest.Options{
		// Emptying the namespace on every master wipes everything the
		// store keeps (FLUSHALL would hit other tests' namespaces).
		Wipe: func(t *testing.T, s storage.Store) storage.Store {
			cleanClusterNamespace(t, raw, s.(*redis.Store).Namespace())
			return s
		},
	})
}

// TestOperate06_ClusterSlotsAndList (issue 13): a thread's keys and a
// scope's keys share one slot on the server (hash tags), keys of many
// threads spread over every master, and List walks every master and
// returns the same sorted, exact-prefix result as on one server.
func TestOperate06_ClusterSlotsAndList(t *testing.T) {
	url := clusterURL(t)
	ns := namespace(t)
	s := newClusterStore(t, url, ns)
	raw := rawCluster(t, url)
	ctx := t.Context()

	var want []string
	for i := range 30 {
		id := "t" + strconv.Itoa(i)
		for _, k := range []string{
			storage.ThreadKey(id, "checkpoint"),
			storage.ThreadKey(id, "messages/1"),
			storage.LayerKey("working-memory", id, "state"),
			storage.LayerKey("kv", id, "state"),
		} {
			if _, err := s.Put(ctx, k, []byte(k), storage.NoVersion); err != nil {
				t.Fatal(err)
			}
			want = append(want, k)
		}
	}
	for _, k := range []string{"a", "b/c", "threads/x"} { // keys without a grouping part
		if _, err := s.Put(ctx, k, []byte(k), storage.NoVersion); err != nil {
			t.Fatal(err)
		}
		want = append(want, k)
	}
	slices.Sort(want)

	// The server keys: the thread or scope ID in braces, one slot each.
	for _, id := range []string{"t0", "t7"} {
		var slots []int64
		for _, rk := range []string{
			ns + "threads/{" + id + "}/checkpoint", ns + "threads/{" + id + "}/" + storage.Escape("messages/1"),
			ns + "layers/working-memory/{" + id + "}/state", ns + "layers/kv/{" + id + "}/state",
		} {
			if n, err := raw.Exists(ctx, rk).Result(); err != nil || n != 1 {
				t.Errorf("server key %q: EXISTS = %d, %v; want 1", rk, n, err)
			}
			slot, err := raw.ClusterKeySlot(ctx, rk).Result()
			if err != nil {
				t.Fatal(err)
			}
			slots = append(slots, slot)
		}
		if len(slices.Compact(slices.Clone(slots))) != 1 {
			t.Errorf("thread %s: its keys sit in slots %v, want one", id, slots)
		}
	}

	// Every master holds some of the keys.
	var mu sync.Mutex
	perMaster := map[string]int{}
	err := raw.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
		keys, err := c.Keys(ctx, strings.ReplaceAll(ns, ":", `\:`)+"*").Result()
		mu.Lock()
		perMaster[c.Options().Addr] = len(keys)
		mu.Unlock()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for addr, n := range perMaster {
		if n == 0 {
			t.Errorf("master %s holds none of the %d keys: %v", addr, len(want), perMaster)
		}
	}
	if len(perMaster) != 3 {
		t.Errorf("%d masters, want 3: %v", len(perMaster), perMaster)
	}

	for _, prefix := range []string{"", "threads/", "threads/t1", "threads/t1/", "layers/kv/", "layers/kv/t2", "layers/working-memory/t29/", "b/", "nothing/"} {
		got, err := s.List(ctx, prefix)
		if err != nil {
			t.Fatalf("List(%q): %v", prefix, err)
		}
		var exp []string
		for _, k := range want {
			if strings.HasPrefix(k, prefix) {
				exp = append(exp, k)
			}
		}
		if !slices.Equal(got, exp) {
			t.Errorf("List(%q) = %q, want %q", prefix, got, exp)
		}
	}
}

// TestOperate07_ClusterNoLostUpdate (issue 13): the lost-update scenario,
// reduced in-package: two Stores (two processes' worth of pools) run
// read-modify-write increments with compare-and-swap on counters spread
// over every master; no increment is lost.
func TestOperate07_ClusterNoLostUpdate(t *testing.T) {
	url := clusterURL(t)
	ns := namespace(t)
	a := newClusterStore(t, url, ns)
	b := newClusterStore(t, url, ns)
	ctx := t.Context()
	const counters, workers, each = 6, 8, 15
	keys := make([]string, counters)
	for i := range keys {
		keys[i] = storage.LayerKey("scratchpad", "resource-"+strconv.Itoa(i), "state")
		if _, err := a.Put(ctx, keys[i], []byte("0"), storage.NoVersion); err != nil {
			t.Fatal(err)
		}
	}
	errc := make(chan error, workers*counters)
	for i := range workers * counters {
		s := a
		if i%2 == 1 {
			s = b
		}
		go func() { errc <- increments(ctx, s, keys[i%counters], each) }()
	}
	for range workers * counters {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keys {
		it, err := b.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if want := strconv.Itoa(workers * each); string(it.Value) != want {
			t.Errorf("%s = %s, want %s: updates were lost", k, it.Value, want)
		}
	}
}

// TestOperate08_ClusterFailover (issue 13): while writers run
// compare-and-swap increments on a key, the master serving its slot is
// killed and its replica promoted; then the killed node comes back as a
// replica. Every error the writers see meanwhile is clear
// (redis.ErrUnavailable, or redis.ErrNotReplicated with WaitReplicas),
// the same Store carries on once the replica serves the slot, and no
// acknowledged increment is lost: the final count is at least the
// acknowledged ones (and at most those plus the writes whose outcome was
// unknown). Without WaitReplicas that holds only as long as the master
// replicated before dying (see the package documentation); with
// WaitReplicas: 1 it holds by construction.
func TestOperate08_ClusterFailover(t *testing.T) {
	needClusterTools(t)
	started := time.Now()
	c, err := startCluster(3, 1)
	if err != nil {
		t.Fatalf("starting a Redis Cluster with replicas: %v", err)
	}
	defer c.Stop()
	t.Logf("three masters with a replica each started in %v", time.Since(started).Round(time.Millisecond))
	// go-redis reports each failed dial of the dead node itself: keep
	// them out of the test output, and count them.
	var goredisLog syncBuffer
	redis.SetLogger(slog.New(slog.NewTextHandler(&goredisLog, nil)))
	defer redis.SetLogger(nil)
	t.Run("async", func(t *testing.T) { failover(t, c, 0, &goredisLog) })
	t.Run("wait-replicas", func(t *testing.T) { failover(t, c, 1, &goredisLog) })
}

// failover runs the scenario of TestOperate08_ClusterFailover on c, with
// Config.WaitReplicas set to waitReplicas.
func failover(t *testing.T, c *cluster, waitReplicas int, goredisLog *syncBuffer) {
	ns := namespace(t)
	s, err := redis.New(redis.Config{
		URL:          c.URL() + "?dial_timeout=200ms&max_retries=1",
		Namespace:    ns,
		WaitReplicas: waitReplicas,
		WaitTimeout:  200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	key := storage.LayerKey("scratchpad", "victim-"+strconv.Itoa(waitReplicas), "state")
	if _, err := s.Put(ctx, key, []byte("0"), storage.NoVersion); err != nil {
		t.Fatal(err)
	}

	// The master serving the key's slot and its replica.
	raw := rawCluster(t, c.URL())
	slot, err := raw.ClusterKeySlot(ctx, ns+"layers/scratchpad/{victim-"+strconv.Itoa(waitReplicas)+"}/state").Result()
	if err != nil {
		t.Fatal(err)
	}
	shards, err := raw.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	var master, replica string
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if r.Start <= slot && slot <= r.End {
				for _, n := range sh.Nodes {
					addr := net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))
					if n.Role == "master" {
						master = addr
					} else {
						replica = addr
					}
				}
			}
		}
	}
	var victim *clusterNode
	for _, n := range c.Nodes {
		if n.Addr() == master {
			victim = n
		}
	}
	if victim == nil || replica == "" {
		t.Fatalf("slot %d: master %q, replica %q not found in %+v", slot, master, replica, shards)
	}

	var (
		mu                       sync.Mutex
		acked, unknown, errsSeen int
		unclear                  []error
		kinds                    = map[string]int{}
	)
	record := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errsSeen++
		if !errors.Is(err, redis.ErrUnavailable) && !(waitReplicas > 0 && errors.Is(err, redis.ErrNotReplicated)) {
			unclear = append(unclear, err)
		}
		msg := err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		kinds[msg]++
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				it, err := s.Get(ctx, key)
				if err != nil {
					record(err)
					time.Sleep(20 * time.Millisecond)
					continue
				}
				n, err := strconv.Atoi(string(it.Value))
				if err != nil {
					t.Errorf("stored value %q: %v", it.Value, err)
					return
				}
				_, err = s.Put(ctx, key, []byte(strconv.Itoa(n+1)), it.Version)
				switch {
				case err == nil:
					mu.Lock()
					acked++
					mu.Unlock()
				case errors.Is(err, storage.ErrConflict):
				default:
					mu.Lock()
					unknown++
					mu.Unlock()
					record(err)
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return acked }

	time.Sleep(300 * time.Millisecond)
	before := count()
	victim.Kill()
	killed := time.Now()
	promote := goredis.NewClient(&goredis.Options{Addr: replica})
	defer promote.Close()
	if err := promote.ClusterFailover(ctx).Err(); err != nil {
		// Without its master the replica takes over only when forced.
		if err := promote.Do(ctx, "CLUSTER", "FAILOVER", "FORCE").Err(); err != nil {
			t.Fatalf("CLUSTER FAILOVER FORCE on %s: %v", replica, err)
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		info, _ := promote.Info(ctx, "replication").Result()
		if strings.Contains(info, "role:master") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s not promoted after 15s:\n%s", replica, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
	promoted := time.Since(killed)
	progress := func(what string, min int, n func() int) {
		t.Helper()
		from := n()
		for n() < from+min {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d more, want %d", what, n()-from, min)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The same Store carries on while the killed node is still down: its
	// increments land again (without WaitReplicas), or are applied but
	// reported as not replicated, the new master having no replica.
	if waitReplicas == 0 {
		progress("increments acknowledged with the old master down", 20, count)
	} else {
		progress("writes of unknown outcome (not replicated, or the node unreachable) with the old master down", 3, func() int { mu.Lock(); defer mu.Unlock(); return unknown })
	}
	recovered := time.Since(killed)
	// The killed node comes back and becomes the new master's replica:
	// acknowledged increments flow in both modes.
	if err := c.Restart(victim); err != nil {
		t.Fatal(err)
	}
	back := goredis.NewClient(&goredis.Options{Addr: victim.Addr()})
	defer back.Close()
	for {
		info, _ := back.Info(ctx, "replication").Result()
		if strings.Contains(info, "master_link_status:up") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed node did not come back as a replica:\n%s", info)
		}
		time.Sleep(20 * time.Millisecond)
	}
	progress("increments acknowledged with the old master back as a replica", 20, count)
	close(stop)
	wg.Wait()

	it, err := s.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	final, _ := strconv.Atoi(string(it.Value))
	t.Logf("WaitReplicas %d: %d increments acknowledged (%d before the kill), %d of unknown outcome, final count %d; replica promoted %v after the kill, writes answered again after %v; errors: %v; go-redis logged %d lines so far",
		waitReplicas, acked, before, unknown, final, promoted.Round(time.Millisecond), recovered.Round(time.Millisecond), kinds,
		strings.Count(goredisLog.String(), "\n"))
	if final < acked {
		t.Errorf("final count %d < %d acknowledged increments: acknowledged writes were lost in the failover", final, acked)
	}
	if final > acked+unknown {
		t.Errorf("final count %d > %d acknowledged + %d unknown increments", final, acked, unknown)
	}
	for _, err := range unclear {
		t.Errorf("error during the failover is neither redis.ErrUnavailable nor (with WaitReplicas) redis.ErrNotReplicated: %v", err)
	}
}
