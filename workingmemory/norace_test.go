//go:build !race

package workingmemory

// raceEnabled is true when the race detector is on.
const raceEnabled = false
