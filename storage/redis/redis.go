package redis

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/memlayer/memlayer/storage"
)

// ErrUnavailable means the Redis server could not be reached or the
// connection broke: the server is down, restarting or unreachable, or, on
// a cluster, a slot's owner could not be reached while the layout changes
// (a MOVED or ASK reply left after go-redis's redirects). Check it with
// [errors.Is]. A read failed this way changed nothing; a write may
// or may not have been applied (see the package documentation).
var ErrUnavailable = errors.New("storage/redis: server unavailable")

// ErrNotReplicated means a write was applied on the master but fewer than
// [Config.WaitReplicas] replicas acknowledged it within
// [Config.WaitTimeout]: it stands unless the master fails before passing it
// on. Treat it as a write of unknown outcome: read again before retrying a
// conditional write, but do not take finding it as proof that it was kept
// (the read is served by the same master). It matches
// [storage.ErrNotDurable]. Check it with [errors.Is].
var ErrNotReplicated = fmt.Errorf("storage/redis: write not acknowledged by enough replicas: %w", storage.ErrNotDurable)

// DefaultWaitTimeout is the wait for replicas when [Config.WaitTimeout] is
// zero.
const DefaultWaitTimeout = time.Second

// DefaultURL is the server used when [Config.URL] is empty.
const DefaultURL = "redis://127.0.0.1:6379/0"

// DefaultNamespace is the key prefix used when [Config.Namespace] is empty.
const DefaultNamespace = "memlayer:"

// Config says which server to use and how to lay keys out on it. The zero
// Config is valid: [DefaultURL] and [DefaultNamespace], no expiry.
type Config struct {
	// URL locates the server: redis://[user:password@]host[:port][/db]
	// or rediss://... for TLS, with go-redis's query options
	// (dial_timeout, read_timeout, pool_size, max_retries, ...). "" means
	// [DefaultURL]. A Redis Cluster is named by
	// redis+cluster://[user:password@]host:port[,host:port...][?options]
	// (rediss+cluster:// for TLS): the hosts are seed nodes, any one of
	// them is enough, and the options are those of go-redis's
	// ParseClusterURL. Ignored when Client is set.
	URL string

	// Namespace is prepended to every key on the server, so several
	// applications or tenants can share one database. "" means
	// [DefaultNamespace]. Keys of one namespace are invisible to stores
	// of another, unless one namespace is a prefix of the other: use a
	// separator such as ':' at the end.
	Namespace string

	// TTL, when set, gives the time to live of a key (the store key as
	// passed to Put, without the namespace), evaluated on every Put: a
	// positive duration makes the key expire that long after its last
	// write; zero or negative keeps it forever. Use it to let thread-
	// and execution-scoped state disappear on its own, for example with
	// [PrefixTTL]. nil means no key expires.
	TTL func(key string) time.Duration

	// WaitReplicas, when positive, makes every write (Put, Delete) wait
	// until that many replicas of the key's master have acknowledged it
	// (Redis's WAIT, sent on the write's connection), so that a write
	// reported as done survives the failure of its master when one of
	// those replicas is promoted. Fewer acknowledgements within
	// WaitTimeout fail the write with [ErrNotReplicated]. Zero (the
	// default) does not wait: replication is asynchronous.
	WaitReplicas int

	// WaitTimeout bounds the wait of WaitReplicas. Zero means
	// [DefaultWaitTimeout]. Keep it below the client's read timeout
	// (read_timeout, 3s by default), which bounds the wait too.
	WaitTimeout time.Duration

	// Client, when set, is used instead of dialling URL: a
	// *goredis.Client for one server, or a *goredis.ClusterClient for
	// Redis Cluster (other kinds are refused). The Store does not close
	// it. Its ContextTimeoutEnabled option should be true so that context
	// deadlines bound network waits.
	Client goredis.UniversalClient
}

// PrefixTTL returns a [Config.TTL] that gives ttl to the keys starting
// with one of the prefixes and no expiry to the others, for example
// PrefixTTL(time.Hour, "threads/") to expire thread checkpoints an hour
// after their last write.
func PrefixTTL(ttl time.Duration, prefixes ...string) func(key string) time.Duration {
	prefixes = slices.Clone(prefixes)
	return func(key string) time.Duration {
		for _, p := range prefixes {
			if strings.HasPrefix(key, p) {
				return ttl
			}
		}
		return 0
	}
}

// Store is a [storage.Store] on a Redis server, shared by every process
// that opens the same server and namespace. It is safe for concurrent use.
// Create it with [New]; release it with [Store.Close].
type Store struct {
	client    goredis.UniversalClient
	cluster   *goredis.ClusterClient // client, on Redis Cluster; nil on one server
	ownClient bool
	ns        string
	ttl       func(string) time.Duration
	replicas  int           // Config.WaitReplicas
	waitFor   time.Duration // Config.WaitTimeout, defaulted
	writerID  string        // makes write tokens unique across Stores
	writes    atomic.Uint64 // and this across the writes of one Store
	resend    resendPolicy  // how Store.write sends a write again
	closed    atomic.Bool
	hooked    sync.Map    // node clients with waitHook (WaitReplicas on a cluster)
	hookedAll atomic.Bool // every node of the cluster's state has it
}

// New returns a Store for cfg. It parses the URL but does no I/O: the
// first operation connects (use [Store.Ping] to check the server at
// start-up). A malformed URL is an error.
func New(cfg Config) (*Store, error) {
	s := &Store{ns: cmp.Or(cfg.Namespace, DefaultNamespace), ttl: cfg.TTL, replicas: cfg.WaitReplicas, waitFor: cfg.WaitTimeout}
	if s.waitFor <= 0 {
		s.waitFor = DefaultWaitTimeout
	}
	if err := s.useClient(cfg); err != nil {
		return nil, err
	}
	if s.cluster != nil && s.replicas > 0 {
		s.cluster.OnNewNode(s.hookNode)
	}
	s.resend = policyOf(s.client)
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("storage/redis: writer id: %w", err)
	}
	s.writerID = hex.EncodeToString(id[:])
	return s, nil
}

// useClient sets the store's client: cfg.Client, or one of its own for
// cfg.URL.
func (s *Store) useClient(cfg Config) error {
	switch c := cfg.Client.(type) {
	case nil:
		return s.dial(cmp.Or(cfg.URL, DefaultURL))
	case *goredis.Client:
		if c == nil {
			return errors.New("storage/redis: Config.Client is a nil *redis.Client")
		}
		s.client = c
	case *goredis.ClusterClient:
		if c == nil {
			return errors.New("storage/redis: Config.Client is a nil *redis.ClusterClient")
		}
		s.client, s.cluster = c, c
	default:
		return fmt.Errorf("storage/redis: Config.Client is a %T; want a *redis.Client or a *redis.ClusterClient", c)
	}
	return nil
}

// dial makes the store's own client for URL u: a cluster client for a
// cluster URL. It does no I/O.
func (s *Store) dial(u string) error {
	s.ownClient = true
	if !isClusterURL(u) {
		opts, err := goredis.ParseURL(u)
		if err != nil {
			return badURL(u, err)
		}
		opts.ContextTimeoutEnabled = true
		s.client = goredis.NewClient(opts)
		return nil
	}
	opts, err := parseClusterURL(u)
	if err != nil {
		return badURL(u, err)
	}
	opts.ContextTimeoutEnabled = true
	s.cluster = goredis.NewClusterClient(opts)
	s.client = s.cluster
	s.hookedAll.Store(true) // every node comes through New's OnNewNode
	return nil
}

// badURL is the error of a URL that does not parse, without its
// password.
func badURL(u string, err error) error {
	return fmt.Errorf("storage/redis: bad URL %q: %w", redactURL(u), redactErr(err, u))
}

// userInfo returns the "user:password" part of a URL, or "".
func userInfo(u string) string {
	scheme := strings.Index(u, "://")
	if scheme < 0 {
		return ""
	}
	rest := u[scheme+3:]
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		rest = rest[:end]
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return ""
	}
	return rest[:at]
}

// redactURL hides the user information (password) of a URL for error
// messages.
func redactURL(u string) string {
	if ui := userInfo(u); ui != "" {
		return strings.Replace(u, ui+"@", "xxxxx@", 1)
	}
	return u
}

// redactErr removes the user information, which may hold a password, from
// a URL parse error.
func redactErr(err error, u string) error {
	ui := userInfo(u)
	if ui == "" {
		return err
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = redactURL(ue.URL)
	}
	if msg := err.Error(); strings.Contains(msg, ui) {
		return errors.New(strings.ReplaceAll(msg, ui, "xxxxx"))
	}
	return err
}

// Namespace returns the prefix of this store's keys on the server.
func (s *Store) Namespace() string { return s.ns }

// Cluster reports whether the store runs on Redis Cluster.
func (s *Store) Cluster() bool { return s.cluster != nil }

// rkey returns the server key of a store key: the namespace, then the key,
// hash-tagged on a cluster.
func (s *Store) rkey(key string) string {
	if s.cluster != nil {
		return s.ns + tagKey(key)
	}
	return s.ns + key
}

// Ping checks that the server answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.begin(ctx, "ping", "", false); err != nil {
		return err
	}
	if err := s.client.Ping(ctx).Err(); err != nil {
		return s.wrap(ctx, "ping", "", err)
	}
	return nil
}

// Each key is a hash: v holds the value, n the version, w the token of
// the write that set them. Versions go beyond 2^53, which Lua's numbers
// (doubles) cannot hold exactly, so the scripts compare them as decimal
// strings and let the server add one (HINCRBY, 64-bit integers) and
// return them as strings.

// putScript: KEYS[1] key; ARGV value, ifVersion, ttl in ms, write token,
// first version (for a key that does not exist). Returns the new version
// as a string, or {current version} ("0" when missing) on conflict.
//
// The key remembers the tokens of its last 16 writes with the version
// each one made (fields "w:<token>", listed in "wl"). A write whose reply
// was lost and that the Store sends again (see Store.write) finds its
// token and reports the version it made, even when other writes came
// after it: it was applied, and a conflict would say it was not. Once
// 16 other writes have pushed its token out, the reply is a conflict,
// which Put reports as an outcome unknown.
var putScript = newLua(`
local cur = redis.call('HGET', KEYS[1], 'n')
local want = ARGV[2]
local tok = 'w:' .. ARGV[4]
if want ~= '-1' and (cur or '0') ~= want then
	local mine = cur and redis.call('HGET', KEYS[1], tok)
	if mine then
		return mine
	end
	return {cur or '0'}
end
local nxt = ARGV[5]
if cur then
	redis.call('HINCRBY', KEYS[1], 'n', 1)
	redis.call('HSET', KEYS[1], 'v', ARGV[1])
	nxt = redis.call('HGET', KEYS[1], 'n')
else
	redis.call('HSET', KEYS[1], 'v', ARGV[1], 'n', nxt)
end
local toks = {}
for t in string.gmatch(redis.call('HGET', KEYS[1], 'wl') or '', '%S+') do
	toks[#toks + 1] = t
end
toks[#toks + 1] = ARGV[4]
while #toks > 16 do
	redis.call('HDEL', KEYS[1], 'w:' .. table.remove(toks, 1))
end
redis.call('HSET', KEYS[1], tok, nxt, 'wl', table.concat(toks, ' '))
local ttl = tonumber(ARGV[3])
if ttl > 0 then
	redis.call('PEXPIRE', KEYS[1], ttl)
else
	redis.call('PERSIST', KEYS[1])
end
return nxt
`)

// deleteScript: KEYS[1] key; ARGV[1] ifVersion (a specific version).
// Returns 1 when deleted, 0 when the key is missing, {current version} on
// conflict.
var deleteScript = newLua(`
local cur = redis.call('HGET', KEYS[1], 'n')
if not cur then
	return 0
end
if cur ~= ARGV[1] then
	return {cur}
end
redis.call('DEL', KEYS[1])
return 1
`)

// conflictVersion reads the {current version} reply of a script.
func conflictVersion(res any) (string, bool) {
	arr, ok := res.([]any)
	if !ok || len(arr) != 1 {
		return "", false
	}
	v, ok := arr[0].(string)
	return v, ok
}

func (s *Store) begin(ctx context.Context, op, key string, validate bool) error {
	if s.closed.Load() {
		return fmt.Errorf("storage/redis: %s %s: %w", op, storage.Quote(key), storage.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("storage/redis: %s %s: %w", op, storage.Quote(key), err)
	}
	if validate {
		if err := storage.ValidateKey(key); err != nil {
			return fmt.Errorf("storage/redis: %s: %w", op, err)
		}
	}
	return nil
}

// Get implements [storage.Store] with one HMGET.
func (s *Store) Get(ctx context.Context, key string) (storage.Item, error) {
	if err := s.begin(ctx, "get", key, true); err != nil {
		return storage.Item{}, err
	}
	vals, err := s.client.HMGet(ctx, s.rkey(key), "v", "n").Result()
	if err != nil {
		return storage.Item{}, s.wrap(ctx, "get", key, err)
	}
	it, ok, err := item(key, vals)
	if err == nil && !ok {
		err = storage.ErrNotFound
	}
	if err != nil {
		return storage.Item{}, fmt.Errorf("storage/redis: get %s: %w", storage.Quote(key), err)
	}
	return it, nil
}

// item decodes the answer vals of HMGET key v n: ok is false when the key
// is not stored.
func item(key string, vals []any) (storage.Item, bool, error) {
	if len(vals) != 2 {
		return storage.Item{}, false, fmt.Errorf("HMGET answered %d values, want 2", len(vals))
	}
	value, vok := vals[0].(string)
	ver, nok := vals[1].(string)
	if !vok || !nok {
		return storage.Item{}, false, nil
	}
	n, err := strconv.ParseInt(ver, 10, 64)
	if err != nil {
		return storage.Item{}, false, fmt.Errorf("stored version %q: %w", ver, err)
	}
	return storage.Item{Key: key, Value: []byte(value), Version: n}, true, nil
}

// Put implements [storage.Store]: the version check, the write and the
// expiry run in one Lua script, atomically on the server.
func (s *Store) Put(ctx context.Context, key string, value []byte, ifVersion int64) (int64, error) {
	if err := s.begin(ctx, "put", key, true); err != nil {
		return 0, err
	}
	if ifVersion < storage.AnyVersion {
		return 0, fmt.Errorf("storage/redis: put %s: invalid version %d: %w", storage.Quote(key), ifVersion, storage.ErrConflict)
	}
	ttl := s.expiry(key)
	token := s.writerID + "-" + strconv.FormatUint(s.writes.Add(1), 36)
	if value == nil {
		value = []byte{}
	}
	keys := []string{s.rkey(key)}
	first := storage.FirstVersion()
	res, acked, resent, err := s.write(ctx, command{script: putScript, keys: keys, args: []any{value, ifVersion, ttl, token, first}})
	if err != nil {
		return 0, s.wrap(ctx, "put", key, err)
	}
	if cur, ok := conflictVersion(res); ok {
		if resent {
			return 0, s.unknownOutcome("put", key, "at version "+cur)
		}
		return 0, fmt.Errorf("storage/redis: put %s: have version %s, want %d: %w", storage.Quote(key), cur, ifVersion, storage.ErrConflict)
	}
	str, _ := res.(string)
	v, err := strconv.ParseInt(str, 10, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("storage/redis: put %s: unexpected reply %v", storage.Quote(key), res)
	}
	if err := s.replicated("put", key, acked); err != nil {
		return 0, err
	}
	return v, nil
}

// Delete implements [storage.Store]. A conditional delete runs as one Lua
// script.
func (s *Store) Delete(ctx context.Context, key string, ifVersion int64) error {
	if err := s.begin(ctx, "delete", key, true); err != nil {
		return err
	}
	keys := []string{s.rkey(key)}
	w := command{script: deleteScript, keys: keys, args: []any{ifVersion}}
	if ifVersion == storage.AnyVersion {
		w = command{args: []any{"DEL", keys[0]}}
	}
	res, acked, resent, err := s.write(ctx, w)
	if err != nil {
		return s.wrap(ctx, "delete", key, err)
	}
	if cur, ok := conflictVersion(res); ok {
		if resent {
			return s.unknownOutcome("delete", key, "at version "+cur)
		}
		return fmt.Errorf("storage/redis: delete %s: have version %s, want %d: %w", storage.Quote(key), cur, ifVersion, storage.ErrConflict)
	}
	switch {
	case ifVersion == storage.AnyVersion || res == int64(1):
		return s.replicated("delete", key, acked)
	case res == int64(0) && resent:
		return s.unknownOutcome("delete", key, "missing")
	case res == int64(0):
		return fmt.Errorf("storage/redis: delete %s: %w", storage.Quote(key), storage.ErrNotFound)
	}
	return fmt.Errorf("storage/redis: delete %s: unexpected reply %v", storage.Quote(key), res)
}

// expiry returns the time to live of key in milliseconds (at least 1),
// or 0 when it does not expire.
func (s *Store) expiry(key string) int64 {
	if s.ttl == nil {
		return 0
	}
	if d := s.ttl(key); d > 0 {
		return max(d.Milliseconds(), 1)
	}
	return 0
}

// runner is what a write is sent through: the client, or a pipeline on
// one connection of the key's master.
type runner interface {
	Process(ctx context.Context, cmd goredis.Cmder) error
}

// writeOnce sends w once and returns its reply. Without WaitReplicas it goes through the client (a script by
// EVALSHA, loaded on first use), and acked is -1. With it, the write is
// followed by a WAIT on the same connection (WAIT counts the replicas
// that have the writes of its own connection), and acked is WAIT's
// answer: on one server, the two go down one connection in a pipeline;
// on a cluster, the write goes through the cluster client's pipeline,
// which follows MOVED and ASK as go-redis does for every command, and a
// hook on each node's client (waitHook) adds the WAIT after it on the
// connection that carries it, wherever it is redirected.
//
// The error is the command's own: write decides what it means.
func (s *Store) writeOnce(ctx context.Context, w command) (res any, acked int64, err error) {
	if s.replicas <= 0 {
		res, err = w.send(ctx, s.client, false).Result()
		return res, -1, err
	}
	if s.cluster != nil {
		return s.clusterWrite(ctx, w)
	}
	node := s.client.(*goredis.Client)
	var cmd once
	var wait *goredis.Cmd
	_, _ = node.Pipelined(ctx, func(p goredis.Pipeliner) error {
		cmd = w.send(ctx, p, true)
		wait = p.Do(ctx, "WAIT", s.replicas, s.waitFor.Milliseconds())
		return nil
	})
	if err := cmd.Err(); err != nil {
		return nil, 0, err
	}
	n, _ := wait.Int64() // a failed WAIT counts no replica
	return cmd.Val(), n, nil
}

// mayHaveApplied reports whether a write that failed with err may have
// been applied: anything but a reply of the server (an error reply,
// LOADING, CLUSTERDOWN or MOVED included, applied nothing) or a failed
// dial (nothing was sent).
func mayHaveApplied(err error) bool {
	var re goredis.Error
	var op *net.OpError
	return !errors.As(err, &re) && !(errors.As(err, &op) && op.Op == "dial")
}

// waitKey is the context key of a waited-for write in flight on a
// cluster (see clusterWrite).
type waitKey struct{}

// waited is a write in flight, for waitHook: the command, and the WAIT
// sent after it in the batch that applied it (nil until one did).
type waited struct {
	s    *Store
	cmd  goredis.Cmder
	mu   sync.Mutex
	wait *goredis.IntCmd
}

// waitHook is the hook clusterWrite installs on each node client of the
// cluster: in a pipeline carrying a waited-for write of its Store, it
// appends a WAIT, which thus goes down the write's connection.
type waitHook struct{ s *Store }

func (waitHook) DialHook(next goredis.DialHook) goredis.DialHook          { return next }
func (waitHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook { return next }

func (h waitHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		w, ok := ctx.Value(waitKey{}).(*waited)
		if !ok || w.s != h.s || !slices.Contains(cmds, w.cmd) {
			return next(ctx, cmds)
		}
		wait := goredis.NewIntCmd(ctx, "wait", w.s.replicas, w.s.waitFor.Milliseconds())
		err := next(ctx, append(slices.Clip(cmds), wait))
		w.mu.Lock()
		w.wait = nil // the WAIT of the batch that applied the write, if this one did
		if w.cmd.Err() == nil {
			w.wait = wait
		}
		w.mu.Unlock()
		return err
	}
}

// hookNode installs waitHook on a node client of the cluster, once.
func (s *Store) hookNode(c *goredis.Client) {
	if _, done := s.hooked.LoadOrStore(c, struct{}{}); !done {
		c.AddHook(waitHook{s})
	}
}

// clusterWrite is write on a cluster with WaitReplicas (see write).
func (s *Store) clusterWrite(ctx context.Context, w command) (any, int64, error) {
	if !s.hookedAll.Load() {
		// The nodes of a client given in Config.Client may predate the
		// Store's OnNewNode hook.
		if err := s.cluster.ForEachShard(ctx, func(_ context.Context, c *goredis.Client) error {
			s.hookNode(c)
			return nil
		}); err != nil {
			return nil, 0, err
		}
		s.hookedAll.Store(true)
	}
	wt := &waited{s: s}
	var cmd once
	_, _ = s.cluster.Pipelined(context.WithValue(ctx, waitKey{}, wt), func(p goredis.Pipeliner) error {
		cmd = w.send(ctx, p, true)
		wt.cmd = cmd
		return nil
	})
	if err := cmd.Err(); err != nil {
		return nil, 0, err
	}
	wt.mu.Lock()
	wait := wt.wait
	wt.mu.Unlock()
	if wait == nil {
		// Applied without a WAIT (a node without the hook): no replica
		// is known to have it.
		return cmd.Val(), 0, nil
	}
	n, _ := wait.Result() // a failed WAIT counts no replica
	return cmd.Val(), n, nil
}

// replicated checks WAIT's count of acknowledging replicas (-1: not asked).
func (s *Store) replicated(op, key string, acked int64) error {
	if acked < 0 || acked >= int64(s.replicas) {
		return nil
	}
	return fmt.Errorf("%w: %s %s: applied on the master, acknowledged by %d of %d replicas within %v",
		ErrNotReplicated, op, storage.Quote(key), acked, s.replicas, s.waitFor)
}

// scanCount is the COUNT hint of each SCAN call.
const scanCount = 1000

// List implements [storage.Store] with SCAN (never KEYS, which blocks the
// server), on every master of a cluster: it matches the namespaced prefix
// as a glob with every metacharacter escaped, checks each key with
// strings.HasPrefix, drops the duplicates SCAN may return and sorts. SCAN
// is not a snapshot: a key present for the whole scan is listed; one
// created or deleted during it may or may not be.
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	if err := s.begin(ctx, "list", prefix, false); err != nil {
		return nil, err
	}
	lit := prefix
	if s.cluster != nil {
		lit = tagPrefix(prefix)
	}
	l := &lister{s: s, prefix: prefix, match: globEscape(s.ns+lit) + "*", seen: map[string]struct{}{}}
	var err error
	if s.cluster != nil {
		err = s.cluster.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error { return l.scan(ctx, c) })
	} else {
		err = l.scan(ctx, s.client)
	}
	if err != nil {
		return nil, s.wrap(ctx, "list", prefix, err)
	}
	out := slices.AppendSeq(make([]string, 0, len(l.seen)), maps.Keys(l.seen))
	slices.Sort(out)
	return out, nil
}

// lister gathers the keys of one List, from one server or from every
// master of a cluster at once.
type lister struct {
	s      *Store
	prefix string
	match  string // the SCAN pattern
	mu     sync.Mutex
	seen   map[string]struct{}
}

// scan runs SCAN to its end on one server and adds the keys it returns.
func (l *lister) scan(ctx context.Context, c goredis.Cmdable) error {
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, l.match, scanCount).Result()
		if err != nil {
			return err
		}
		l.add(keys)
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// add adds the store keys of the server keys that have the prefix.
func (l *lister) add(keys []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		if k, ok := l.s.storeKey(k); ok && strings.HasPrefix(k, l.prefix) {
			l.seen[k] = struct{}{}
		}
	}
}

// storeKey returns the store key a server key holds, and false for a
// key of another namespace or of the search index.
func (s *Store) storeKey(k string) (string, bool) {
	rest, ok := strings.CutPrefix(k, s.ns)
	if !ok || strings.IndexByte(k, 0) >= 0 {
		return "", false
	}
	if s.cluster != nil {
		rest = untagKey(rest)
	}
	return rest, true
}

// globEscape quotes the characters Redis's glob matcher treats specially,
// so that the pattern matches s literally.
func globEscape(s string) string {
	if !strings.ContainsAny(s, `*?[]\`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) * 2)
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Close closes the connection pool (unless [Config.Client] was given).
// Operations after Close fail with [storage.ErrClosed]; a second Close
// does nothing.
func (s *Store) Close() error {
	if s.closed.Swap(true) || !s.ownClient {
		return nil
	}
	if err := s.client.Close(); err != nil {
		return fmt.Errorf("storage/redis: close: %w", err)
	}
	return nil
}

// wrap names the operation and adds ctx's error when ctx ended, and
// [ErrUnavailable] when the server could not be reached.
func (s *Store) wrap(ctx context.Context, op, key string, err error) error {
	where := op
	if op != "ping" {
		where += " " + storage.Quote(key)
	}
	switch {
	case ctx.Err() != nil && !errors.Is(err, ctx.Err()):
		// "storage/redis: get "k": context deadline exceeded: i/o timeout"
		return fmt.Errorf("storage/redis: %s: %w: %w", where, ctx.Err(), err)
	case s.closed.Load() || errors.Is(err, goredis.ErrClosed):
		// "storage/redis: get "k": storage: store closed: redis: client is closed"
		return fmt.Errorf("storage/redis: %s: %w: %w", where, storage.ErrClosed, err)
	case unavailable(err) || s.cluster != nil && redirect(err):
		if s.cluster != nil {
			// A failover may have given the slot to another node: go-redis
			// learns the new layout only from a MOVED reply, which a dead
			// node never sends, or after a minute, so ask the cluster now
			// (in the background; at most every 200ms).
			s.cluster.ReloadState(ctx)
		}
		// "storage/redis: server unavailable: get "k": dial tcp ...: connection refused"
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, where, err)
	}
	return fmt.Errorf("storage/redis: %s: %w", where, err)
}

// redirect reports whether err is a MOVED or ASK reply that go-redis
// still had after following its redirects (MaxRedirects): the cluster's
// layout is changing, as during a failover, and the slot's owner cannot
// be reached yet. The write was not applied.
func redirect(err error) bool {
	var re goredis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	return strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK ")
}

// unavailable reports whether err is a network failure rather than an
// answer from the server.
func unavailable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) ||
		slices.ContainsFunc(networkErrors, func(target error) bool { return errors.Is(err, target) }) ||
		slices.ContainsFunc(unavailableReplies, func(r string) bool { return strings.Contains(err.Error(), r) })
}

// networkErrors are the errors of a connection that failed.
var networkErrors = []error{io.EOF, io.ErrUnexpectedEOF, syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.EPIPE}

// unavailableReplies are in the replies of a server that cannot answer
// yet: one loading its data, or a cluster that is down.
var unavailableReplies = []string{"LOADING", "CLUSTERDOWN"}

// Interface guards.
var (
	_ storage.Store = (*Store)(nil)
	_ io.Closer     = (*Store)(nil)
)
