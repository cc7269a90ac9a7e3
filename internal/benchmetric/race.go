//go:build race

package benchmetric

// Race is true when the race detector is on: memory measurements are
// skipped (the detector's shadow memory makes them meaningless and slow).
const Race = true
