package storage

import (
	"context"
	"strconv"
	"time"
)

// QuarantinePrefix is the name prefix of the keys [Quarantine] writes:
// LayerKey(layerID, scopeKey, QuarantinePrefix+"<unix-nanos>").
const QuarantinePrefix = "quarantine/"

// Quarantine sets aside a stored value its layer cannot read, so that a
// run can start afresh without losing it: it copies it.Value to
// LayerKey(layerID, scopeKey, "quarantine/<now as unix nanoseconds>"),
// then deletes it.Key if its version is still it.Version (a writer that
// replaced the value meanwhile wins, and the delete is ErrConflict). It
// returns the quarantine key. The layers use it for state that is not
// JSON, fails its schema or cannot be decoded; the caller reports it.
func Quarantine(ctx context.Context, s Store, it Item, layerID, scopeKey string, now time.Time) (string, error) {
	qkey := LayerKey(layerID, scopeKey, QuarantinePrefix+strconv.FormatInt(now.UnixNano(), 10))
	if _, err := s.Put(ctx, qkey, it.Value, AnyVersion); err != nil {
		return "", err
	}
	if err := s.Delete(ctx, it.Key, it.Version); err != nil {
		return qkey, err
	}
	return qkey, nil
}
