package redis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/memlayer/memlayer/storage"
)

// A write whose connection breaks after it was sent may have been
// applied. go-redis would send it again by itself, and a conditional write
// sent again after other writers moved the key on gets a conflict it
// cannot tell from one of its own: its caller would read "not applied" of
// a write that was. So the Store sends its writes with go-redis's retries
// off (once) and sends them again itself (Store.write), with the same
// write token: the script recognizes a write it already applied (see
// putScript), and a write sent again that still meets another version is
// reported as of unknown outcome, never as a conflict.

// once is a command go-redis must not send again by itself.
type once struct{ *goredis.Cmd }

// NoRetry tells go-redis not to send the command again after a failure:
// Store.write does it, knowing that the first send may have been applied.
func (once) NoRetry() bool { return true }

// lua is a script the Store sends as commands of its own (once): by its
// SHA1 (EVALSHA), or by its source (EVAL) when the server lacks it or in a
// pipeline, which cannot load it on a miss.
type lua struct {
	*goredis.Script
	src string
}

func newLua(src string) *lua { return &lua{Script: goredis.NewScript(src), src: src} }

// command is one write: script on keys with args, or, when script is nil,
// the plain command args.
type command struct {
	script *lua
	keys   []string
	args   []any
}

// send sends w once through c (queues it, in a pipeline) and returns
// the command sent, whose reply is set once c has run it.
func (w command) send(ctx context.Context, c runner, pipelined bool) once {
	if w.script == nil {
		cmd := once{goredis.NewCmd(ctx, w.args...)}
		_ = c.Process(ctx, cmd)
		return cmd
	}
	if !pipelined {
		cmd := w.eval(ctx, "evalsha", w.script.Hash())
		_ = c.Process(ctx, cmd)
		if !goredis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			return cmd
		}
		// The server lacks the script (it restarted, or is a replica
		// promoted since): NOSCRIPT applied nothing.
	}
	cmd := w.eval(ctx, "eval", w.script.src)
	_ = c.Process(ctx, cmd)
	return cmd
}

// eval is the EVAL or EVALSHA command of w, with body the script's
// source or SHA1.
func (w command) eval(ctx context.Context, name, body string) once {
	args := make([]any, 0, 3+len(w.keys)+len(w.args))
	args = append(args, name, body, len(w.keys))
	for _, k := range w.keys {
		args = append(args, k)
	}
	return once{goredis.NewCmd(ctx, append(args, w.args...)...)}
}

// resendPolicy is how often and how soon Store.write sends a write again
// after a network failure: as often as go-redis would have (MaxRetries on
// one server, MaxRedirects on a cluster), with its backoff.
type resendPolicy struct {
	times    int
	min, max time.Duration
}

// policyOf reads the resend policy from the options of c.
func policyOf(c goredis.UniversalClient) resendPolicy {
	var p resendPolicy
	switch c := c.(type) {
	case *goredis.ClusterClient:
		o := c.Options()
		p = resendPolicy{times: o.MaxRedirects, min: o.MinRetryBackoff, max: o.MaxRetryBackoff}
	case *goredis.Client:
		o := c.Options()
		p = resendPolicy{times: o.MaxRetries, min: o.MinRetryBackoff, max: o.MaxRetryBackoff}
	}
	p.times = max(p.times, 0)
	p.min = max(p.min, 0)
	p.max = max(p.max, p.min)
	return p
}

// backoff is the pause before the n-th resend (from 0): the minimum,
// doubled each time up to the maximum, less up to half at random.
func (p resendPolicy) backoff(n int) time.Duration {
	d := p.min << min(n, 16)
	if d > p.max || d <= 0 {
		d = p.max
	}
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2)
}

// write sends w and returns its reply, sending it again (with the same
// write token) after a network failure or a layout change of the
// cluster, as go-redis would have. resent is true when an earlier send
// may have been applied: the caller must then not take a conflict or a
// missing key for an answer to its own write. acked is what writeOnce
// says.
//
// A write whose outcome stays unknown after the last send, with
// WaitReplicas, also matches storage.ErrNotDurable: had it been applied,
// nothing says a replica has it, and a read-back from its master would
// prove nothing.
func (s *Store) write(ctx context.Context, w command) (res any, acked int64, resent bool, err error) {
	for n := 0; ; n++ {
		res, acked, err = s.writeOnce(ctx, w)
		if err == nil {
			return res, acked, resent, nil
		}
		resent = resent || mayHaveApplied(err)
		if n >= s.resend.times || !(unavailable(err) || s.cluster != nil && redirect(err)) {
			break
		}
		if s.cluster != nil {
			s.cluster.ReloadState(ctx) // the slot may have moved: see wrap
		}
		t := time.NewTimer(s.resend.backoff(n))
		select {
		case <-ctx.Done():
			t.Stop()
			err = fmt.Errorf("%w (after %w)", ctx.Err(), err)
		case <-t.C:
			continue
		}
		break
	}
	if resent && !unavailable(err) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		// An answer to the last send (an error reply) says nothing of
		// an earlier one, which may have been applied.
		err = fmt.Errorf("%w: an earlier send may have been applied: %w", ErrUnavailable, err)
	}
	if resent && s.replicas > 0 {
		err = fmt.Errorf("%w (%w)", err, storage.ErrNotDurable)
	}
	return nil, 0, resent, err
}

// unknownOutcome is the error of a write sent again after a send that may
// have been applied, whose last send found the key state (at another
// version, or missing): the first send may have made it so, or another
// writer did.
func (s *Store) unknownOutcome(op, key, state string) error {
	err := fmt.Errorf("%w: %s %s: a send broke off and may have been applied; sent again, the write found the key %s",
		ErrUnavailable, op, storage.Quote(key), state)
	if s.replicas > 0 {
		err = fmt.Errorf("%w (%w)", err, storage.ErrNotDurable)
	}
	return err
}
