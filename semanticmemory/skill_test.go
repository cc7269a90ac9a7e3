package semanticmemory_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/inspect"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/sqlite"
)

// cmsTurn is one turn of the authored 100-turn CMS conversation
// (testdata/skills_cms100.jsonl): the user's request, the tool calls the
// agent made (one per step), the answer, and the author's labels: the
// workflow the turn is an instance of ("" for one-off work and chat) and
// whether it failed.
type cmsTurn struct {
	Thread string    `json:"thread"`
	WF     string    `json:"wf"`
	Failed bool      `json:"failed"`
	Q      string    `json:"q"`
	Calls  []cmsCall `json:"calls"`
	Answer string    `json:"answer"`
}

type cmsCall struct {
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"args"`
	Result json.RawMessage `json:"result"`
	Error  bool            `json:"error"`
}

func loadCMS100(t testing.TB) []cmsTurn {
	t.Helper()
	f, err := os.Open("testdata/skills_cms100.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []cmsTurn
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var tt cmsTurn
		if err := json.Unmarshal(sc.Bytes(), &tt); err != nil {
			t.Fatalf("line %d: %v", len(out)+1, err)
		}
		out = append(out, tt)
	}
	if len(out) != 100 {
		t.Fatalf("the fixture has %d turns, want 100", len(out))
	}
	return out
}

// steps returns the layer.Turns of turn n of the conversation, as the
// agent hands them to Store: one per tool call, then the answer.
func (tt cmsTurn) steps(n int) []layer.Turn {
	var out []layer.Turn
	for i, c := range tt.Calls {
		content := string(c.Result)
		var s string
		if json.Unmarshal(c.Result, &s) == nil {
			content = s // a text result
		}
		call := layer.ToolCall{ID: callID(n, i), Name: c.Tool, Arguments: string(c.Args)}
		out = append(out, layer.Turn{Step: i, Query: tt.Q, ToolCalls: []layer.ToolCall{call},
			Results: []layer.ToolResult{{ToolCall: call, Content: content, IsError: c.Error}}})
	}
	return append(out, layer.Turn{Step: len(tt.Calls), Query: tt.Q, Response: tt.Answer})
}

func callID(turn, i int) string { return fmt.Sprintf("call_%d_%d", turn, i) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// run plays turns as runs of an agent on resource: each turn a run of
// its own (Init, then Store for each step).
func run(t testing.TB, tmpl *semanticmemory.Layer, store storage.Store, resource string, turns []cmsTurn, first int) {
	t.Helper()
	ctx := context.Background()
	for i, tt := range turns {
		b, err := tmpl.Init(ctx, layer.Env{ThreadID: tt.Thread, ResourceID: resource, Store: store, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range tt.steps(first + i) {
			if err := b.(layer.Storer).Store(ctx, st); err != nil {
				t.Fatalf("turn %d step %d: Store: %v", first+i, st.Step, err)
			}
		}
	}
}

func newSkillLayer(t testing.TB, cfg semanticmemory.Config) *semanticmemory.Layer {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = clock()
	}
	l, err := semanticmemory.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func boundTo(t testing.TB, tmpl *semanticmemory.Layer, store storage.Store, resource, thread string) *semanticmemory.Layer {
	t.Helper()
	b, err := tmpl.Init(context.Background(), layer.Env{ThreadID: thread, ResourceID: resource, Store: store, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return b.(*semanticmemory.Layer)
}

func skillsOf(t testing.TB, l *semanticmemory.Layer) []semanticmemory.Fact {
	t.Helper()
	sk, err := l.Skills(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sk
}

// TestSkillsCMS100 is the measure: on the authored 100-turn CMS
// conversation (ten threads of one editor), at least 80% of the
// workflows that succeed three or more times become skills, and no
// skill is made from, or counts, a failed turn.
// It runs on the memory store, on a store without search (the layer's
// own index) and on SQLite.
func TestSkillsCMS100(t *testing.T) {
	backends := map[string]func(t *testing.T) storage.Store{
		"memory":    func(*testing.T) storage.Store { return storage.NewMemoryStore() },
		"no search": func(*testing.T) storage.Store { return struct{ storage.Store }{storage.NewMemoryStore()} },
		"sqlite": func(t *testing.T) storage.Store {
			s, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "skills.db")})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) { testSkillsCMS100(t, open(t)) })
	}
}

func testSkillsCMS100(t *testing.T, store storage.Store) {
	turns := loadCMS100(t)
	tmpl := newSkillLayer(t, semanticmemory.Config{})
	run(t, tmpl, store, "northwind", turns, 0)
	l := boundTo(t, tmpl, store, "northwind", "t-check")
	skills := skillsOf(t, l)

	// Which turn each evidence reference belongs to.
	turnOf := map[string]int{}
	for n, tt := range turns {
		for i := range tt.Calls {
			turnOf[callID(n, i)] = n
		}
	}
	skillOfTurn := map[int]string{}
	for _, f := range skills {
		if f.Kind != semanticmemory.SkillKind || f.Skill == nil {
			t.Fatalf("Skills gave %+v", f)
		}
		for _, ev := range f.Skill.Evidence {
			for _, ref := range ev.Refs {
				n, ok := turnOf[ref]
				if !ok {
					t.Errorf("skill %q: evidence %q names no call of the conversation", f.Skill.Name, ref)
					continue
				}
				if turns[n].Failed {
					t.Errorf("skill %q has evidence from failed turn %d (%q)", f.Skill.Name, n, turns[n].Q)
				}
				if turns[n].Thread != ev.Thread {
					t.Errorf("skill %q: evidence %q is of thread %s, not %s", f.Skill.Name, ref, turns[n].Thread, ev.Thread)
				}
				skillOfTurn[n] = f.ID
			}
		}
	}

	succeeded, failed := map[string]int{}, map[string]int{}
	for _, tt := range turns {
		switch {
		case tt.WF == "":
		case tt.Failed:
			failed[tt.WF]++
		default:
			succeeded[tt.WF]++
		}
	}
	var recurring, became []string
	for wf, n := range succeeded {
		if n < 3 {
			continue
		}
		recurring = append(recurring, wf)
		for i, tt := range turns {
			if tt.WF == wf && !tt.Failed && skillOfTurn[i] != "" {
				became = append(became, wf)
				break
			}
		}
	}
	sort.Strings(recurring)
	share := float64(len(became)) / float64(len(recurring))
	t.Logf("%d of %d workflows that succeed 3+ times became skills (%.0f%%); %d skills in all", len(became), len(recurring), 100*share, len(skills))
	for _, f := range skills {
		t.Logf("  %s", f.Text)
	}
	if len(recurring) < 8 {
		t.Fatalf("the fixture has %d recurring workflows; it was written with 10", len(recurring))
	}
	if share < 0.8 {
		t.Errorf("%.2f of the recurring workflows became skills (%v of %v), want at least 0.8", share, became, recurring)
	}
	// The workflows that only ever fail make no skill, and count nowhere.
	for _, wf := range []string{"delete-page", "restore-revision", "add-redirect"} {
		if failed[wf] < 3 || succeeded[wf] > 0 {
			t.Fatalf("fixture: %s should fail 3+ times and never succeed (%d, %d)", wf, failed[wf], succeeded[wf])
		}
		for _, f := range skills {
			for _, st := range f.Skill.Steps {
				if st.Tool == map[string]string{"delete-page": "cms_deletePage", "restore-revision": "cms_restoreRevision", "add-redirect": "cms_checkRedirect"}[wf] {
					t.Errorf("skill %q made from the failing workflow %s", f.Skill.Name, wf)
				}
			}
		}
	}
	// Publishing succeeded 9 times with one sequence, and failed 3 times
	// with it: the skill counts the 9.
	pub := findSkill(skills, "cms_updatePage", `"status":"published"`)
	if pub == nil || pub.Skill.Successes != succeeded["publish"] {
		t.Errorf("the publish skill is %+v, want %d successes", pub, succeeded["publish"])
	}
	// A later request that matches a skill recalls it.
	got := recall(t, l, "Publish the Journal page")
	if !strings.Contains(got, "skill]") || !strings.Contains(got, `cms_updatePage {"id":"<id>","status":"published"}`) {
		t.Errorf("recall of a publish request:\n%s\nwant the publish skill", got)
	}
}

// findSkill returns the skill with a step of tool whose shape holds arg.
func findSkill(skills []semanticmemory.Fact, tool, arg string) *semanticmemory.Fact {
	for i, f := range skills {
		for _, st := range f.Skill.Steps {
			if st.Tool == tool && strings.Contains(st.Args, arg) && len(f.Skill.Steps) == 2 {
				return &skills[i]
			}
		}
	}
	return nil
}

// workflow returns n turns of one workflow (get a page, publish it) on
// different pages, in thread thread, their outcome given by bad (nil:
// success).
func workflow(n int, thread string, bad func(i int, tt *cmsTurn)) []cmsTurn {
	out := make([]cmsTurn, n)
	for i := range out {
		id := fmt.Sprintf("page-%d", 500+i)
		out[i] = cmsTurn{Thread: thread, WF: "publish", Q: fmt.Sprintf("Publish page %s", id), Answer: "Published.",
			Calls: []cmsCall{
				{Tool: "cms_getPage", Args: json.RawMessage(`{"id":"` + id + `"}`), Result: json.RawMessage(`{"page":{"id":"` + id + `"}}`)},
				{Tool: "cms_updatePage", Args: json.RawMessage(`{"id":"` + id + `","status":"published"}`), Result: json.RawMessage(`{"page":{"id":"` + id + `","status":"published"}}`)},
			}}
		if bad != nil {
			bad(i, &out[i])
		}
	}
	return out
}

// No failed sequence becomes a skill, however it failed, however often.
func TestSkillNeverFromFailure(t *testing.T) {
	fails := map[string]func(i int, tt *cmsTurn){
		"tool error": func(_ int, tt *cmsTurn) {
			tt.Calls[1].Error, tt.Calls[1].Result = true, json.RawMessage(`"permission denied"`)
		},
		"error result":  func(_ int, tt *cmsTurn) { tt.Calls[1].Result = json.RawMessage(`{"error":"validation failed"}`) },
		"ok false":      func(_ int, tt *cmsTurn) { tt.Calls[1].Result = json.RawMessage(`{"ok":false}`) },
		"status failed": func(_ int, tt *cmsTurn) { tt.Calls[1].Result = json.RawMessage(`{"status":"failed"}`) },
		"error text":    func(_ int, tt *cmsTurn) { tt.Calls[1].Result = json.RawMessage(`"Error: page is locked"`) },
		"failed answer": func(_ int, tt *cmsTurn) { tt.Answer = "Sorry, I couldn't publish it." },
		"first call fails": func(_ int, tt *cmsTurn) {
			tt.Calls[0].Error, tt.Calls[0].Result = true, json.RawMessage(`"no such page"`)
		},
		"each differently": func(i int, tt *cmsTurn) {
			if i%2 == 0 {
				tt.Calls[1].Result = json.RawMessage(`{"errors":["x"]}`)
			} else {
				tt.Answer = "The update failed."
			}
		},
	}
	for name, bad := range fails {
		t.Run(name, func(t *testing.T) {
			store := storage.NewMemoryStore()
			tmpl := newSkillLayer(t, semanticmemory.Config{})
			run(t, tmpl, store, "r", workflow(6, "t1", bad), 0)
			l := boundTo(t, tmpl, store, "r", "t1")
			if sk := skillsOf(t, l); len(sk) != 0 {
				t.Errorf("skills from failed turns: %+v", sk)
			}
			keys, _ := store.List(context.Background(), "")
			for _, k := range keys {
				if strings.Contains(k, "skill-candidates") {
					t.Errorf("a failed turn was counted: %s", k)
				}
			}
		})
	}
	// A run that stops before the model answers (a step limit, an error)
	// ends no turn, and counts nothing.
	store := storage.NewMemoryStore()
	tmpl := newSkillLayer(t, semanticmemory.Config{})
	for i, tt := range workflow(4, "t1", nil) {
		b := boundTo(t, tmpl, store, "r", "t1")
		steps := tt.steps(i)
		for _, st := range steps[:len(steps)-1] {
			if err := b.Store(context.Background(), st); err != nil {
				t.Fatal(err)
			}
		}
	}
	if sk := skillsOf(t, boundTo(t, tmpl, store, "r", "t1")); len(sk) != 0 {
		t.Errorf("skills from unfinished turns: %+v", sk)
	}
}

// Sequences of the same shape on different pages make one skill, whose
// count and evidence grow; evidence stays bounded, the newest kept.
func TestSkillsMerge(t *testing.T) {
	store := storage.NewMemoryStore()
	tmpl := newSkillLayer(t, semanticmemory.Config{Skills: semanticmemory.SkillConfig{MaxEvidence: 3}})
	turns := workflow(12, "t1", nil)
	for i := range turns {
		turns[i].Thread = fmt.Sprintf("t%d", i%3) // across threads
	}
	run(t, tmpl, store, "r", turns, 0)
	l := boundTo(t, tmpl, store, "r", "t1")
	sk := skillsOf(t, l)
	if len(sk) != 1 {
		t.Fatalf("%d skills, want 1: %+v", len(sk), sk)
	}
	s := sk[0].Skill
	if s.Successes != 12 || len(s.Evidence) != 3 || s.Evidence[2].Refs[0] != callID(11, 0) || s.Evidence[0].Refs[0] != callID(9, 0) {
		t.Errorf("skill = %+v, want 12 successes and the 3 newest turns' evidence", s)
	}
	if s.Name != "publish page" || len(s.Steps) != 2 || s.Steps[0].Args != `{"id":"<id>"}` {
		t.Errorf("skill = %+v", s)
	}
	vs, err := l.Versions(context.Background(), sk[0].ID)
	if err != nil || len(vs) != 3 { // made at the 2nd success, a version when the count doubles: 4, 8
		t.Errorf("%d versions (%v), want 3", len(vs), err)
	}
	if text := vs[len(vs)-1].Text; !strings.Contains(text, "succeeded 8 times") {
		t.Errorf("the newest version says %q, want the count it was written at, 8", text)
	}
	// The same steps on another page in a changed order are another skill.
	rev := workflow(2, "t1", func(_ int, tt *cmsTurn) { tt.Calls[0], tt.Calls[1] = tt.Calls[1], tt.Calls[0] })
	run(t, tmpl, store, "r", rev, 100)
	if sk := skillsOf(t, l); len(sk) != 2 {
		t.Errorf("%d skills after a reordered sequence, want 2", len(sk))
	}
	// A repeated call folds into one step.
	rep := workflow(2, "t1", func(_ int, tt *cmsTurn) { tt.Calls = append(tt.Calls[:1], tt.Calls...) })
	run(t, tmpl, store, "r", rep, 200)
	if sk := skillsOf(t, l); len(sk) != 2 || sk[0].Skill.Successes != 14 {
		t.Errorf("after repeated calls: %d skills, the first %+v; want the repeat folded into the publish skill", len(sk), sk[0].Skill)
	}
}

// Skill extraction is on by default and off with NoSkills.
func TestSkillsOff(t *testing.T) {
	store := storage.NewMemoryStore()
	tmpl := newSkillLayer(t, semanticmemory.Config{NoSkills: true})
	run(t, tmpl, store, "r", workflow(5, "t1", nil), 0)
	if keys, _ := store.List(context.Background(), ""); len(keys) != 0 {
		t.Errorf("NoSkills wrote %v", keys)
	}
	if _, err := semanticmemory.New(semanticmemory.Config{Skills: semanticmemory.SkillConfig{MinSuccesses: 17}}); err == nil {
		t.Error("MinSuccesses 17 accepted")
	}
	if _, err := semanticmemory.New(semanticmemory.Config{Skills: semanticmemory.SkillConfig{Importance: 2}}); err == nil {
		t.Error("Importance 2 accepted")
	}
}

// Users' skills never mix: resource IDs that collide after escaping,
// nest or are empty each count their own successes, also when they run
// at once; clearing one leaves the others.
func TestSkillsAcrossUsers(t *testing.T) {
	store := storage.NewMemoryStore()
	tmpl := newSkillLayer(t, semanticmemory.Config{})
	users := []string{"a", "a/b", "a:b", ""}
	// One success each: no skill anywhere (two are needed).
	for i, u := range users {
		run(t, tmpl, store, u, workflow(1, "t-"+u, nil), 10*i)
	}
	for _, u := range users {
		if sk := skillsOf(t, boundTo(t, tmpl, store, u, "t-"+u)); len(sk) != 0 {
			t.Errorf("user %q has skills from others' successes: %+v", u, sk)
		}
	}
	// An empty resource is the thread's own: another thread does not
	// share it.
	run(t, tmpl, store, "", workflow(1, "t-other", nil), 90)
	if sk := skillsOf(t, boundTo(t, tmpl, store, "", "t-")); len(sk) != 0 {
		t.Errorf("threads without a resource share skills: %+v", sk)
	}
	// At once: each user's second success makes its own skill.
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Go(func() { run(t, tmpl, store, u, workflow(1, "t-"+u, nil), 100+10*i) })
	}
	wg.Wait()
	for i, u := range users {
		sk := skillsOf(t, boundTo(t, tmpl, store, u, "t-"+u))
		if len(sk) != 1 || sk[0].Skill.Successes != 2 || sk[0].Skill.Evidence[1].Refs[0] != callID(100+10*i, 0) {
			t.Errorf("user %q: %+v, want one skill of its own two successes", u, sk)
		}
	}
	// Clear removes a user's skills and candidates, not the others'.
	a := boundTo(t, tmpl, store, "a", "t-a")
	run(t, tmpl, store, "a", []cmsTurn{{Thread: "t-a", Q: "rename", Calls: []cmsCall{{Tool: "cms_updatePage", Args: json.RawMessage(`{"id":"p1","title":"X"}`), Result: json.RawMessage(`{}`)}}, Answer: "ok"}}, 300)
	if err := a.Clear(context.Background()); err != nil {
		t.Fatal(err)
	}
	if sk := skillsOf(t, a); len(sk) != 0 {
		t.Errorf("skills after Clear: %+v", sk)
	}
	if keys, _ := store.List(context.Background(), storage.LayerKey("semantic", layer.Env{ResourceID: "a"}.ScopeKey(layer.ScopeResource), "skill-candidates")); len(keys) != 0 {
		t.Errorf("candidates after Clear: %v", keys)
	}
	if sk := skillsOf(t, boundTo(t, tmpl, store, "a/b", "t-a/b")); len(sk) != 1 {
		t.Errorf("Clear of %q removed %q's skills", "a", "a/b")
	}
	// Erasing a user (the operator's erase) leaves nothing of its skills
	// or candidates, and the others' as they were.
	run(t, tmpl, store, "a:b", []cmsTurn{{Thread: "t-a:b", Q: "rename", Calls: []cmsCall{{Tool: "cms_updatePage", Args: json.RawMessage(`{"id":"p1","title":"X"}`), Result: json.RawMessage(`{}`)}}, Answer: "ok"}}, 400)
	if _, err := (inspect.Inspector{Store: store}).EraseResource(context.Background(), "a:b"); err != nil {
		t.Fatal(err)
	}
	prefix := storage.LayerPrefix("semantic", layer.Env{ResourceID: "a:b"}.ScopeKey(layer.ScopeResource))
	if keys, _ := store.List(context.Background(), prefix); len(keys) != 0 {
		t.Errorf("after erasing %q: %v", "a:b", keys)
	}
	if got := recall(t, boundTo(t, tmpl, store, "a:b", "t-a:b"), "publish page-1"); got != "" {
		t.Errorf("after erasing %q, recall gives:\n%s", "a:b", got)
	}
	for _, u := range []string{"a/b", ""} {
		if sk := skillsOf(t, boundTo(t, tmpl, store, u, "t-"+u)); len(sk) != 1 {
			t.Errorf("erasing %q changed %q's skills: %+v", "a:b", u, sk)
		}
	}
}

// Runs of one user at once lose no success: every candidate count lands.
func TestSkillsConcurrentCandidates(t *testing.T) {
	store := storage.NewMemoryStore()
	tmpl := newSkillLayer(t, semanticmemory.Config{MaxRetries: 64})
	tools := []string{"cms_a", "cms_b", "cms_c", "cms_d", "cms_e", "cms_f"}
	one := func(tool string, n int) []cmsTurn {
		return []cmsTurn{{Thread: "t-" + tool, Q: "do " + tool, Answer: "done",
			Calls: []cmsCall{{Tool: tool, Args: json.RawMessage(`{"id":"x1"}`), Result: json.RawMessage(`{"ok":true}`)}}}}
	}
	var wg sync.WaitGroup
	for i, tool := range tools {
		wg.Go(func() { run(t, tmpl, store, "r", one(tool, i), 10*i) })
	}
	wg.Wait()
	for i, tool := range tools {
		run(t, tmpl, store, "r", one(tool, i), 100+10*i)
	}
	sk := skillsOf(t, boundTo(t, tmpl, store, "r", "t"))
	if len(sk) != len(tools) {
		t.Errorf("%d skills, want %d: a concurrent success was lost", len(sk), len(tools))
	}
}

// A later matching request recalls the skill; an unrelated one does
// not. The namer, when set, names the skill; when it fails, the
// deterministic name stays.
func TestSkillRecallAndNamer(t *testing.T) {
	for _, tt := range []struct {
		name  string
		namer semanticmemory.SkillNamer
		want  string
	}{
		{"deterministic", nil, `Skill "publish page"`},
		{"model", semanticmemory.ModelNamer{Model: scripted("name: Publish a page\ndescription: Fetch the page, then set its status to published.")}, `Skill "Publish a page"`},
		{"model fails", semanticmemory.ModelNamer{Model: scripted("I cannot help")}, `Skill "publish page"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := storage.NewMemoryStore()
			tmpl := newSkillLayer(t, semanticmemory.Config{Skills: semanticmemory.SkillConfig{Namer: tt.namer}})
			run(t, tmpl, store, "r", workflow(3, "t1", nil), 0)
			l := boundTo(t, tmpl, store, "r", "t2")
			if got := recall(t, l, "please publish page-900"); !strings.Contains(got, tt.want) {
				t.Errorf("recall:\n%s\nwant %s", got, tt.want)
			}
			if got := recall(t, l, "what is the weather in Lisbon"); got != "" {
				t.Errorf("an unrelated request recalls:\n%s", got)
			}
		})
	}
}

// scripted is a model that always answers text.
type scripted string

func (s scripted) GenerateContent(_ context.Context, _ []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: string(s)}}}, nil
}

func (s scripted) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, s, prompt, options...)
}

// Memory tools are not workflow steps: a turn of cms calls and a
// memorize call makes the same skill as the cms calls alone.
func TestSkillIgnoresMemoryTools(t *testing.T) {
	store := storage.NewMemoryStore()
	tmpl := newSkillLayer(t, semanticmemory.Config{})
	turns := workflow(2, "t1", func(i int, tt *cmsTurn) {
		if i == 0 {
			tt.Calls = append(tt.Calls, cmsCall{Tool: "semantic_memory_memorize", Args: json.RawMessage(`{"text":"x"}`), Result: json.RawMessage(`"remembered fact f1"`)},
				cmsCall{Tool: "working_memory_update", Args: json.RawMessage(`{}`), Result: json.RawMessage(`"ok"`)})
		}
	})
	run(t, tmpl, store, "r", turns, 0)
	sk := skillsOf(t, boundTo(t, tmpl, store, "r", "t1"))
	if len(sk) != 1 || len(sk[0].Skill.Steps) != 2 || slices.ContainsFunc(sk[0].Skill.Steps, func(s semanticmemory.SkillStep) bool { return !strings.HasPrefix(s.Tool, "cms_") }) {
		t.Errorf("skills = %+v, want the publish skill of two cms steps", sk)
	}
}

// The candidates a scope counts are bounded, and so is what a turn
// writes: many sequences seen once each keep at most MaxCandidates.
func TestSkillCandidatesBounded(t *testing.T) {
	store := storage.NewMemoryStore()
	tmpl := newSkillLayer(t, semanticmemory.Config{Skills: semanticmemory.SkillConfig{MaxCandidates: 16}})
	var turns []cmsTurn
	for i := range 200 {
		turns = append(turns, cmsTurn{Thread: "t1", Q: fmt.Sprintf("do thing %d", i), Answer: "done",
			Calls: []cmsCall{{Tool: fmt.Sprintf("cms_tool%d", i), Args: json.RawMessage(`{"id":"x1"}`), Result: json.RawMessage(`{}`)}}})
	}
	run(t, tmpl, store, "r", turns, 0)
	ctx := context.Background()
	keys, err := store.List(ctx, storage.LayerPrefix("semantic", layer.Env{ResourceID: "r"}.ScopeKey(layer.ScopeResource)))
	if err != nil {
		t.Fatal(err)
	}
	entries, records := 0, 0
	for _, k := range keys {
		if !strings.Contains(k, "skill-candidates") {
			continue
		}
		it, err := store.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		var rec struct{ C []json.RawMessage }
		if err := json.Unmarshal(it.Value, &rec); err != nil {
			t.Fatal(err)
		}
		records++
		entries += len(rec.C)
		if len(rec.C) > 2 || len(it.Value) > 1024 {
			t.Errorf("%s: %d entries, %d bytes; want at most 2 entries (16/8) and 1 KiB", k, len(rec.C), len(it.Value))
		}
	}
	if records == 0 || entries > 16 {
		t.Errorf("%d candidates in %d records, want at most 16", entries, records)
	}
	if sk := skillsOf(t, boundTo(t, tmpl, store, "r", "t1")); len(sk) != 0 {
		t.Errorf("sequences seen once made skills: %d", len(sk))
	}
}

// A candidate record that cannot be read is replaced (its counts are
// rebuilt by later successes); one from a newer version of the package
// fails Store with ErrVersion and is left as it was, and so are the
// facts.
func TestSkillCandidatesUnreadable(t *testing.T) {
	ctx := context.Background()
	scope := layer.Env{ResourceID: "r"}.ScopeKey(layer.ScopeResource)
	putAll := func(store storage.Store, value string) {
		for b := range 8 {
			if _, err := store.Put(ctx, storage.LayerKey("semantic", scope, fmt.Sprint("skill-candidates-", b)), []byte(value), storage.AnyVersion); err != nil {
				t.Fatal(err)
			}
		}
	}
	store := storage.NewMemoryStore()
	tmpl := newSkillLayer(t, semanticmemory.Config{})
	putAll(store, "{not json")
	run(t, tmpl, store, "r", workflow(2, "t1", nil), 0)
	if sk := skillsOf(t, boundTo(t, tmpl, store, "r", "t1")); len(sk) != 1 {
		t.Errorf("after unreadable candidates: %d skills, want 1", len(sk))
	}

	store = storage.NewMemoryStore()
	l := boundTo(t, tmpl, store, "r", "t1")
	remember(t, l, "preference", "The user likes short titles.")
	putAll(store, `{"v":99,"c":[]}`)
	var err error
	for _, st := range workflow(1, "t1", nil)[0].steps(0) {
		err = l.Store(ctx, st)
	}
	if !errors.Is(err, semanticmemory.ErrVersion) {
		t.Errorf("Store over a newer candidate record = %v, want ErrVersion", err)
	}
	it, _ := store.Get(ctx, storage.LayerKey("semantic", scope, "skill-candidates-0"))
	if string(it.Value) != `{"v":99,"c":[]}` {
		t.Errorf("the newer record was changed: %s", it.Value)
	}
	if facts, _ := l.Facts(ctx); len(facts) != 1 {
		t.Errorf("%d facts, want the 1 stored before", len(facts))
	}
}
