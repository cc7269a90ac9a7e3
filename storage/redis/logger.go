package redis

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// SetLogger routes go-redis's own log lines through l instead of standard
// error. go-redis writes some failures itself, such as "connection pool:
// failed to dial after 5 attempts: ... connection refused" while a server
// is down, through one logger for the whole process; SetLogger replaces
// that logger, so it applies to every go-redis client of the process,
// including those other packages created, not only to [Store]s. Each line
// becomes one record at [slog.LevelWarn] with the attribute
// component=go-redis and the line (without go-redis's "redis: " prefix)
// as its message. A nil l means [slog.Default] at the time of each line.
//
// It is opt-in: without a call go-redis keeps writing to standard error.
// Call it once at start-up, before opening stores.
func SetLogger(l *slog.Logger) {
	goredis.SetLogger(slogAdapter{l})
}

// slogAdapter is go-redis's logging interface on a *slog.Logger.
type slogAdapter struct{ l *slog.Logger }

// Printf implements go-redis's internal logging interface.
func (a slogAdapter) Printf(ctx context.Context, format string, v ...any) {
	l := a.l
	if l == nil {
		l = slog.Default()
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if !l.Enabled(ctx, slog.LevelWarn) {
		return
	}
	msg := strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: ")
	l.LogAttrs(ctx, slog.LevelWarn, msg, slog.String("component", "go-redis"))
}
