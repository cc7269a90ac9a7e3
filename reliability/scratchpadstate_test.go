package reliability

import (
	"testing"

	"github.com/memlayer/memlayer/workingmemory"
)

// scratchpadState returns the scratchpad state held in a stored record,
// without the write log stored with it.
func scratchpadState(tb testing.TB, record []byte) []byte {
	tb.Helper()
	b, err := workingmemory.StoredState(record)
	if err != nil {
		tb.Fatalf("stored scratchpad state: %v\n%.300s", err, record)
	}
	return b
}
