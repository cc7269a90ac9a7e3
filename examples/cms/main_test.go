package main

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func runExample(t *testing.T, entities bool) string {
	t.Helper()
	var out bytes.Buffer
	opts := options{DB: filepath.Join(t.TempDir(), "cms.db"), Thread: "test", Entities: entities}
	if err := run(t.Context(), &out, opts); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	return out.String()
}

func TestRestartResolvesThisPage(t *testing.T) {
	out := runExample(t, true)
	created := regexp.MustCompile(`<- \{"page":\{"id":"(pg_[0-9a-f]+)","title":"About"`).FindStringSubmatch(out)
	if created == nil {
		t.Fatalf("no page created:\n%s", out)
	}
	id := created[1]
	_, after, ok := strings.Cut(out, "=== process 2")
	if !ok {
		t.Fatalf("no restart:\n%s", out)
	}
	if strings.Contains(out, "heroes:") || strings.Contains(out, "teams:") {
		t.Errorf("sections are listed under their section type (hero, team) instead of sections:\n%s", out)
	}
	for _, want := range []string{
		`-> listSections {"pageId":"` + id + `"}`,
		"Page " + id + ` has 2 sections: hero ("We build calm software"), team ("Meet the team").`,
		`-> updatePage {"pageId":"` + id + `","status":"published","title":"About Us"}`,
		`"About Us" (` + id + `, slug: about)`,
		"<working_memory>",
		`"pageId": "` + id + `"`,
		// addSection returns {"section": {"type": "hero", ...}}: a section
		// (the key it is nested under), not a "hero".
		"[RECENT ENTITIES]\nsections:\n",
		// The first turns left the window: the summary keeps their IDs.
		"<history_summary>\n- User: Create an About page",
		`createPage (call call_0_0) → ` + id + ` "About"`,
	} {
		if !strings.Contains(after, want) {
			t.Errorf("after the restart the output lacks %q:\n%s", want, after)
		}
	}
}

func TestWithoutEntityMemory(t *testing.T) {
	out := runExample(t, false)
	if strings.Contains(out, "listSections") || strings.Count(out, "assistant: Which page do you mean?") != 5 {
		t.Errorf("without entity memory the reference should fail:\n%s", out)
	}
	if strings.Contains(out, "[RECENT ENTITIES]") {
		t.Errorf("entity block rendered while off")
	}
}
