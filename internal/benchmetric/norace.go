//go:build !race

package benchmetric

// Race is true when the race detector is on.
const Race = false
