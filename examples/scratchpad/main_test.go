package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestScratchpad(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		`assistant: Plan "Launch v2": 3 of 3 steps open (Write the announcement, Record the demo, Email customers).`,
		"<- error: ",
		"/steps/0/done",
		"assistant: Plan \"Launch v2\": 2 of 3 steps open (Record the demo, Email customers).",
		`"title": "Write the announcement"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, `"owner"`) && strings.Contains(s[strings.Index(s, "--- working memory"):], "owner") {
		t.Errorf("the rejected update reached the plan:\n%s", s)
	}
}
