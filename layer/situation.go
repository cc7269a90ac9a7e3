package layer

import (
	"context"
	"strings"
)

// Situator is an optional interface that may be implemented by a layer
// whose state says what the run is about: a scratchpad's goal and plan,
// the names the recent turns touched. Before each Recall the [Stack]
// calls every Situator in slot order and puts the parts, after the
// user's message, in [Query.Situation], which layers that search
// long-term memory query with. A layer that is not a Situator adds
// nothing to the situation.
//
// Situation must be deterministic (the same state gives the same text),
// short (a few hundred bytes, at most 1 KiB kept: it is a search
// query, not a prompt), and
// must not change the layer's state. It gets the user's message in
// q.Text. The stack serialises it with the layer's other hooks and
// bounds it by the layer's Recall timeout; a failure is reported and
// leaves the layer's part out.
type Situator interface {
	Situation(ctx context.Context, q Query) (string, error)
}

// maxSituationPart is the most bytes of one layer's part of the
// situation the stack keeps; a longer part is cut at a word boundary.
const maxSituationPart = 1024

// situation joins the user's message and the layers' parts, one per
// line, each cut at maxSituationPart bytes. Empty parts are left out.
func situation(text string, parts []string) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(text))
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if len(p) > maxSituationPart {
			cut := strings.LastIndexByte(p[:maxSituationPart], ' ')
			if cut <= 0 {
				cut = maxSituationPart
				for cut > 0 && p[cut]&0xC0 == 0x80 { // not inside a rune
					cut--
				}
			}
			p = p[:cut]
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p)
	}
	return b.String()
}

func runSituation(ctx context.Context, j *job) error {
	st, _ := As[Situator](j.e.live)
	part, err := st.Situation(ctx, j.query)
	if err == nil && part != "" {
		j.items = []Item{{Text: part}}
	}
	return err
}

// Situation calls every enabled [Situator] in slot order and returns
// q.Text followed by their parts, one per line: the query [Stack.Recall]
// puts in [Query.Situation]. It is q.Text alone when no layer is a
// Situator. A failing Situator is reported and left out. Code that asks
// layers for candidates outside Recall fills Query.Situation with it.
func (s *Stack) Situation(ctx context.Context, q Query) string {
	if err := s.ready(); err != nil {
		return q.Text
	}
	b := hookBatch[Situator](s, hookSituation, runSituation, false, nil)
	if b == nil {
		return q.Text
	}
	for i := range b.jobs {
		b.jobs[i].query = q
	}
	s.runBatch(ctx, b)
	var parts []string
	for i := range b.jobs {
		if j := &b.jobs[i]; j.err == nil && len(j.items) > 0 {
			parts = append(parts, j.items[0].Text)
		}
	}
	return situation(q.Text, parts)
}
