// Package recalleval measures how well a [storage.Searcher] finds the turns
// of long conversations that answer later questions.
//
// The evaluation set lives in the repository's testdata/recalleval
// directory (its README.md describes the format): long multi-session
// conversations, one document per turn, and questions, each with the turns
// that answer it (its evidence). A question is lexical when it shares a
// content word with its evidence, and paraphrased when it shares none.
//
// [Run] indexes every turn of every conversation in a searcher, one
// collection per conversation, asks each question of its conversation's
// collection, and reports evidence recall at several k, split by kind:
//
//	set, err := recalleval.Load("testdata/recalleval")
//	res, err := recalleval.Run(ctx, searcher, set, nil, 5, 10, 25)
//	fmt.Println(res.Recall(recalleval.Lexical, 10))
//
// The runner is the test and benchmark of this package; see eval_test.go.
package recalleval

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/memlayer/memlayer/storage"
)

// Kind says how a question relates to the words of its evidence.
type Kind string

const (
	// Lexical questions share at least one content word with their
	// evidence.
	Lexical Kind = "lexical"
	// Paraphrase questions share no content word with their evidence:
	// only meaning links them.
	Paraphrase Kind = "paraphrase"
)

// Turn is one message of a conversation.
type Turn struct {
	// Conv names the conversation, such as "c01".
	Conv string `json:"conv"`
	// ID names the turn across the set, such as "c01-t0042".
	ID string `json:"id"`
	// Session counts the conversation's sessions from 1; sessions are
	// separated by gaps of hours to weeks.
	Session int `json:"session"`
	// Time is when the turn was sent, RFC 3339.
	Time string `json:"time"`
	// Speaker is "user" or "assistant".
	Speaker string `json:"speaker"`
	// Text is the message.
	Text string `json:"text"`
}

// Question is asked of one conversation after its last turn.
type Question struct {
	ID   string `json:"id"`
	Conv string `json:"conv"`
	// Text is the question as a user would ask it.
	Text string `json:"question"`
	// Evidence are the IDs of the turns that together answer it.
	Evidence []string `json:"evidence"`
	Kind     Kind     `json:"kind"`
}

// Set is an evaluation set.
type Set struct {
	Turns     []Turn
	Questions []Question
}

// Files of a set's directory.
const (
	TurnsFile     = "turns.jsonl"
	QuestionsFile = "questions.jsonl"
)

// Load reads the set in dir and checks that every question names its
// conversation's turns as evidence.
func Load(dir string) (*Set, error) {
	var s Set
	if err := readJSONL(filepath.Join(dir, TurnsFile), &s.Turns); err != nil {
		return nil, err
	}
	if err := readJSONL(filepath.Join(dir, QuestionsFile), &s.Questions); err != nil {
		return nil, err
	}
	conv, err := turnConversations(s.Turns)
	if err != nil {
		return nil, err
	}
	for _, q := range s.Questions {
		if err := checkQuestion(q, conv); err != nil {
			return nil, err
		}
	}
	return &s, nil
}

// turnConversations returns the conversation of each turn by its ID, or
// an error for a turn without an ID or conversation, or listed twice.
func turnConversations(turns []Turn) (map[string]string, error) {
	conv := make(map[string]string, len(turns))
	for _, t := range turns {
		if t.ID == "" || t.Conv == "" {
			return nil, fmt.Errorf("recalleval: turn %q has no ID or conversation", t.ID)
		}
		if _, dup := conv[t.ID]; dup {
			return nil, fmt.Errorf("recalleval: turn %q appears twice", t.ID)
		}
		conv[t.ID] = t.Conv
	}
	return conv, nil
}

// checkQuestion checks that q is of a known kind and names turns of its
// conversation (conv: by turn ID) as evidence.
func checkQuestion(q Question, conv map[string]string) error {
	if q.Kind != Lexical && q.Kind != Paraphrase {
		return fmt.Errorf("recalleval: question %q has kind %q", q.ID, q.Kind)
	}
	if len(q.Evidence) == 0 {
		return fmt.Errorf("recalleval: question %q has no evidence", q.ID)
	}
	for _, id := range q.Evidence {
		if c, ok := conv[id]; !ok || c != q.Conv {
			return fmt.Errorf("recalleval: question %q names turn %q, not a turn of %q", q.ID, id, q.Conv)
		}
	}
	return nil
}

func readJSONL[T any](path string, out *[]T) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("recalleval: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return fmt.Errorf("recalleval: %s line %d: %w", path, line, err)
		}
		*out = append(*out, v)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("recalleval: %s: %w", path, err)
	}
	return nil
}

// Collection is the name of the collection a conversation is indexed in.
func Collection(conv string) string {
	return storage.IndexName("recalleval", conv, "turns")
}

// Embedder turns texts into vectors; langchaingo's embeddings.Embedder
// has this method set. A nil Embedder means sparse retrieval only.
type Embedder interface {
	EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error)
	EmbedQuery(ctx context.Context, text string) ([]float32, error)
}

// Index adds every turn of s to searcher, one collection per
// conversation, dropping each collection first. With an embedder, each
// turn is indexed with its vector too.
func Index(ctx context.Context, searcher storage.Searcher, s *Set, emb Embedder) error {
	byConv, order := documents(s.Turns)
	for _, c := range order {
		if err := searcher.Drop(ctx, Collection(c)); err != nil {
			return fmt.Errorf("recalleval: drop %s: %w", c, err)
		}
		for docs := range slices.Chunk(byConv[c], 100) {
			if err := embed(ctx, emb, c, docs); err != nil {
				return err
			}
			if err := searcher.Index(ctx, Collection(c), docs...); err != nil {
				return fmt.Errorf("recalleval: index %s: %w", c, err)
			}
		}
	}
	return nil
}

// documents returns the turns as documents, by conversation, and the
// conversations in the order they first appear.
func documents(turns []Turn) (map[string][]storage.Document, []string) {
	byConv := map[string][]storage.Document{}
	var order []string
	for _, t := range turns {
		if _, ok := byConv[t.Conv]; !ok {
			order = append(order, t.Conv)
		}
		byConv[t.Conv] = append(byConv[t.Conv], storage.Document{
			ID:     t.ID,
			Text:   t.Text,
			Fields: map[string]string{"speaker": t.Speaker, "session": strconv.Itoa(t.Session)},
		})
	}
	return byConv, order
}

// embed sets the vectors of docs, turns of conversation conv, with emb;
// a nil emb sets none.
func embed(ctx context.Context, emb Embedder, conv string, docs []storage.Document) error {
	if emb == nil {
		return nil
	}
	texts := make([]string, len(docs))
	for i, d := range docs {
		texts[i] = d.Text
	}
	vecs, err := emb.EmbedDocuments(ctx, texts)
	if err != nil {
		return fmt.Errorf("recalleval: embed %s: %w", conv, err)
	}
	if len(vecs) != len(docs) {
		return fmt.Errorf("recalleval: embed %s: %d vectors for %d texts", conv, len(vecs), len(docs))
	}
	for i := range docs {
		docs[i].Vector = vecs[i]
	}
	return nil
}

// Result holds the mean evidence recall of each kind of question at each k.
type Result struct {
	// Ks are the cut-offs measured, ascending.
	Ks []int
	// Count is the number of questions of each kind.
	Count map[Kind]int
	// sum[kind][i] adds up the recall at Ks[i] of the kind's questions.
	sum map[Kind][]float64
}

// Recall returns the mean evidence recall at k of the questions of kind,
// or of all questions when kind is empty. A question's evidence recall at
// k is the share of its evidence turns among the first k hits. It is NaN
// when k was not measured or no question is of kind.
func (r Result) Recall(kind Kind, k int) float64 {
	i := slices.Index(r.Ks, k)
	if i < 0 {
		return math.NaN()
	}
	var sum float64
	var n int
	for kd, s := range r.sum {
		if kind == "" || kd == kind {
			sum += s[i]
			n += r.Count[kd]
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// String gives every figure of r on one line.
func (r Result) String() string {
	var b strings.Builder
	for i, kind := range []Kind{Lexical, Paraphrase, ""} {
		name, n := string(kind), r.Count[kind]
		if kind == "" {
			name, n = "all", r.Count[Lexical]+r.Count[Paraphrase]
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s (%d):", name, n)
		for _, k := range r.Ks {
			fmt.Fprintf(&b, " @%d=%.3f", k, r.Recall(kind, k))
		}
	}
	return b.String()
}

// ErrNoK means Run was given no cut-off.
var ErrNoK = errors.New("recalleval: no k to measure")

// Run indexes s in searcher (see [Index]), asks every question of its
// conversation's collection for the largest of ks hits, and returns the
// evidence recall at each k. With a nil embedder retrieval is sparse;
// with one it is hybrid (the searcher fuses text and vector rankings).
func Run(ctx context.Context, searcher storage.Searcher, s *Set, emb Embedder, ks ...int) (Result, error) {
	if err := Index(ctx, searcher, s, emb); err != nil {
		return Result{}, err
	}
	return Ask(ctx, searcher, s, emb, ks...)
}

// Ask asks every question of s of a searcher that [Index] filled with the
// same embedder, and returns the evidence recall at each k.
func Ask(ctx context.Context, searcher storage.Searcher, s *Set, emb Embedder, ks ...int) (Result, error) {
	if len(ks) == 0 {
		return Result{}, ErrNoK
	}
	ks = slices.Sorted(slices.Values(ks))
	res := Result{Ks: ks, Count: map[Kind]int{}, sum: map[Kind][]float64{}}
	for _, q := range s.Questions {
		hits, err := ask(ctx, searcher, emb, q, ks[len(ks)-1])
		if err != nil {
			return Result{}, fmt.Errorf("recalleval: question %s: %w", q.ID, err)
		}
		res.add(q, hits)
	}
	return res, nil
}

// ask searches q's conversation for k hits, by q's text and, with an
// embedder, its vector.
func ask(ctx context.Context, searcher storage.Searcher, emb Embedder, q Question, k int) ([]storage.Hit, error) {
	query := storage.Query{Text: q.Text, K: k}
	if emb != nil {
		v, err := emb.EmbedQuery(ctx, q.Text)
		if err != nil {
			return nil, err
		}
		query.Vector = v
	}
	return searcher.Search(ctx, Collection(q.Conv), query)
}

// add counts question q and the evidence recall of hits at each of r.Ks.
func (r *Result) add(q Question, hits []storage.Hit) {
	if r.sum[q.Kind] == nil {
		r.sum[q.Kind] = make([]float64, len(r.Ks))
	}
	r.Count[q.Kind]++
	for i, k := range r.Ks {
		found := 0
		for _, h := range hits[:min(k, len(hits))] {
			if slices.Contains(q.Evidence, h.ID) {
				found++
			}
		}
		r.sum[q.Kind][i] += float64(found) / float64(len(q.Evidence))
	}
}
