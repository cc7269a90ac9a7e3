package agentloop_test

import "os"

// fullSuite reports whether the long tests run at full size. make
// reliability sets MEMLAYER_RELIABILITY=1 and runs this package so; make
// test runs them reduced, under the race detector, to stay fast.
func fullSuite() bool { return os.Getenv("MEMLAYER_RELIABILITY") == "1" }

// suiteSize returns full under make reliability and reduced otherwise.
func suiteSize(full, reduced int) int {
	if fullSuite() {
		return full
	}
	return reduced
}
