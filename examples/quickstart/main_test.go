package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRun runs the quickstart twice on one database file, as a user would,
// and checks that "it" resolved to the page created in the first turn.
func TestRun(t *testing.T) {
	db := filepath.Join(t.TempDir(), "quickstart.db")
	for i := range 2 {
		out := captureStdout(t, func() error { return run(context.Background(), db) })
		if !strings.Contains(out, "Adding a hero section to page-123.") {
			t.Fatalf("run %d: the second turn did not resolve \"it\" to page-123:\n%s", i+1, out)
		}
	}
}

func captureStdout(t *testing.T, fn func() error) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); done <- b }()
	runErr := fn()
	os.Stdout = old
	w.Close()
	out := <-done
	if runErr != nil {
		t.Fatalf("run: %v\n%s", runErr, out)
	}
	return string(bytes.TrimSpace(out))
}
