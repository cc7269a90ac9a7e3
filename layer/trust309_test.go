package layer_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/memlayer/memlayer/layer"
)

// TestTrust309_ToolVerdictAfterContextEnds (issue 23 item 9): a tool
// call running when its caller's context ends is told to stop, and its
// own verdict is returned when it comes in time; a call still running
// at its timeout fails with the context's error saying that whether it
// took effect is unknown, never with a plain "failed".
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
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{p}, Timeout: 400 * time.Millisecond})
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
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "whether it took effect is unknown") || out != "" {
		t.Errorf("stuck: %q, %v; want the deadline, saying the outcome is unknown", out, err)
	}
	if took > 2*time.Second {
		t.Errorf("stuck: the caller waited %v, beyond the call's timeout", took)
	}
}
