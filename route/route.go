// Package route decides where a memory write goes, and whether it is
// kept at all.
//
// A write ([layer.Write]) is what the model asked a layer's write tool to
// keep, or what a [layer.Proposer] proposed. A [Router] sends it to a
// layer, by ID or by the sort of write the layer keeps ([layer.Keeper]),
// or refuses it. [Default] routes by the write's kind and text with no
// model call, and gates what it routes:
//
//	cfg := agentloop.Config{Model: llm, Layers: layers, Router: route.Default}
//
// # Routes
//
// A kind is first normalized ([Normalize]: "ToolResult" and
// "tool-result" are "tool_result", "skills" is "skill"). Then:
//
//	kind                                      store            why
//	----------------------------------------  ---------------  ------------------------------------------
//	thought, plan, reasoning, transient,      scratchpad       reasoning for the task at hand, replaced
//	  scratch                                                    as the task moves on
//	action, tool_result, observation,         episode log      something that happened, kept with its
//	  metric, summary, outcome, result,                          time and step
//	  event, task
//	fact, skill, preference, profile,         semantic memory  what lasts: facts about the user and the
//	  decision, note, instruction, goal,                         world, and skills (procedures that
//	  constraint                                                 worked), recalled across threads
//	user_message                              by its text      semantic memory when it states something
//	                                                             lasting about the user ("could you
//	                                                             remember I'm vegetarian?"), else the
//	                                                             episode log: see below
//	any other kind ("pattern", "todo", ...)   by its text      see below
//
// A kind the table does not know is routed by its text ([ByContent]), not
// refused: the model is rarely told the table. The first [ContentBytes]
// of the text are matched against cue words in English, Portuguese,
// Spanish, French and German, for four readings: a lasting fact
// (semantic memory), a reusable procedure, such as two tool names in a
// sequence (semantic memory, as a skill), something that happened — a
// result, an error, a measurement (the episode log) — and reasoning or a
// plan still to carry out (the scratchpad). The reading with the most
// cues wins; a text with none is a lasting fact, since a write tool is
// for what lasts. A procedure has steps in order ("then", "→", two tool
// names); one that opens on what it is for ("To ship abroad, ...") and
// is not the writer's own plan reads the more as a skill.
//
// A user's message is read by its mood first. A statement (a subject
// first: "I teach maths", "The lock needs new batteries") lasts unless it
// reads as something that happened ("I just uploaded the CVs"). A
// request (a question, or a verb first: "Turn on the heating") lasts only
// when it holds a standing wish ("always", "from now on", "remember")
// or a clause stating something of the writer's own ("Schedule them in
// the afternoon, I block mornings"). A message of neither mood is read
// by its cues.
//
// # Gating
//
// [Gate] (and so Default) also decides whether a routed write is kept.
// The keeper of the writes asks its Admit with the items the destination
// layer holds that are most like the write (its candidates for the
// write's text), and Admit measures three things ([Score]):
//
//   - [Importance]: the importance the writer gave, raised by signals in
//     the kind and text: an explicit statement by or about the user, a
//     decision, a failure, an outcome, a named entity or ID;
//   - [Novelty]: 1 − the lexical similarity (BM25, package
//     internal/lexical) of the write to the most similar stored item;
//   - the size, in estimated tokens.
//
// [Thresholds] accept a write whose importance and novelty reach their
// minimums and whose size stays within its maximum; a write that does not
// pass is refused, the reason naming the measure (and, for a
// near-duplicate, the stored item it restates). The zero Thresholds are
// documented defaults. A write is accepted exactly when its score passes,
// so the share of writes a threshold accepts is the share of scores at or
// above it.
//
// A Router of one's own can weigh anything else; a [Func] is not gated,
// and [Gate] gates any Router:
//
//	r := route.Func(func(ctx context.Context, w layer.Write) route.Route {
//		if strings.HasPrefix(w.Text, "draft:") {
//			return route.Route{Layer: layer.KeepsScratchpad, Reason: "drafts are transient"}
//		}
//		return route.Default.Route(ctx, w)
//	})
//	gated := route.Gate{Router: r, Thresholds: route.Thresholds{MinImportance: 0.5}}
package route

import (
	"context"

	"github.com/memlayer/memlayer/layer"
)

// Route is where a [Router] sends a write.
type Route struct {
	// Layer is the layer that keeps the write: a layer ID of the run's
	// stack, or a sort of write ([layer.KeepsSemantic], ...) for the
	// first layer that keeps that sort. For a sort the layer that
	// offered the write keeps, it is that layer. Empty refuses the
	// write.
	Layer string
	// Reason says why, for the audit (and, for a refusal, the model).
	Reason string
}

// A Router decides where a memory write goes, or refuses it. Route may
// be called concurrently (the tool calls of a step run concurrently); a
// panic refuses the write.
type Router interface {
	Route(ctx context.Context, w layer.Write) Route
}

// Func adapts a function to a [Router].
type Func func(ctx context.Context, w layer.Write) Route

// Route calls f.
func (f Func) Route(ctx context.Context, w layer.Write) Route { return f(ctx, w) }

// Default is the zero [Gate]: it routes a write by its kind with the
// table of the package doc, an unknown kind by its text, with no model
// call, and gates it by the default [Thresholds].
var Default Router = Gate{}

// routeByKind is Default's routing: the table, then the text.
func routeByKind(w layer.Write) Route {
	k := Normalize(w.Kind)
	if sort, ok := byKind[k]; ok {
		return Route{Layer: sort, Reason: reasons[sort]}
	}
	if k == KindUserMessage {
		return userMessage(w)
	}
	return ByContent(w)
}
