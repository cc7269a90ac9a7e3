package layer_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/memlayer/memlayer/layer"
)

// TestTrust309_ToolVerdictAfterContextEnds (issue 23 item 9): a tool
// call running when its caller's context ends is told to stop, and its
// own verdict is returned when it comes within SettleTimeout; a call
// still running after that fails with ErrUnknownOutcome (and the
// context's error), never with a plain "failed".
func TestTrust309_ToolVerdictAfterContextEnds(t *testing.T) {
	finish := make(chan struct{})
	p := &probeFn{spec: layer.Spec{ID: "slow"}, fns: []layer.Function{
		{Name: "settles", Call: func(ctx context.Context, _ json.RawMessage) (string, error) {
			<-ctx.Done()
			time.Sleep(50 * time.Millisecond) // reads back what it wrote
			return "applied", nil
		}},
		{Name: "stuck", Call: func(ctx context.Context, _ json.RawMessage) (string, error) {
			<-finish
			return "applied", nil
		}},
	}}
	defer close(finish)
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{p}, SettleTimeout: 300 * time.Millisecond})
	call := func(fn string) (string, time.Duration, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
		defer cancel()
		start := time.Now()
		out, err := s.CallTool(ctx, "slow/"+fn, `{}`)
		return out, time.Since(start), err
	}
	if out, _, err := call("settles"); err != nil || out != "applied" {
		t.Errorf("settles: %q, %v; want its own verdict", out, err)
	}
	out, took, err := call("stuck")
	if !errors.Is(err, layer.ErrUnknownOutcome) || !errors.Is(err, context.DeadlineExceeded) || out != "" {
		t.Errorf("stuck: %q, %v; want ErrUnknownOutcome and the deadline", out, err)
	}
	if took > 2*time.Second {
		t.Errorf("stuck: the caller waited %v, beyond SettleTimeout", took)
	}
}
