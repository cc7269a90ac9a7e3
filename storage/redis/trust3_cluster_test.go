package redis_test

import (
	"net"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/redis"
	"github.com/memlayer/memlayer/storage/redis/redistest"
)

// TestTrust307_WaitReplicasFollowsRedirects (issue 23 item 7): with
// WaitReplicas, writes to a slot being migrated follow ASK to the
// importing master (a key already moved, a key not there yet), and MOVED
// once the slot has moved; each is acknowledged by the replica of the
// master that applied it. Before, an ASK was retried against the same
// master and surfaced as a raw "ASK ..." error.
func TestTrust307_WaitReplicasFollowsRedirects(t *testing.T) {
	needClusterTools(t)
	c, err := startCluster(3, 1)
	if err != nil {
		t.Fatalf("starting a Redis Cluster with replicas: %v", err)
	}
	defer c.Stop()
	ctx := t.Context()
	ns := namespace(t)
	s, err := redis.New(redis.Config{URL: c.URL(), Namespace: ns, WaitReplicas: 1, WaitTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	moved := storage.LayerKey("scratchpad", "mig", "state")
	fresh := storage.LayerKey("entities", "mig", "state") // the same slot: {mig}
	v, err := s.Put(ctx, moved, []byte("0"), storage.NoVersion)
	if err != nil {
		t.Fatal(err)
	}
	raw := rawCluster(t, c.URL())
	rkey := ns + "layers/scratchpad/{mig}/state"
	slot, err := raw.ClusterKeySlot(ctx, rkey).Result()
	if err != nil {
		t.Fatal(err)
	}
	src, dst := migrationEnds(t, c, slot)
	if err := redistest.StartMigration(t.Context(), slot, src, dst); err != nil {
		t.Fatal(err)
	}

	// A key not yet on the source: the source answers ASK.
	if _, err := s.Put(ctx, fresh, []byte("x"), storage.NoVersion); err != nil {
		t.Errorf("put of a new key during the migration: %v", err)
	}
	// A key moved to the target: ASK too.
	host, port, _ := net.SplitHostPort(dst)
	srcc := goredis.NewClient(&goredis.Options{Addr: src})
	defer srcc.Close()
	if err := srcc.Migrate(ctx, host, port, rkey, 0, 5*time.Second).Err(); err != nil {
		t.Fatalf("MIGRATE: %v", err)
	}
	if v, err = s.Put(ctx, moved, []byte("1"), v); err != nil {
		t.Errorf("put of a migrated key: %v", err)
	}
	if err := s.Delete(ctx, fresh, storage.AnyVersion); err != nil {
		t.Errorf("delete during the migration: %v", err)
	}
	// The slot now belongs to the target: MOVED.
	for _, n := range c.Nodes {
		cl := goredis.NewClient(&goredis.Options{Addr: n.Addr()})
		id, _ := redistest.NodeID(ctx, dst)
		_ = cl.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", id).Err() // replicas refuse: they follow their masters
		cl.Close()
	}
	if _, err := s.Put(ctx, moved, []byte("2"), v); err != nil {
		t.Errorf("put after the slot moved: %v", err)
	}
	it, err := s.Get(ctx, moved)
	if err != nil || string(it.Value) != "2" {
		t.Errorf("get = %q, %v; want 2", it.Value, err)
	}
}

// migrationEnds returns the master serving slot and another master.
func migrationEnds(t *testing.T, c *redistest.Cluster, slot int64) (src, dst string) {
	t.Helper()
	src, _, err := c.Shard(t.Context(), slot)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		cl := goredis.NewClient(&goredis.Options{Addr: n.Addr()})
		info, _ := cl.Info(t.Context(), "replication").Result()
		cl.Close()
		if n.Addr() != src && strings.Contains(info, "role:master") {
			return src, n.Addr()
		}
	}
	t.Fatalf("no master other than %s", src)
	return "", ""
}
