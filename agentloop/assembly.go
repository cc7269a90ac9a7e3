package agentloop

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/history"
	"github.com/memlayer/memlayer/internal/writepath"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/prompt/fence"
)

// AssemblyConfig configures scored context assembly, which is on unless
// Disabled. The layers that offer candidates (layer.CandidateSource, as
// episodic and semantic memory are) do not fill budgets of their
// own: their candidates compete for one pool, the sum of what the budget
// allocation gave them, scored by prompt.Assemble (similarity, recency,
// importance, redundancy against what is already selected) and packed
// greedily. A layer offers only what its own Recall would choose from
// (episodic memory its MaxRecall best episodes, semantic memory its TopK
// best facts), so assembly never shows more than the layers would on
// their own; when the pool is smaller than that, the best candidates of
// all of them win. A candidate whose Key is the ID of a tool call whose
// whole result the step's history carries (an episode of that call) is
// not packed: the prompt says it already. Each of them shows what it won
// as one block in its slot. Assembly chooses the items of a block, never
// its framing: a layer that is a layer.BlockRenderer (episodic and
// semantic memory, the summary) renders the block of what it won, with
// its header and instructions and in its own order (the episodes oldest
// first under their header); any other shows them one per line, best
// first, fenced with its tag. A block's header and fence take tokens of
// the pool before any item does. With room for every candidate, each
// block is what the layer's Recall sends, except for the episodes the
// history carries whole and the near-duplicates prompt.Assemble skips
// (see Scoring.Novelty).
//
// With SummaryCandidates, the history summary is a candidate layer too:
// each entity of its "Entities seen earlier" line and each other line is
// a candidate (see the history_summary layer's Candidates), it brings to
// the pool what its whole block takes (its budget at most), and the
// parts it wins are shown in the summary's own order. With room for all,
// that is the whole summary, as it is stored. Its audit entry counts its
// parts and lists only those left out.
//
// Every other layer (the scratchpad, the entities, instructions, and by
// default the summary) is pinned: it keeps its slot and budget. The same
// inputs, at the same Scoring.Now, give the same prompt.
type AssemblyConfig struct {
	// Disabled turns scored assembly off: every layer fills its own
	// budget with its Recall.
	Disabled bool
	// Scoring weighs the candidates; the zero value is
	// prompt.DefaultScoring (its zero Now is the time of each step).
	Scoring prompt.Scoring
	// SummaryCandidates puts the history summary in scored assembly, part
	// by part (see above), instead of keeping it whole in its own budget.
	// With the layers' default budgets the pool holds every part and the
	// prompt is the same. With a short pool, the parts least like the
	// user's message give way to better facts and episodes: fewer tokens,
	// but an ID that no message names can leave the prompt. Over the
	// 50-turn CMS conversation with episodic memory at 100 tokens and
	// semantic memory at 33, it sent 6% fewer tokens, but the ID of the
	// site every page is made in left the prompt, and 5 of 56
	// references failed; none fail with the summary pinned
	// (TestMemory100). Off by default.
	SummaryCandidates bool
}

// assembled recalls the run's layers for q: the pinned ones through the
// stack, the candidate layers by scored assembly when it is on. It
// returns the blocks in slot order and each layer's share (see
// prompt.LayerBudget; Used is filled in by the caller). msgs is the
// history the step projects, a suffix of r.msgs (its window when
// windowed).
func (r *run) assembled(ctx context.Context, q layer.Query, msgs []llms.MessageContent) ([]layer.Recalled, map[string]int) {
	ids := r.assemblyIDs()
	r.assembledIDs = ids
	if len(ids) == 0 {
		recalled, _ := r.stack.Recall(ctx, q, r.alloc.Layers)
		return recalled, r.alloc.Layers
	}
	// The candidates answer the query the layers' Recall would get: the
	// situation, not the input alone (Stack.Recall then keeps it).
	q.Situation = r.stack.Situation(ctx, q)
	budgets, shares := maps.Clone(r.alloc.Layers), maps.Clone(r.alloc.Layers)
	total := r.pool(q, ids)
	for _, id := range ids {
		budgets[id] = -1   // not recalled: assembled
		shares[id] = total // each may take the whole pool, fences included
	}
	sc := r.a.cfg.Assembly.Scoring
	if sc.Now.IsZero() {
		sc.Now = time.Now() // as Assemble would, once for the audit's scores too
	}
	cands, frames := r.gather(ctx, q, ids, sc)
	shown := r.sentCalls(msgs)
	fresh := slices.DeleteFunc(slices.Clone(cands), func(c layer.Candidate) bool { return c.Layer != history.SummaryLayerID && shown[c.Key] })
	sel := prompt.Assemble(fresh, max(total-frames, 0), sc)
	recalled, _ := r.stack.Recall(ctx, q, budgets)
	byID := make(map[string]layer.Recalled, len(recalled)+len(ids))
	for _, rc := range recalled {
		byID[rc.ID] = rc
	}
	tokens, blocks := r.packed(ctx, q, ids, cands, sel)
	for id, text := range blocks {
		byID[id] = layer.Recalled{ID: id, Items: []layer.Item{{Text: text, Tokens: tokens[id]}}}
	}
	r.auditAssembly(q.Step, ids, cands, sel, sc, tokens)
	out := make([]layer.Recalled, 0, len(byID))
	for _, spec := range specs(r.stack) {
		if rc, ok := byID[spec.ID]; ok {
			out = append(out, rc)
		}
	}
	return out, shares
}

// assemblyIDs returns the IDs of the layers whose candidates compete in
// the step's scored assembly, sorted; none when assembly is off or no
// layer has candidates to offer.
func (r *run) assemblyIDs() []string {
	a := r.a
	if a.cfg.Assembly.Disabled {
		return nil
	}
	if r.sources == nil {
		r.sources, r.renderers = r.candidateSources()
	}
	_, summary := r.sources[history.SummaryLayerID]
	noSummary := summary && r.summary.Whole() == "" // nothing to offer yet
	if len(r.sources) == 0 || noSummary && len(r.sources) == 1 {
		return nil
	}
	ids := slices.Sorted(maps.Keys(r.sources))
	if noSummary {
		ids = slices.DeleteFunc(ids, func(id string) bool { return id == history.SummaryLayerID })
	}
	return ids
}

// candidateSources returns the stack's layers that offer candidates for
// scored assembly, by ID (the summary layer only when
// Assembly.SummaryCandidates is set), and those of them that render
// their own blocks.
func (r *run) candidateSources() (map[string]layer.CandidateSource, map[string]layer.BlockRenderer) {
	sources := map[string]layer.CandidateSource{}
	var renderers map[string]layer.BlockRenderer // made for the first one
	for _, l := range r.stack.Layers() {
		src, ok := layer.As[layer.CandidateSource](l)
		if !ok {
			continue
		}
		if id := l.Spec().ID; id != history.SummaryLayerID || r.a.cfg.Assembly.SummaryCandidates {
			sources[id] = src
			if br, ok := layer.As[layer.BlockRenderer](l); ok {
				if renderers == nil {
					renderers = map[string]layer.BlockRenderer{}
				}
				renderers[id] = br
			}
		}
	}
	return sources, renderers
}

// pool returns the tokens the layers ids share: the sum of their
// allocations.
func (r *run) pool(q layer.Query, ids []string) int {
	pool := 0
	for _, id := range ids {
		share := r.alloc.Layers[id]
		if id == history.SummaryLayerID {
			// The summary brings what its block takes, its allocation
			// at most: the allocation was the history's, and what the
			// summary does not use goes back to the history.
			share = min(share, q.Count(r.summary.Whole()))
		}
		pool += share
	}
	return pool
}

// gather returns the candidates the layers ids offer for q, and the
// tokens their blocks' frames take of the pool: what each block of all
// its candidates takes beyond the candidates (its header, fence and line
// breaks). A layer whose Candidates fails is logged and offers none.
func (r *run) gather(ctx context.Context, q layer.Query, ids []string, sc prompt.Scoring) (cands []layer.Candidate, frames int) {
	for _, id := range ids {
		cs, err := r.candidates(ctx, id, q)
		if err != nil {
			r.a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "agentloop: candidates", slog.String("layer", id), slog.Any("error", err))
			continue
		}
		if id == history.SummaryLayerID {
			// The summary is as recent as the conversation it is part of.
			for i := range cs {
				cs[i].Time = sc.Now
			}
		}
		cands = append(cands, cs...)
		if len(cs) == 0 {
			continue
		}
		// The parts, counted one by one, may add up to more or less than
		// the block they make: the pool takes the difference, so all of
		// a layer's candidates take what its block of them does.
		frames += q.Count(r.block(ctx, id, cs))
		for _, c := range cs {
			frames -= c.Tokens
		}
	}
	return cands, frames
}

// packed returns the block of each layer of ids that won some of sel,
// and the tokens each block takes, by layer ID. A layer's block shows
// what it won in the order it offered them (cands' order), as the layer
// renders it (layer.BlockRenderer), else best first.
func (r *run) packed(ctx context.Context, q layer.Query, ids []string, cands []layer.Candidate, sel []prompt.Selected) (map[string]int, map[string]string) {
	won := map[string][]layer.Candidate{}
	for _, s := range sel {
		won[s.Layer] = append(won[s.Layer], s.Candidate)
	}
	offered := make(map[[2]string]int, len(cands))
	for i, c := range cands {
		offered[[2]string{c.Layer, c.Key}] = i
	}
	tokens := make(map[string]int, len(ids))
	blocks := make(map[string]string, len(ids))
	for _, id := range ids {
		w := won[id]
		if len(w) == 0 {
			continue
		}
		if r.renderers[id] != nil {
			slices.SortStableFunc(w, func(a, b layer.Candidate) int {
				return cmp.Compare(offered[[2]string{a.Layer, a.Key}], offered[[2]string{b.Layer, b.Key}])
			})
		}
		if text := r.block(ctx, id, w); text != "" {
			blocks[id], tokens[id] = text, q.Count(text)
		}
	}
	return tokens, blocks
}

// block returns layer id's block of the candidates won: as the layer
// renders it, else (or when its RenderBlock panics) one line each, in
// won's order, fenced with the layer's tag.
func (r *run) block(ctx context.Context, id string, won []layer.Candidate) (text string) {
	if br := r.renderers[id]; br != nil {
		ok := func() (ok bool) {
			defer func() {
				if p := recover(); p != nil {
					r.a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "agentloop: render block", slog.String("layer", id), slog.Any("error", fmt.Errorf("%w: %v", layer.ErrPanic, p)))
				}
			}()
			text = br.RenderBlock(won)
			return true
		}()
		if ok {
			return text
		}
	}
	lines := make([]string, len(won))
	for i, c := range won {
		lines[i] = c.Text
	}
	return fence.Wrap(fence.Tag(id), strings.Join(lines, "\n"))
}

// sentCalls returns the IDs of the tool calls in msgs (a suffix of
// r.msgs) whose results the step surely sends whole: those in the newest
// messages that fit the history's own allocation, which the history
// always gets (it may get more, never less), neither compacted nor cut
// (their episodes say what the history no longer does). Usually all of
// msgs fits, which the cached counts tell without projecting.
func (r *run) sentCalls(msgs []llms.MessageContent) map[string]bool {
	c := r.a.cfg.Counter
	total := 0
	for _, n := range r.est.counts(c, r.msgs)[len(r.msgs)-len(msgs):] {
		total += n
	}
	if total > r.alloc.History {
		msgs = prompt.ProjectHistory(msgs, r.alloc.History, c)
	}
	ids := map[string]bool{}
	for _, m := range msgs {
		for _, p := range m.Parts {
			if res, ok := p.(llms.ToolCallResponse); ok && !strings.HasPrefix(res.Content, compactedPrefix) &&
				!strings.HasSuffix(res.Content, cutNote+res.ToolCallID+"]") {
				ids[res.ToolCallID] = true
			}
		}
	}
	return ids
}

// candidates calls a layer's Candidates, a panic recovered as an error.
func (r *run) candidates(ctx context.Context, id string, q layer.Query) (cs []layer.Candidate, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", layer.ErrPanic, p)
		}
	}()
	cs, err = r.sources[id].Candidates(ctx, q)
	for i := range cs {
		cs[i].Layer = id // a layer speaks for itself only
	}
	return cs, err
}

// budgetStatus returns each layer's share of the step's prompt and what
// its block took, in slot order: the layers the allocation gave tokens,
// whether or not they recalled anything.
func (r *run) budgetStatus(recalled []layer.Recalled, shares map[string]int) []prompt.LayerBudget {
	used := make(map[string]int, len(recalled))
	for _, rc := range recalled {
		used[rc.ID] += writepath.RecallTokens(rc.Items, r.a.cfg.Counter)
	}
	out := make([]prompt.LayerBudget, 0, len(shares))
	for _, spec := range specs(r.stack) {
		share, ok := shares[spec.ID]
		if !ok {
			continue
		}
		u := used[spec.ID]
		out = append(out, prompt.LayerBudget{Layer: spec.ID, Allocated: share, Used: u, Left: max(share-u, 0), Assembled: slices.Contains(r.assembledIDs, spec.ID)})
	}
	return out
}
