//go:build race

package reliability

// raceEnabled shortens the long thread under make test: the race
// detector slows a turn about twentyfold and distorts its timing.
const raceEnabled = true
