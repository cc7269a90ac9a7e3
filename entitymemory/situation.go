package entitymemory

import (
	"context"
	"strings"

	"github.com/memlayer/memlayer/layer"
)

// situationEntities is how many of the most recent entities
// [Layer.Situation] names.
const situationEntities = 3

// Situation returns the layer's part of the run's situation
// ([layer.Situator]): the names of the most recently seen entities,
// newest first, one space apart (the names the recent turns touched;
// IDs are left out, as they would pull in every record that lists
// them). It is empty when no entity is tracked. It changes nothing.
func (l *Layer) Situation(ctx context.Context, q layer.Query) (string, error) {
	var b strings.Builder
	for _, e := range l.Recent(situationEntities) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(e.Name)
	}
	return b.String(), nil
}

var _ layer.Situator = (*Layer)(nil)
