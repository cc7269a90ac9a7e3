// Package reliability is memlayer's reliability suite. It holds no library
// code: its tests drive the public API of the other packages through the
// failures production brings.
package reliability
