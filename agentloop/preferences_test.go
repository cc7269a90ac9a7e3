package agentloop_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage/sqlite"
)

// preferenceTopic is what a user tells the agent about one subject: three
// facts that name it with two words a later question uses, and a
// distractor that shares only the question's verb.
type preferenceTopic struct {
	a, b       string    // the subject's two words
	facts      [3]string // each names a and b
	distractor string    // shares the question's "like", not a or b
	question   string
}

func preferenceTopics() []preferenceTopic {
	subjects := [][2]string{
		{"sushi", "restaurant"}, {"yoga", "studio"}, {"piano", "lessons"}, {"hiking", "boots"},
		{"espresso", "machine"}, {"cycling", "route"}, {"jazz", "records"}, {"chess", "club"},
		{"garden", "tomatoes"}, {"camping", "tent"}, {"pottery", "workshop"}, {"marathon", "training"},
		{"poetry", "anthology"}, {"ski", "resort"}, {"violin", "teacher"}, {"sourdough", "starter"},
		{"kayak", "paddle"},
	}
	details := [][3]string{
		{"is the one on Elm Street", "is booked every Friday at seven", "serves the eel the user orders"},
		{"is ten minutes from home", "runs the class the user takes on Mondays", "has the teacher named Priya"},
		{"happen on Wednesday evenings", "are with a teacher from Vienna", "started in March"},
		{"are size forty-two", "are brown leather", "came from the shop by the station"},
		{"makes a double shot every morning", "was a gift from the user's sister", "needs descaling each month"},
		{"goes along the river", "is forty kilometres long", "ends at the lighthouse"},
		{"are mostly from the fifties", "fill two shelves in the study", "include a signed Coltrane"},
		{"meets on Thursdays", "is in the old library", "has the user as treasurer"},
		{"are the cherry kind", "grow by the south wall", "are picked in August"},
		{"sleeps four people", "is dark green", "was repaired last summer"},
		{"is on Saturday mornings", "uses stoneware clay", "is run by a neighbour"},
		{"follows a sixteen-week plan", "has long runs on Sundays", "targets the spring race"},
		{"is a Faber edition", "sits on the bedside table", "was a birthday present"},
		{"is in the Dolomites", "has the red runs the user prefers", "is booked for February"},
		{"is called Marta", "comes on Tuesdays", "plays in the city orchestra"},
		{"is fed twice a day", "is named Bubbles", "lives in the fridge on weekdays"},
		{"is carbon fibre", "is two metres twenty", "hangs in the garage"},
	}
	// No distractor shares a stem with a subject ("crowded trains" would
	// share "train" with "marathon training").
	others := []string{"quiet mornings", "long phone calls", "crowded buses", "strong perfume", "loud music", "late meetings",
		"spicy food", "cold weather", "early flights", "small talk", "messy desks", "cheap umbrellas",
		"rainy weekends", "slow websites", "group chats", "paper receipts", "bright screens"}
	out := make([]preferenceTopic, len(subjects))
	for i, s := range subjects {
		t := preferenceTopic{a: s[0], b: s[1]}
		for k, d := range details[i] {
			t.facts[k] = fmt.Sprintf("The user's %s %s %s.", s[0], s[1], d)
		}
		t.distractor = fmt.Sprintf("The user does not like %s.", others[i])
		t.question = fmt.Sprintf("What do I like about my %s %s?", s[0], s[1])
		out[i] = t
	}
	return out
}

// TestMemory42_PreferencesAcrossThreads: a user states 51 facts (17
// subjects, three each) and 17 distractors across three threads of one
// resource; the agent memorizes each through semantic memory's tool. In a
// fourth thread, run by a new agent on a new store over the same SQLite
// file (as a new process would), with a semantic budget that fits three
// facts of the 68, the prompt the model gets for a question about one
// subject carries that subject's three facts and none of the
// distractors, which share the question's verb.
func TestMemory42_PreferencesAcrossThreads(t *testing.T) {
	t.Parallel() // its own SQLite file, no shared state
	topics := preferenceTopics()
	// The semantic layer's budget fits the block of three fact lines; all
	// the facts take about twenty times as much.
	const budget = 74 // 70 with the tag <semantic>: the tag <semantic_memory> takes 4 tokens more, opening and closing
	var all []string
	for _, tp := range topics {
		all = append(all, append(tp.facts[:], tp.distractor)...)
	}
	if n := (layer.Query{}).Count(strings.Join(all, "\n")); n < 10*budget {
		t.Fatalf("the facts take %d tokens, not far more than the budget %d", n, budget)
	}
	path := filepath.Join(t.TempDir(), "prefs.db")
	newAgent := func(store *sqlite.Store, model llms.Model) *agentloop.Agent {
		sem, err := semanticmemory.New(semanticmemory.Config{Spec: layer.Spec{Budget: layer.Budget{Max: budget}}})
		if err != nil {
			t.Fatal(err)
		}
		return mustAgent(t, agentloop.Config{Model: model, Store: store, Layers: []layer.Layer{sem}})
	}
	// The scripted model memorizes what the user says and answers "Noted."
	memorize := agenttest.NewFunc(func(_ context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		if len(r.ToolResults()) > 0 && r.Messages[len(r.Messages)-1].Role == llms.ChatMessageTypeTool {
			return agenttest.Text("Noted."), nil
		}
		fact := strings.TrimPrefix(r.LastUser(), "Please remember: ")
		return agenttest.Calls(agenttest.Call(semanticmemory.DefaultID+"_memorize", fmt.Sprintf(`{"text":%q,"kind":"preference"}`, fact))), nil
	})
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	a := newAgent(store, memorize)
	said := 0
	for i, tp := range topics {
		for _, f := range append(tp.facts[:], tp.distractor) {
			thread := fmt.Sprintf("thread-%d", (i+said)%3)
			if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: thread, ResourceID: "user-7", Input: "Please remember: " + f}); err != nil {
				t.Fatal(err)
			}
			said++
		}
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	store, err = sqlite.Open(t.Context(), sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	asked := 0
	for _, tp := range topics {
		model := agenttest.New(agenttest.Reply(agenttest.Text("Here is what you told me.")))
		if _, err := newAgent(store, model).Run(t.Context(), agentloop.RunInput{ThreadID: "thread-4", ResourceID: "user-7", Input: tp.question}); err != nil {
			t.Fatal(err)
		}
		sys := model.Requests()[0].System()
		for _, f := range tp.facts {
			if !strings.Contains(sys, f) {
				t.Errorf("%q: the prompt lacks the fact %q:\n%s", tp.question, f, sys)
			}
		}
		for _, other := range topics {
			if strings.Contains(sys, other.distractor) {
				t.Errorf("%q: the prompt carries the distractor %q", tp.question, other.distractor)
			}
		}
		asked++
	}
	t.Logf("FIGURE preferences: %d facts and %d distractors (%d tokens) said in 3 threads; %d questions in a fourth thread on a reopened SQLite file with a %d-token semantic budget, each prompt with its 3 facts and no distractor",
		3*len(topics), len(topics), (layer.Query{}).Count(strings.Join(all, "\n")), asked, budget)
}
