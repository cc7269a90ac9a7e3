package reliability

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/postgres"
	"github.com/memlayer/memlayer/storage/postgres/pgtest"
)

func init() {
	openers["postgres"] = func(ctx context.Context, s storeSpec) (storage.Store, func() error, error) {
		st, err := postgres.Open(ctx, postgres.Config{URL: s.URL, Schema: s.Namespace})
		if err != nil {
			return nil, nil, err
		}
		return st, st.Close, nil
	}
	postgresSpec = sharedPostgresSpec
	stopSharedPostgres = func() {
		if sharedPG.server != nil {
			sharedPG.server.Stop()
		}
	}
}

// sharedPG is the PostgreSQL server of the suite: MEMLAYER_POSTGRES_URL,
// or a throwaway cluster started for the package's tests.
var sharedPG struct {
	once   sync.Once
	url    string
	server *pgtest.Server
	err    error
	n      atomic.Int64
}

// sharedPostgresSpec returns a fresh schema on the suite's server.
// Without MEMLAYER_POSTGRES_URL and without initdb the PostgreSQL runs
// are skipped (the test logs why), except in CI, where it fails.
func sharedPostgresSpec(t testing.TB) (storeSpec, bool) {
	t.Helper()
	sharedPG.once.Do(func() {
		if u := os.Getenv(pgtest.EnvURL); u != "" {
			sharedPG.url = u
			return
		}
		sharedPG.server, sharedPG.err = pgtest.Start()
		if sharedPG.err == nil {
			sharedPG.url = sharedPG.server.URL()
		}
	})
	if sharedPG.err != nil {
		if inCI() {
			t.Fatalf("postgres: %v", sharedPG.err)
		}
		t.Logf("postgres: skipped: %v", sharedPG.err)
		return storeSpec{}, false
	}
	schema := fmt.Sprintf("rel_%d_%d", time.Now().UnixNano(), sharedPG.n.Add(1))
	return storeSpec{Backend: "postgres", URL: sharedPG.url, Namespace: schema}, true
}

// killOutcome is what one trial of TestPostgresServerKill saw.
type killOutcome struct {
	acked, failed, unknown int // writes reported applied, not applied, outcome unknown
	lostAcked, failedFound int // acknowledged writes missing; writes reported failed yet stored
	partial                int // batches of which some keys are stored and some not
}

// TestPostgresServerKill kills a private PostgreSQL server with SIGKILL
// (the postmaster and every backend at once) while writers create keys,
// restarts it, and checks each write against what the store reported:
//
//   - every acknowledged write is stored with its value (0 lost);
//   - every write reported failed without storage.ErrNotDurable is
//     absent (failures are truthful);
//   - writes reported as of unknown outcome (postgres.ErrOutcomeUnknown)
//     may be either, and are counted.
//
// Its negative control runs the same trials with synchronous_commit=off,
// where the server acknowledges a commit before its log is written: the
// kill must then lose acknowledged writes, which shows the check can see
// a loss.
func TestPostgresServerKill(t *testing.T) {
	parallelInMakeTest(t)
	if why := pgtest.Tools(); why != "" {
		if inCI() {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	trials := pick(20, 2)
	srv, err := pgtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	var total killOutcome
	for i := range trials {
		o := killTrial(t, srv, srv.URL(), fmt.Sprintf("kill_%d", i))
		total.acked += o.acked
		total.failed += o.failed
		total.unknown += o.unknown
		total.lostAcked += o.lostAcked
		total.failedFound += o.failedFound
		total.partial += o.partial
	}
	t.Logf("FIGURE postgres SIGKILL: %d trials, %d writes acknowledged, %d reported failed, %d of unknown outcome; acknowledged lost %d, failed yet stored %d, batches partly stored %d",
		trials, total.acked, total.failed, total.unknown, total.lostAcked, total.failedFound, total.partial)
	if total.lostAcked != 0 || total.failedFound != 0 || total.partial != 0 {
		t.Errorf("%d acknowledged writes lost, %d writes reported failed were stored, %d batches partly stored", total.lostAcked, total.failedFound, total.partial)
	}
	if total.acked == 0 || total.failed+total.unknown == 0 {
		t.Errorf("the kills hit no write: %+v", total)
	}
}

// TestPostgresServerKillControl is TestPostgresServerKill's negative
// control: with synchronous_commit=off the kills lose acknowledged writes.
func TestPostgresServerKillControl(t *testing.T) {
	if !heavy() {
		t.Skip("the negative control runs with " + heavyEnv + "=1")
	}
	if why := pgtest.Tools(); why != "" {
		t.Skip(why)
	}
	srv, err := pgtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	u := srv.URL() + "&options=" + strings.ReplaceAll(url.QueryEscape("-c synchronous_commit=off"), "+", "%20")
	lost := 0
	trials := 0
	for i := 0; i < 20 && lost == 0; i++ {
		lost += killTrial(t, srv, u, fmt.Sprintf("ctl_%d", i)).lostAcked
		trials++
	}
	t.Logf("FIGURE postgres SIGKILL control (synchronous_commit=off): %d acknowledged writes lost in %d trials", lost, trials)
	if lost == 0 {
		t.Error("no acknowledged write lost with synchronous_commit=off: the check cannot see a loss")
	}
}

// killTrial runs 4 writers creating keys in a fresh schema, kills the
// server mid-run, restarts it, lets the writers go on, and checks every
// write's report against the stored keys.
func killTrial(t *testing.T, srv *pgtest.Server, u, schema string) killOutcome {
	t.Helper()
	ctx := t.Context()
	st, err := postgres.Open(ctx, postgres.Config{URL: u, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const writers = 4
	type result struct {
		keys  []string // one Put's key, or a batch's three
		state int      // 0 acked, 1 failed, 2 unknown
	}
	var mu sync.Mutex
	var results []result
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("w%d/%06d", w, i)
				r := result{keys: []string{key}}
				cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				var err error
				if w%2 == 0 {
					_, err = st.Put(cctx, key, []byte(key), storage.NoVersion)
				} else {
					// Half the writers commit three keys as one batch:
					// all of them are stored or none.
					r.keys = []string{key + "/a", key + "/b", key + "/c"}
					_, err = st.WriteBatch(cctx, []storage.Write{{Key: r.keys[0], Value: []byte(r.keys[0])}, {Key: r.keys[1], Value: []byte(r.keys[1])}, {Key: r.keys[2], Value: []byte(r.keys[2])}})
				}
				cancel()
				switch {
				case err == nil:
				case errors.Is(err, storage.ErrNotDurable):
					r.state = 2
				default:
					r.state = 1
					time.Sleep(20 * time.Millisecond) // the server is down
				}
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
			}
		})
	}
	time.Sleep(time.Duration(100+rand.IntN(200)) * time.Millisecond)
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()

	keys, err := st.List(ctx, "")
	if err != nil {
		t.Fatalf("List after the restart: %v", err)
	}
	stored := map[string]bool{}
	for _, k := range keys {
		stored[k] = true
	}
	var o killOutcome
	for _, r := range results {
		n := 0
		for _, k := range r.keys {
			if stored[k] {
				n++
			}
		}
		if n != 0 && n != len(r.keys) {
			o.partial++
			t.Logf("batch %v partly stored: %d of %d keys", r.keys, n, len(r.keys))
		}
		switch r.state {
		case 0:
			o.acked++
			if n != len(r.keys) {
				o.lostAcked++
			}
		case 1:
			o.failed++
			if n != 0 {
				o.failedFound++
				if o.failedFound <= 3 {
					t.Logf("write of %v reported failed, yet stored", r.keys)
				}
			}
		case 2:
			o.unknown++
		}
	}
	for _, k := range keys {
		if it, err := st.Get(ctx, k); err != nil || string(it.Value) != k {
			t.Errorf("key %s holds %q, %v", k, it.Value, err)
		}
	}
	return o
}
