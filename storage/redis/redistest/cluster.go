// Package redistest starts Redis Clusters of redis-server processes on
// loopback for tests: the cluster tests of package redis and the
// reliability suite. It needs redis-server and redis-cli (7.0 or newer)
// on the PATH; [Tools] says why not when they are missing.
package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of redis-server processes started on free
// loopback ports, in a temporary directory.
type Cluster struct {
	dir string
	// Nodes are the cluster's servers, masters first as redis-cli
	// --cluster create assigned them.
	Nodes []*Node
}

// Node is one redis-server of a Cluster.
type Node struct {
	port, bus string
	cmd       *exec.Cmd
}

// Addr returns the node's host:port.
func (n *Node) Addr() string { return "127.0.0.1:" + n.port }

// URL returns the redis+cluster:// URL naming every node as a seed.
func (c *Cluster) URL() string {
	var addrs []string
	for _, n := range c.Nodes {
		addrs = append(addrs, n.Addr())
	}
	return "redis+cluster://" + strings.Join(addrs, ",")
}

// Tools reports why a cluster cannot be started here, or "".
var Tools = sync.OnceValue(func() string {
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			return bin + " is not installed (apt-get install -y redis-server redis-tools): the Redis Cluster tests start their own cluster"
		}
	}
	// "Redis server v=7.0.15 sha=...": cluster-port and CLUSTER SHARDS
	// came with 7.0.
	out, err := exec.Command("redis-server", "--version").Output()
	if err != nil {
		return "redis-server --version: " + err.Error()
	}
	_, v, _ := strings.Cut(string(out), " v=")
	if major, _, _ := strings.Cut(v, "."); major < "7" && len(major) == 1 {
		return "redis-server " + strings.TrimSpace(string(out)) + " is older than 7.0, which the Redis Cluster tests need (cluster-port, CLUSTER SHARDS)"
	}
	return ""
})

// freePort returns a loopback port nothing listens on now.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}

// Start starts masters+masters*replicas nodes and joins them with
// redis-cli --cluster create, each master with its replicas. The failure
// detection timeout is one second. Stop it with [Cluster.Stop].
func Start(masters, replicas int) (c *Cluster, err error) {
	dir, err := os.MkdirTemp("", "memlayer-cluster-")
	if err != nil {
		return nil, err
	}
	c = &Cluster{dir: dir}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	for range masters * (1 + replicas) {
		if err := c.launch(); err != nil {
			return c, err
		}
	}
	args := []string{"--cluster", "create"}
	for _, n := range c.Nodes {
		args = append(args, n.Addr())
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	// redis-cli waits for the nodes to agree without a limit of its own.
	cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(cctx, "redis-cli", args...).CombinedOutput(); err != nil {
		return c, fmt.Errorf("redis-cli --cluster create: %w\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, n := range c.Nodes {
		if err := n.waitReady(masters, replicas, deadline); err != nil {
			return c, err
		}
	}
	return c, nil
}

// launch adds a node on free ports to the cluster and starts it.
func (c *Cluster) launch() error {
	n := &Node{}
	var err error
	if n.port, err = freePort(); err != nil {
		return err
	}
	if n.bus, err = freePort(); err != nil {
		return err
	}
	c.Nodes = append(c.Nodes, n)
	return c.Restart(n)
}

// waitReady waits, until deadline, for the node to see every slot
// served by masters masters with replicas replicas each, all online,
// and, on a replica, to have synchronised with its master.
func (n *Node) waitReady(masters, replicas int, deadline time.Time) error {
	ctx := context.Background()
	cl := goredis.NewClient(&goredis.Options{Addr: n.Addr()})
	defer cl.Close()
	for {
		info, err1 := cl.ClusterInfo(ctx).Result()
		repl, err2 := cl.Info(ctx, "replication").Result()
		shards, err3 := cl.ClusterShards(ctx).Result()
		if err1 == nil && err2 == nil && err3 == nil && shardsReady(shards, masters, replicas) && strings.Contains(info, "cluster_state:ok") &&
			(strings.Contains(repl, "role:master") || strings.Contains(repl, "master_link_status:up")) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster node %s not ready: %v %v\n%s\n%s", n.Addr(), err1, err2, info, repl)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// shardsReady reports whether a node's view of the cluster has masters
// shards of 1+replicas online nodes each.
func shardsReady(shards []goredis.ClusterShard, masters, replicas int) bool {
	if len(shards) != masters {
		return false
	}
	for _, sh := range shards {
		if len(sh.Nodes) != 1+replicas {
			return false
		}
		for _, n := range sh.Nodes {
			if n.Health != "online" {
				return false
			}
		}
	}
	return true
}

// Restart launches the node's redis-server (again, after Kill) and waits
// until it accepts connections.
func (c *Cluster) Restart(n *Node) error {
	n.cmd = exec.Command("redis-server",
		"--port", n.port, "--cluster-port", n.bus, "--bind", "127.0.0.1",
		"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(c.dir, "nodes-"+n.port+".conf"),
		"--cluster-node-timeout", "1000", "--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0", "--repl-ping-replica-period", "1",
		"--dir", c.dir, "--loglevel", "warning")
	if err := n.cmd.Start(); err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", n.Addr(), 100*time.Millisecond)
		if err == nil {
			conn.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on port %s did not start: %w", n.port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// running reports whether the node's process was started and not
// killed.
func (n *Node) running() bool { return n.cmd != nil && n.cmd.Process != nil }

// Kill stops a node at once (SIGKILL), as a crash would.
func (n *Node) Kill() {
	if !n.running() {
		return
	}
	n.cmd.Process.Signal(syscall.SIGCONT) // a paused process dies too, but be sure
	n.cmd.Process.Kill()
	n.cmd.Wait()
	n.cmd = nil
}

// Pause stops the node's process (SIGSTOP): it keeps its connections but
// answers nothing, as a hung or partitioned server.
func (n *Node) Pause() error {
	if !n.running() {
		return errors.New("redistest: node not running")
	}
	return n.cmd.Process.Signal(syscall.SIGSTOP)
}

// Resume continues a paused node (SIGCONT).
func (n *Node) Resume() error {
	if !n.running() {
		return errors.New("redistest: node not running")
	}
	return n.cmd.Process.Signal(syscall.SIGCONT)
}

// Stop kills every node and removes the directory.
func (c *Cluster) Stop() {
	for _, n := range c.Nodes {
		n.Kill()
	}
	os.RemoveAll(c.dir)
}

// Node returns the node listening on addr (host:port), or nil.
func (c *Cluster) Node(addr string) *Node {
	for _, n := range c.Nodes {
		if n.Addr() == addr {
			return n
		}
	}
	return nil
}

// Shard returns the addresses of the master serving slot and of its
// replicas, as CLUSTER SHARDS on any node reports them.
func (c *Cluster) Shard(ctx context.Context, slot int64) (master string, replicas []string, err error) {
	var errs []error
	for _, n := range c.Nodes {
		cl := goredis.NewClient(&goredis.Options{Addr: n.Addr(), DialTimeout: 200 * time.Millisecond, ReadTimeout: time.Second})
		shards, err := cl.ClusterShards(ctx).Result()
		cl.Close()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, sh := range shards {
			for _, r := range sh.Slots {
				if r.Start > slot || slot > r.End {
					continue
				}
				for _, n := range sh.Nodes {
					addr := net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))
					if n.Role == "master" {
						master = addr
					} else {
						replicas = append(replicas, addr)
					}
				}
				return master, replicas, nil
			}
		}
		errs = append(errs, fmt.Errorf("%s: no shard serves slot %d", n.Addr(), slot))
	}
	return "", nil, errors.Join(errs...)
}

// NodeID returns the cluster node ID of the node at addr.
func NodeID(ctx context.Context, addr string) (string, error) {
	cl := goredis.NewClient(&goredis.Options{Addr: addr})
	defer cl.Close()
	return cl.ClusterMyID(ctx).Result()
}

// StartMigration opens the move of slot from the master at src to the
// master at dst, as redis-cli --cluster reshard does: dst IMPORTING, then
// src MIGRATING. Until the keys are moved (MIGRATE) and the slot is given
// to dst (SETSLOT NODE), src answers ASK for a key it no longer holds.
func StartMigration(ctx context.Context, slot int64, src, dst string) error {
	srcID, err := NodeID(ctx, src)
	if err != nil {
		return err
	}
	dstID, err := NodeID(ctx, dst)
	if err != nil {
		return err
	}
	d := goredis.NewClient(&goredis.Options{Addr: dst})
	defer d.Close()
	if err := d.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID).Err(); err != nil {
		return fmt.Errorf("%s: importing slot %d: %w", dst, slot, err)
	}
	s := goredis.NewClient(&goredis.Options{Addr: src})
	defer s.Close()
	if err := s.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID).Err(); err != nil {
		return fmt.Errorf("%s: migrating slot %d: %w", src, slot, err)
	}
	return nil
}
