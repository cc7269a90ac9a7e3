package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/sqlite"
)

// TestTrust308_CancelledWriteReportsWhatHappened (issue 23 item 8): writes
// under deadlines of 0–400 µs, some of which end while the statement
// runs. Each write's report matches the store afterwards: a write
// reported done is there, one reported failed left the key as it was.
// (The driver used to replace a completed statement's result with the
// context's error.)
func TestTrust308_CancelledWriteReportsWhatHappened(t *testing.T) {
	st := open(t, sqlite.Config{Path: filepath.Join(t.TempDir(), "db.sqlite")})
	ctx := t.Context()
	n := 3000
	if testing.Short() {
		n = 1000
	}
	var lies, failed int
	for i := range n {
		key := fmt.Sprintf("k/%d", i%50)
		before, gerr := st.Get(ctx, key)
		if gerr != nil && !errors.Is(gerr, storage.ErrNotFound) {
			t.Fatal(gerr)
		}
		value := []byte(fmt.Sprintf("v%d", i))
		dctx, cancel := context.WithTimeout(ctx, time.Duration(rand.IntN(400))*time.Microsecond)
		var err error
		var deleted bool
		switch {
		case i%7 == 6 && gerr == nil:
			err, deleted = st.Delete(dctx, key, before.Version), true
		case i%3 == 0:
			_, err = st.Put(dctx, key, value, storage.AnyVersion)
		case gerr != nil:
			_, err = st.Put(dctx, key, value, storage.NoVersion)
		default:
			_, err = st.Put(dctx, key, value, before.Version)
		}
		cancel()
		after, aerr := st.Get(ctx, key)
		if aerr != nil && !errors.Is(aerr, storage.ErrNotFound) {
			t.Fatal(aerr)
		}
		var changed bool
		if deleted {
			changed = aerr != nil
		} else {
			changed = aerr == nil && string(after.Value) == string(value)
		}
		if err != nil {
			failed++
		}
		if (err == nil) != changed {
			lies++
			if lies <= 3 {
				t.Errorf("write %d: reported %v, but the store was changed: %v", i, err, changed)
			}
		}
	}
	t.Logf("%d writes, %d failed, %d misreported", n, failed, lies)
	if lies > 0 {
		t.Errorf("%d of %d writes misreported", lies, n)
	}
}
