package redis

import (
	"crypto/tls"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/memlayer/memlayer/storage"
)

// TestOperate03_ClusterURL (issue 13): a redis+cluster:// URL selects a
// cluster client with every listed seed node and go-redis's options; a
// plain redis:// URL keeps the single-server client.
func TestOperate03_ClusterURL(t *testing.T) {
	tests := []struct {
		url      string
		addrs    []string
		tls      bool
		user, pw string
		dial     time.Duration // go-redis's default is 5s
	}{
		{"redis+cluster://127.0.0.1:7000", []string{"127.0.0.1:7000"}, false, "", "", 5 * time.Second},
		{"redis+cluster://a:7000,b:7001,c:7002/", []string{"a:7000", "b:7001", "c:7002"}, false, "", "", 5 * time.Second},
		{"rediss+cluster://app:s3cret@a:7000,b:7001/0?dial_timeout=2s", []string{"a:7000", "b:7001"}, true, "app", "s3cret", 2 * time.Second},
		{"redis+cluster://a:7000?addr=b:7001&max_retries=2", []string{"a:7000", "b:7001"}, false, "", "", 5 * time.Second},
	}
	for _, tc := range tests {
		s, err := New(Config{URL: tc.url})
		if err != nil {
			t.Errorf("New(%q): %v", tc.url, err)
			continue
		}
		if !s.Cluster() {
			t.Errorf("New(%q): not a cluster store", tc.url)
			s.Close()
			continue
		}
		o := s.cluster.Options()
		if strings.Join(o.Addrs, " ") != strings.Join(tc.addrs, " ") || (o.TLSConfig != nil) != tc.tls ||
			o.Username != tc.user || o.Password != tc.pw || o.DialTimeout != tc.dial {
			t.Errorf("New(%q): addrs %q tls %v user %q password %q dial %v; want %q %v %q %q %v",
				tc.url, o.Addrs, o.TLSConfig != nil, o.Username, o.Password, o.DialTimeout, tc.addrs, tc.tls, tc.user, tc.pw, tc.dial)
		}
		if !o.ContextTimeoutEnabled {
			t.Errorf("New(%q): ContextTimeoutEnabled is off", tc.url)
		}
		s.Close()
	}
	for _, u := range []string{
		"redis+cluster://a:7000/1",                  // a cluster has database 0 only
		"redis+cluster://a:7000,,b:7001",            // empty host
		"redis+cluster://:pw@a:7000?nonsense=1",     // unknown option, password hidden
		"rediss+cluster://u:pw@a:7000?addr=nope:x:", // bad extra address
	} {
		s, err := New(Config{URL: u})
		if err == nil {
			s.Close()
			t.Errorf("New(%q) succeeded", u)
			continue
		}
		if strings.Contains(err.Error(), "pw") {
			t.Errorf("New(%q): error leaks the password: %v", u, err)
		}
		t.Log(err)
	}
	s, err := New(Config{URL: "redis://127.0.0.1:6379/0"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Cluster() {
		t.Error("redis:// URL gave a cluster store")
	}
	s.Close()
	// A caller's cluster client selects cluster mode; a Ring does not fit.
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, TLSConfig: &tls.Config{}})
	defer cc.Close()
	if s, err := New(Config{Client: cc}); err != nil || !s.Cluster() {
		t.Errorf("New with a *ClusterClient: cluster %v, %v", err == nil && s.Cluster(), err)
	}
	ring := goredis.NewRing(&goredis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	if _, err := New(Config{Client: ring}); err == nil {
		t.Error("New with a *Ring succeeded")
	}
	for _, c := range []goredis.UniversalClient{(*goredis.Client)(nil), (*goredis.ClusterClient)(nil)} {
		if _, err := New(Config{Client: c}); err == nil {
			t.Errorf("New with a nil %T succeeded", c)
		}
	}
}

// hashTag is the part of a server key Redis Cluster hashes: the text
// between the first '{' and the next '}' when not empty, else the key.
func hashTag(k string) string {
	if i := strings.IndexByte(k, '{'); i >= 0 {
		if j := strings.IndexByte(k[i+1:], '}'); j > 0 {
			return k[i+1 : i+1+j]
		}
	}
	return k
}

// TestOperate04_ClusterKeyTags (issue 13): on a cluster, every key of one
// thread and every layer's key of one scope (a resource or a thread)
// carries the same hash tag, so they share a slot; other threads and
// scopes get other tags, whatever their IDs hold.
func TestOperate04_ClusterKeyTags(t *testing.T) {
	for _, id := range []string{"t1", "user-42", "{x}", "a/b", "日本", "__global__"} {
		keys := []string{
			storage.ThreadKey(id, "checkpoint"),
			storage.ThreadKey(id, "messages/0001"),
			storage.LayerKey("working-memory", id, "state"),
			storage.LayerKey("kv", id, "state"),
			storage.LayerKey("entities", id, "quarantine/17"),
		}
		want := hashTag(tagKey(keys[0]))
		if want != storage.Escape(id) {
			t.Errorf("thread %q: tag %q, want the escaped ID %q", id, want, storage.Escape(id))
		}
		for _, k := range keys {
			rk := tagKey(k)
			if got := hashTag(rk); got != want {
				t.Errorf("key %q (server %q) has tag %q, want %q", k, rk, got, want)
			}
			if back := untagKey(rk); back != k {
				t.Errorf("untagKey(%q) = %q, want %q", rk, back, k)
			}
		}
	}
	if a, b := hashTag(tagKey(storage.ThreadKey("t1", "c"))), hashTag(tagKey(storage.ThreadKey("t2", "c"))); a == b {
		t.Errorf("threads t1 and t2 share the tag %q", a)
	}
	for _, k := range []string{"a", "threads/x", "threads//x", "layers/wm/", "layers//x/y", "b/c"} {
		if got := tagKey(k); got != k {
			t.Errorf("tagKey(%q) = %q, want it unchanged (no grouping segment)", k, got)
		}
	}
}

// FuzzClusterKey: the server form of a key on a cluster reads back as the
// key, two keys never share a server form, and the literal List scans for
// a prefix starts the server form of every key with that prefix.
func FuzzClusterKey(f *testing.F) {
	for _, s := range [][2]string{
		{"threads/t1/checkpoint", "threads/t1/"},
		{"threads/{x}/y", "threads/{"},
		{"layers/wm/r1/state", "layers/wm/r"},
		{"layers/wm/r1/state", "layers/"},
		{"threads/t1/c", "threads/t1/c"},
		{"a", ""},
		{"layers/wm/{r}/s", "layers/wm/{r}/"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, key, prefix string) {
		rk := tagKey(key)
		if back := untagKey(rk); back != key {
			t.Fatalf("untagKey(tagKey(%q)) = %q", key, back)
		}
		if rp := tagKey(prefix); prefix != key && rp == rk {
			t.Fatalf("tagKey(%q) = tagKey(%q) = %q", prefix, key, rk)
		}
		if strings.HasPrefix(key, prefix) && !strings.HasPrefix(rk, tagPrefix(prefix)) {
			t.Fatalf("key %q starts with %q, but its server form %q does not start with the scanned %q", key, prefix, rk, tagPrefix(prefix))
		}
	})
}
