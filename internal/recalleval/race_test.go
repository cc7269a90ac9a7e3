//go:build race

package recalleval

// raceEnabled is set under the race detector, which slows the pure-Go
// SQLite some thirtyfold.
const raceEnabled = true
