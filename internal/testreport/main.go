// Command testreport reads `go test -json` on its standard input, prints
// what plain `go test` would print, and ends with one line that counts the
// tests that passed, failed and were skipped, with the skips grouped by
// reason. It exits non-zero when a test or a package failed.
//
// make test pipes into it:
//
//	set -o pipefail; go test -json ./... | go run ./internal/testreport -label 'make test'
//
// Only a failing test's output is shown, as without -v. Output that is not
// JSON (a go command error) is copied through as is.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	label := flag.String("label", "go test", "the summary line's first words")
	flag.Parse()
	os.Exit(run(os.Stdin, os.Stdout, *label))
}

// run reports the events read from in to out, under label, and returns the
// exit status.
func run(in io.Reader, out io.Writer, label string) int {
	w := bufio.NewWriter(out)
	defer w.Flush()
	r := newReport(w, label)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		r.line(sc.Bytes())
		w.Flush()
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(w, "testreport: reading go test -json: %v\n", err)
		r.broken = true
	}
	r.finish()
	if r.failed() {
		return 1
	}
	return 0
}
