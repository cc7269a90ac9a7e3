package history

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/memlayer/memlayer/internal/lexical"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt/fence"
)

// NewLayer returns the history_summary layer, whose budget is tokens plus
// what its header and fence take.
func NewLayer(tokens int) *Layer { return &Layer{tokens: tokens} }

// Set makes text the summary the layer shows.
func (l *Layer) Set(text string) { l.text.Store(&text) }

// Layer is the history_summary layer of a run: its block is the summary
// the step uses, set by the run with Set before the layers are recalled.
// Set is atomic: a Recall that outlived its timeout may still read it.
type Layer struct {
	text   atomic.Pointer[string]
	tokens int
	fit    fitted // the block last recalled, fitted to its step's budget

	// mu guards the parts of the summary last split, for Candidates and
	// block: a summary changes far less often than a step recalls it.
	mu     sync.Mutex
	split  string
	parts  []summaryPart
	corpus *lexical.Corpus
}

// partsOf returns the parts of summary s and a BM25 corpus of them, split
// once per summary (the run stores each step's summary anew, the same
// text until a new summary is committed).
func (l *Layer) partsOf(s *string) ([]summaryPart, *lexical.Corpus) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.corpus == nil || l.split != *s {
		l.split, l.parts, l.corpus = *s, summaryParts(*s), &lexical.Corpus{}
		for _, p := range l.parts {
			l.corpus.Add(p.key, p.text)
		}
	}
	return l.parts, l.corpus
}

// Spec is the layer's spec: execution scope, a budget of SummaryTokens
// (the run takes it from the history's share, not the layers').
//
// The budget is SummaryTokens plus what the block's header and fence
// take, so a summary that fills SummaryTokens is never left out.
func (l *Layer) Spec() layer.Spec {
	return layer.Spec{ID: SummaryLayerID, Slot: SlotHistorySummary, Scope: layer.ScopeExecution,
		Budget: layer.Budget{Max: l.tokens + summaryOverhead}}
}

// summaryHeader introduces the summary block.
const summaryHeader = "Summary of the earlier conversation, older than the messages below (IDs are exact):\n"

// summaryOverhead is what the header and the fence add to a summary, by
// the default estimate, with room for a counter that counts them higher.
var summaryOverhead = 2 * layer.Query{}.Count(summaryHeader+fence.Wrap(fence.Tag(SummaryLayerID), ""))

// Recall returns the summary the step uses, if there is one. A summary
// whose block passes q.Budget is shown fitted to it (see [Fit]): each
// part at the finest resolution that fits, the newest the finest.
func (l *Layer) Recall(_ context.Context, q layer.Query) ([]layer.Item, error) {
	s := l.text.Load()
	if s == nil || *s == "" {
		return nil, nil
	}
	text, tokens := l.fit.within(*s, q)
	if text == "" {
		return nil, nil
	}
	return []layer.Item{{Text: text, Tokens: tokens}}, nil
}

// Whole is the summary's block: its header and the fenced summary; empty
// when there is no summary.
func (l *Layer) Whole() string {
	s := l.text.Load()
	if s == nil {
		return ""
	}
	return summaryBlock(*s)
}

// summaryPart is one candidate of the summary in scored assembly: a
// line of it, or one entity of its "Entities seen earlier" line.
type summaryPart struct {
	key    string // "line-<n>" or "entity-<n>", n its place in the summary
	text   string
	entity bool
}

// summaryParts splits a summary into its candidates, in its order: the
// entities of a leading "Entities seen earlier" line one by one, then
// every other non-empty line.
func summaryParts(text string) []summaryPart {
	var parts []summaryPart
	for i, ln := range strings.Split(text, "\n") {
		switch {
		case i == 0 && strings.HasPrefix(ln, entitiesHeader):
			for _, e := range strings.Split(strings.TrimPrefix(ln, entitiesHeader), "; ") {
				if e != "" {
					parts = append(parts, summaryPart{key: "entity-" + strconv.Itoa(len(parts)), text: e, entity: true})
				}
			}
		case strings.TrimSpace(ln) != "":
			parts = append(parts, summaryPart{key: "line-" + strconv.Itoa(len(parts)), text: ln})
		}
	}
	return parts
}

// Candidates offers the summary to scored assembly (prompt.Assemble)
// in parts, so that when the shared pool is short the parts most like the
// user's message stay: each entity of the "Entities seen earlier" line
// (an ID and its name) and each other line is a candidate. Similarity is
// BM25 over the parts, divided by the query's top score; importance is
// 1, the most a fact can have (the summary's IDs are how the agent
// resolves what the window no longer shows; at 0.5 the 50-turn CMS
// conversation lost references at budgets where it loses none at 1);
// the run gives them the step's time (the summary is as recent as the
// conversation it is part of). The
// parts won are shown in the summary's own order (see RenderBlock), so the
// summary still reads from oldest to newest.
func (l *Layer) Candidates(_ context.Context, q layer.Query) ([]layer.Candidate, error) {
	s := l.text.Load()
	if s == nil || *s == "" {
		return nil, nil
	}
	parts, corpus := l.partsOf(s)
	sim := make([]float64, len(parts))
	for _, h := range corpus.Rank(q.Text) {
		sim[h.Doc] = h.Similarity
	}
	out := make([]layer.Candidate, len(parts))
	for i, p := range parts {
		// A part takes its separator with it: "; " after an entity, a
		// line break after a line.
		sep := "\n"
		if p.entity {
			sep = "; "
		}
		out[i] = layer.Candidate{Layer: SummaryLayerID, Key: p.key, Text: p.text, Tokens: q.Count(p.text + sep),
			Similarity: sim[i], Importance: 1, Source: "summary"}
	}
	return out, nil
}

// RenderBlock renders the parts of the summary scored assembly packed,
// in the summary's order, as Recall renders the whole: under the block's
// header, the entities first on one line, then the other lines. With
// every part, it is Recall's block.
func (l *Layer) RenderBlock(won []layer.Candidate) string {
	keys := make(map[string]bool, len(won))
	for _, c := range won {
		keys[c.Key] = true
	}
	return l.block(keys)
}

// block renders the parts of the summary whose keys won (see
// RenderBlock). It is empty when none did.
func (l *Layer) block(won map[string]bool) string {
	s := l.text.Load()
	if s == nil {
		return ""
	}
	parts, _ := l.partsOf(s)
	var ents, lines []string
	for _, p := range parts {
		switch {
		case !won[p.key]:
		case p.entity:
			ents = append(ents, p.text)
		default:
			lines = append(lines, p.text)
		}
	}
	if len(ents) > 0 {
		lines = slices.Insert(lines, 0, entitiesHeader+strings.Join(ents, "; "))
	}
	if len(lines) == 0 {
		return ""
	}
	return summaryHeader + fence.Wrap(fence.Tag(SummaryLayerID), strings.Join(lines, "\n"))
}

// OnSpawn gives a child agent no summary: its history is its own.
func (l *Layer) OnSpawn(context.Context, layer.Env) (layer.Layer, error) { return nil, nil }
