// Package convtest reads the authored conversations of the repository's
// testdata for tests: the 50-turn CMS conversation
// (testdata/conversations/cms50.json) and the text-only conversations of
// testdata/recalleval. It imports only the standard library.
package convtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Call is one tool call of a CMS turn, its references resolved: ID is
// the call ID the agent's scripted model gives it
// ("call_t<turn>_s<step>_<i>"), Args and Result are JSON.
type Call struct {
	ID, Tool, Args, Result string
}

// Turn is one turn of the CMS conversation: the user's request, the
// model's steps (each the calls of one response) and its answer.
type Turn struct {
	N           int
	User, Reply string
	Steps       [][]Call
}

// CMS50 reads the CMS conversation from the repository at root, every
// "$ref:<type>:<name>" argument replaced by the ID the fixture says it
// resolves to.
func CMS50(root string) ([]Turn, error) {
	data, err := os.ReadFile(filepath.Join(root, "testdata", "conversations", "cms50.json"))
	if err != nil {
		return nil, err
	}
	var f struct {
		Turns []struct {
			N           int
			User, Reply string
			Steps       [][]struct {
				Tool         string
				Args, Result json.RawMessage
			}
			Refs []struct{ Ref, Want string }
		}
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("cms50.json: %w", err)
	}
	out := make([]Turn, 0, len(f.Turns))
	for _, t := range f.Turns {
		var refs []string
		for _, r := range t.Refs {
			refs = append(refs, `"$ref:`+r.Ref+`"`, `"`+r.Want+`"`)
		}
		resolve := strings.NewReplacer(refs...)
		turn := Turn{N: t.N, User: t.User, Reply: t.Reply}
		for s, step := range t.Steps {
			var calls []Call
			for i, c := range step {
				calls = append(calls, Call{ID: fmt.Sprintf("call_t%02d_s%d_%d", t.N, s, i), Tool: c.Tool, Args: resolve.Replace(string(c.Args)), Result: string(c.Result)})
			}
			turn.Steps = append(turn.Steps, calls)
		}
		out = append(out, turn)
	}
	return out, nil
}

// Line is one message of a text-only conversation.
type Line struct {
	User bool // said by the user, else by the assistant
	Text string
}

// Recalleval reads the conversations of testdata/recalleval from the
// repository at root, by name, in order.
func Recalleval(root string) (map[string][]Line, error) {
	file, err := os.Open(filepath.Join(root, "testdata", "recalleval", "turns.jsonl"))
	if err != nil {
		return nil, err
	}
	defer file.Close()
	out := map[string][]Line{}
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r struct{ Conv, Speaker, Text string }
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("turns.jsonl: %w", err)
		}
		out[r.Conv] = append(out[r.Conv], Line{User: r.Speaker == "user", Text: r.Text})
	}
	return out, sc.Err()
}
