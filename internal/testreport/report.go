package main

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// event is one line of `go test -json` (see go doc test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string
}

// report holds what has been read so far.
type report struct {
	w     io.Writer
	label string
	pkgs  map[string]*pkgState

	passed, skipped int
	failures        []string // failing tests, as package.Test
	pkgFailed       []string // failing packages
	skips           map[string]int
	broken          bool // input ended early or could not be read
}

// pkgState is a package whose binary is running.
type pkgState struct {
	lines  []string          // package-level output
	tests  map[string][]line // output by top-level test, subtests included
	order  []string          // top-level tests in the order they first wrote
	msg    map[string]string // the last logged message of each test
	passed map[string]bool   // subtests that passed or were skipped
}

// line is a line of a test's output.
type line struct{ test, text string }

func newReport(w io.Writer, label string) *report {
	return &report{w: w, label: label, pkgs: map[string]*pkgState{}, skips: map[string]int{}}
}

func (r *report) pkg(name string) *pkgState {
	p := r.pkgs[name]
	if p == nil {
		p = &pkgState{tests: map[string][]line{}, msg: map[string]string{}, passed: map[string]bool{}}
		r.pkgs[name] = p
	}
	return p
}

// line handles one line of input.
func (r *report) line(b []byte) {
	var e event
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &e) != nil || e.Action == "" {
		fmt.Fprintf(r.w, "%s\n", b)
		return
	}
	switch {
	case e.Action == "build-output":
		io.WriteString(r.w, e.Output)
	case e.Action == "build-fail":
		// The package's own fail event follows and counts it.
	case e.Test == "":
		r.pkgEvent(e)
	default:
		r.testEvent(e)
	}
}

func (r *report) pkgEvent(e event) {
	p := r.pkg(e.Package)
	switch e.Action {
	case "output":
		p.lines = append(p.lines, e.Output)
	case "pass", "skip":
		for _, l := range p.lines {
			if summaryLine(l) {
				io.WriteString(r.w, l)
			}
		}
		delete(r.pkgs, e.Package)
	case "fail":
		r.pkgFailed = append(r.pkgFailed, e.Package)
		r.flush(e.Package, p)
	}
}

// flush prints what a failed or cut-off package left: the output of its
// tests that never ended (a timeout or a crash stopped them), then its own
// lines. The tests that never ended count as failed.
func (r *report) flush(name string, p *pkgState) {
	for _, t := range p.order {
		r.print(p, p.tests[t])
		r.failures = append(r.failures, name+"."+t+" (unfinished)")
	}
	for _, l := range p.lines {
		io.WriteString(r.w, l)
	}
	delete(r.pkgs, name)
}

// summaryLine reports whether l is the line plain go test prints for a
// package that passed or has no tests.
func summaryLine(l string) bool {
	return strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "ok\t") || strings.HasPrefix(l, "? ")
}

func (r *report) testEvent(e event) {
	p := r.pkg(e.Package)
	top, _, _ := strings.Cut(e.Test, "/")
	switch e.Action {
	case "output":
		if _, ok := p.tests[top]; !ok {
			p.order = append(p.order, top)
		}
		p.tests[top] = append(p.tests[top], line{e.Test, e.Output})
		if m := logLine.FindStringSubmatch(strings.TrimRight(e.Output, "\n")); m != nil {
			p.msg[e.Test] = m[1]
		}
		return
	case "pass":
		r.passed++
	case "skip":
		r.skipped++
		r.skips[Reason(p.msg[e.Test])]++
	case "fail":
		r.failures = append(r.failures, e.Package+"."+e.Test)
	default: // run, pause, cont, start
		return
	}
	delete(p.msg, e.Test)
	if e.Test != top {
		if e.Action != "fail" {
			p.passed[e.Test] = true
		}
		return
	}
	if e.Action == "fail" {
		r.print(p, p.tests[top])
	}
	for _, l := range p.tests[top] {
		delete(p.passed, l.test)
	}
	delete(p.tests, top)
	for i, t := range p.order {
		if t == top {
			p.order = append(p.order[:i], p.order[i+1:]...)
			break
		}
	}
}

// print writes a failed test's lines, as plain go test would: without
// the framing lines of -v, nor the lines of subtests that passed.
func (r *report) print(p *pkgState, lines []line) {
	for _, l := range lines {
		if !framing(l.text) && !p.passed[l.test] {
			io.WriteString(r.w, l.text)
		}
	}
}

func framing(l string) bool {
	for _, f := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"} {
		if strings.HasPrefix(l, f) {
			return true
		}
	}
	return false
}

// logLine matches the first line of a t.Log, t.Skip or t.Error message.
var logLine = regexp.MustCompile(`^\s*[\w.\-]+\.go:\d+: (.*)$`)

// Reason normalizes a skip message for grouping: its first line, without
// remarks in parentheses (and the space they leave before punctuation),
// spaces collapsed, without a trailing period.
func Reason(msg string) string {
	msg, _, _ = strings.Cut(msg, "\n")
	msg = aside.ReplaceAllString(msg, " ")
	msg = strings.TrimRight(strings.Join(strings.Fields(msg), " "), ". ")
	msg = strings.NewReplacer(" :", ":", " ,", ",", " ;", ";").Replace(msg) // where a remark stood
	if msg == "" {
		return "no reason given"
	}
	return msg
}

// aside matches a remark in parentheses.
var aside = regexp.MustCompile(`\s*\([^()]*\)`)

// grouped merges a reason "R: detail" into "R" when R is a reason too, so
// that a skip explained at more length is counted with the short form.
func grouped(skips map[string]int) map[string]int {
	out := make(map[string]int, len(skips))
	for k, n := range skips {
		head := k
		for p := range skips {
			if len(p) < len(head) && strings.HasPrefix(k, p+": ") {
				head = p
			}
		}
		out[head] += n
	}
	return out
}

// finish prints what packages cut off left, then the summary line.
func (r *report) finish() {
	names := make([]string, 0, len(r.pkgs))
	for n := range r.pkgs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := r.pkgs[n]
		if len(p.lines) == 0 && len(p.order) == 0 {
			delete(r.pkgs, n)
			continue
		}
		r.broken = true
		r.flush(n, p)
	}
	fmt.Fprintln(r.w, r.summary())
}

func (r *report) failed() bool {
	return r.broken || len(r.failures) > 0 || len(r.pkgFailed) > 0
}

// summary is the closing line.
func (r *report) summary() string {
	var b strings.Builder
	b.WriteString(r.label + ": ")
	if r.failed() {
		b.WriteString("FAIL: ")
		if n := len(r.failures); n > 0 {
			fmt.Fprintf(&b, "%s failed (%s), ", plural(n, "test"), strings.Join(r.failures, ", "))
		}
		if n := len(r.pkgFailed); n > 0 {
			fmt.Fprintf(&b, "%s failed, ", plural(n, "package"))
		}
		if r.broken {
			b.WriteString("output cut off, ")
		}
		fmt.Fprintf(&b, "%s passed", thousands(r.passed))
	} else {
		fmt.Fprintf(&b, "%s passed", plural(r.passed, "test"))
	}
	fmt.Fprintf(&b, ", %s skipped", thousands(r.skipped))
	if r.skipped > 0 {
		skips := grouped(r.skips)
		reasons := make([]string, 0, len(skips))
		for k := range skips {
			reasons = append(reasons, k)
		}
		sort.Slice(reasons, func(i, j int) bool {
			a, c := reasons[i], reasons[j]
			if skips[a] != skips[c] {
				return skips[a] > skips[c]
			}
			return a < c
		})
		for i, k := range reasons {
			sep := ", "
			if i == 0 {
				sep = ": "
			}
			fmt.Fprintf(&b, "%s%s %s", sep, thousands(skips[k]), k)
		}
	}
	return b.String()
}

func plural(n int, noun string) string {
	if n != 1 {
		noun += "s"
	}
	return thousands(n) + " " + noun
}

// thousands formats n with a comma every three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
