package recalleval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoad_Rejects checks that each kind of broken set fails to load with
// an error that names the problem.
func TestLoad_Rejects(t *testing.T) {
	const turns = `{"conv":"a","id":"a-1","speaker":"user","text":"x"}
{"conv":"b","id":"b-1","speaker":"user","text":"y"}
`
	const good = `{"id":"q","conv":"a","question":"x?","evidence":["a-1"],"kind":"lexical"}` + "\n"
	for _, tc := range []struct {
		name, turns, questions, want string
	}{
		{"ok", turns, good, ""},
		{"missing questions file", turns, "-", "no such file"},
		{"bad JSON", turns + "{\n", good, "line 3"},
		{"duplicate turn", turns + `{"conv":"a","id":"a-1","text":"z"}` + "\n", good, "twice"},
		{"turn without conversation", `{"id":"x"}` + "\n", good, "no ID or conversation"},
		{"unknown kind", turns, strings.Replace(good, "lexical", "fuzzy", 1), `kind "fuzzy"`},
		{"no evidence", turns, strings.Replace(good, `["a-1"]`, `[]`, 1), "no evidence"},
		{"evidence of another conversation", turns, strings.Replace(good, `"a-1"`, `"b-1"`, 1), `not a turn of "a"`},
		{"evidence that does not exist", turns, strings.Replace(good, `"a-1"`, `"a-9"`, 1), `"a-9"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			if err := os.WriteFile(filepath.Join(d, TurnsFile), []byte(tc.turns), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.questions != "-" {
				if err := os.WriteFile(filepath.Join(d, QuestionsFile), []byte(tc.questions), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			s, err := Load(d)
			if tc.want == "" {
				if err != nil || len(s.Turns) != 2 || len(s.Questions) != 1 {
					t.Fatalf("Load = %v, %v; want 2 turns and 1 question", s, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
