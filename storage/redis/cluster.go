package redis

import (
	"fmt"
	"slices"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// Cluster URL schemes: a URL with one of them selects Redis Cluster.
const (
	clusterScheme    = "redis+cluster://"
	clusterTLSScheme = "rediss+cluster://"
)

// parseClusterURL reads redis+cluster://[user:password@]host:port[,host:port...][/0][?options]
// (rediss+cluster:// for TLS) into go-redis's cluster options: the hosts
// are the seed nodes, the options those of go-redis's ParseClusterURL
// (which also takes more seeds as addr=host:port).
func parseClusterURL(u string) (*goredis.ClusterOptions, error) {
	scheme := "redis://"
	rest, ok := strings.CutPrefix(u, clusterScheme)
	if !ok {
		rest, _ = strings.CutPrefix(u, clusterTLSScheme)
		scheme = "rediss://"
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	user := ""
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		user, authority = authority[:at+1], authority[at+1:]
	}
	hosts := strings.Split(authority, ",")
	if slices.Contains(hosts, "") {
		return nil, fmt.Errorf("empty host in the node list %q", authority)
	}
	path, query, _ := strings.Cut(tail, "?")
	if !slices.Contains([]string{"", "/", "/0"}, path) {
		return nil, fmt.Errorf("database %q: Redis Cluster has only database 0", strings.TrimPrefix(path, "/"))
	}
	var extra []string
	for _, h := range hosts[1:] {
		extra = append(extra, "addr="+h)
	}
	if query != "" {
		extra = append([]string{query}, extra...)
	}
	plain := scheme + user + hosts[0]
	if len(extra) > 0 {
		plain += "?" + strings.Join(extra, "&")
	}
	return goredis.ParseClusterURL(plain)
}

// isClusterURL reports whether u selects Redis Cluster.
func isClusterURL(u string) bool {
	return strings.HasPrefix(u, clusterScheme) || strings.HasPrefix(u, clusterTLSScheme)
}

// On a cluster, the store key's grouping part (the thread ID of
// threads/{thread}/..., the scope key of layers/{layer}/{scope}/...) is
// wrapped in braces on the server, a hash tag: every key of one thread,
// and every layer's key of one scope (a resource, a thread), hashes to
// one slot. Escaped key parts never hold braces, and the mapping is
// reversible for any key (see tagKey and untagKey).

// tagSpan returns the grouping segment key[start:end] of a key in the
// layout of package storage: the part after "threads/", or the one after
// "layers/{layer}/", up to the next '/'. ok is false when the key has no
// such complete, non-empty segment followed by '/'; start is then where
// the segment would begin, or -1 when the key does not reach it.
func tagSpan(key string) (start, end int, ok bool) {
	switch {
	case strings.HasPrefix(key, "threads/"):
		start = len("threads/")
	case strings.HasPrefix(key, "layers/"):
		i := strings.IndexByte(key[len("layers/"):], '/')
		if i <= 0 {
			return -1, -1, false
		}
		start = len("layers/") + i + 1
	default:
		return -1, -1, false
	}
	i := strings.IndexByte(key[start:], '/')
	if i <= 0 {
		return start, -1, false
	}
	return start, start + i, true
}

// tagKey returns the server form of a store key on a cluster: its grouping
// segment in braces, or the key as is when it has none.
func tagKey(key string) string {
	start, end, ok := tagSpan(key)
	if !ok {
		return key
	}
	return key[:start] + "{" + key[start:end] + "}" + key[end:]
}

// untagKey reverses tagKey.
func untagKey(rkey string) string {
	start, end, ok := tagSpan(rkey)
	if !ok || end-start < 3 || rkey[start] != '{' || rkey[end-1] != '}' {
		return rkey
	}
	return rkey[:start] + rkey[start+1:end-1] + rkey[end:]
}

// tagPrefix returns the literal start shared by the server forms of every
// store key beginning with prefix: the tagged prefix when it holds a whole
// grouping segment, else the part of prefix before that segment.
func tagPrefix(prefix string) string {
	start, _, ok := tagSpan(prefix)
	if ok {
		return tagKey(prefix)
	}
	if start >= 0 && start < len(prefix) {
		return prefix[:start]
	}
	return prefix
}
