//go:build race

package storagetest

// raceEnabled scales down the large-collection checks, which the race
// detector slows tenfold.
const raceEnabled = true
