//go:build !race

package recalleval

const raceEnabled = false
