package writepath

import (
	"context"

	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/layer"
)

// Reporter is a layer that writes on its own, off the step and outside
// [Keeper.Keep] (semantic memory's model-based consolidation), and
// reports what it did for the audit. Flush waits for the work queued;
// AuditEntries returns the entries made since its last call.
type Reporter interface {
	Flush(ctx context.Context) error
	AuditEntries() []audit.Entry
}

// Reporters returns the Reporters among s's layers, in slot order.
func Reporters(s *layer.Stack) []Reporter {
	out := []Reporter{}
	for _, l := range s.Layers() {
		if r, ok := layer.As[Reporter](l); ok {
			out = append(out, r)
		}
	}
	return out
}

// TakeReported adds to au, at depth, the entries rs made since the last
// call. With flush, it first waits for their work within ctx; a flush
// that fails is returned, after the entries made so far are added.
func TakeReported(ctx context.Context, au *Auditor, rs []Reporter, depth int, flush bool) error {
	var err error
	for _, r := range rs {
		if flush {
			if ferr := r.Flush(ctx); ferr != nil && err == nil {
				err = ferr
			}
		}
		entries := r.AuditEntries()
		for i := range entries {
			entries[i].Depth = depth
		}
		au.Add(entries...)
	}
	return err
}
