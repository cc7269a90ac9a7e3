package workingmemory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/memlayer/memlayer/layer"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/redis"
)

// notReplicated is a store whose next Put is applied (on the "master")
// and then fails as Redis's WaitReplicas does when no replica
// acknowledged it. failover then puts back what the replica holds: the
// key as it was before that write.
type notReplicated struct {
	storage.Store
	armed  bool
	before []byte
	key    string
}

func (s *notReplicated) Put(ctx context.Context, key string, v []byte, ver int64) (int64, error) {
	if !s.armed {
		return s.Store.Put(ctx, key, v, ver)
	}
	s.armed = false
	it, err := s.Store.Get(ctx, key)
	if err != nil {
		return 0, err
	}
	s.key, s.before = key, it.Value
	if _, err := s.Store.Put(ctx, key, v, ver); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%w: put %q: applied on the master, acknowledged by 0 of 1 replicas", redis.ErrNotReplicated, key)
}

// failover makes the replica, without the last write, the master.
func (s *notReplicated) failover(ctx context.Context) error {
	_, err := s.Store.Put(ctx, s.key, s.before, storage.AnyVersion)
	return err
}

// TestTrust306_NotReplicatedIsNeverReportedApplied (issue 23 item 6): a
// write the store applied on the master but could not make durable
// (redis.ErrNotReplicated) is not reported applied, through Update and
// through the update tool, although reading it back finds it: the master
// may die and its replica, without the write, take over.
func TestTrust306_NotReplicatedIsNeverReportedApplied(t *testing.T) {
	ctx := t.Context()
	for _, via := range []string{"Update", "tool"} {
		t.Run(via, func(t *testing.T) {
			st := &notReplicated{Store: storage.NewMemoryStore()}
			l := initLayer(t, Config{Spec: layer.Spec{Scope: "resource"}}, testEnv(st))
			if err := l.Update(ctx, json.RawMessage(`{"plan":"a"}`)); err != nil {
				t.Fatal(err)
			}
			st.armed = true
			var err error
			var out string
			if via == "Update" {
				err = l.Update(ctx, json.RawMessage(`{"plan":"b"}`))
			} else {
				out, err = l.Functions()[0].Call(ctx, json.RawMessage(`{"plan":"b"}`))
			}
			if err == nil || !errors.Is(err, ErrMaybeApplied) || !errors.Is(err, redis.ErrNotReplicated) {
				t.Fatalf("%s = %q, %v; want an error matching ErrMaybeApplied and redis.ErrNotReplicated", via, out, err)
			}
			if !strings.Contains(err.Error(), "may have been applied") {
				t.Errorf("error %q does not say the outcome is unknown", err)
			}
			// The master dies; the replica, without the write, serves the key.
			if err := st.failover(ctx); err != nil {
				t.Fatal(err)
			}
			// The layer's next update builds on what the store holds.
			if err := l.Update(ctx, json.RawMessage(`{"step":2}`)); err != nil {
				t.Fatal(err)
			}
			assertState(t, l, `{"plan":"a","step":2}`)
		})
	}
}
