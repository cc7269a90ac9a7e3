package service

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/internal/writepath"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
)

// ErrInvalidMessage means a message given to AddMessages has a role
// other than "user" and "assistant". Nothing was added.
var ErrInvalidMessage = errors.New("service: invalid message")

// Roles of a [Message].
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one message of a conversation: who said it (RoleUser or
// RoleAssistant) and its text.
type Message struct {
	Role string
	Text string
}

// AddMessages hands a conversation to the extractors (Config.Extractors),
// bound to user, as an agent hands each turn to its layers: a user
// message and the assistant's answer make one turn (layer.Turn), masked
// by Config.Redaction, given to the extractors' Store; after each turn
// the writes they propose (layer.Proposer) are masked, routed by
// Config.Router, kept and audited as the loop keeps them. A proposal
// that cannot be kept is logged and audited, and the others are kept.
// With Config.Facts.Consolidate, semantic memory's model-based
// consolidation reads each turn too (see semanticmemory.Consolidator),
// and AddMessages waits for it. It returns the facts of this namespace
// the conversation wrote or superseded, their last versions, in the
// order first written. Without extractors or a consolidating model it
// is an error wrapping [ErrNoExtractor]; a message of another role one
// wrapping [ErrInvalidMessage]; both add nothing. When ctx ends before
// the consolidation does, the facts it wrote are kept and the error
// wraps ctx's.
func (m *Memory) AddMessages(ctx context.Context, user string, msgs ...Message) ([]Fact, error) {
	if len(m.cfg.Extractors) == 0 && m.cfg.Facts.Consolidate == nil {
		return nil, fmt.Errorf("%w: give Config.Extractors layers that propose facts (layer.Proposer), or Config.Facts.Consolidate a model", ErrNoExtractor)
	}
	turns, err := turnsOf(msgs)
	if err != nil {
		return nil, fmt.Errorf("service: add messages: %w", err)
	}
	s, err := m.open(ctx, user, true)
	if err != nil {
		return nil, fmt.Errorf("service: add messages: %w", err)
	}
	defer s.close(ctx)
	k, proposers := s.keeper(), writepath.Proposers(s.stack)
	for _, t := range turns {
		if err := s.stack.Store(ctx, m.rd.Turn(t, &s.n)); err != nil {
			return nil, fmt.Errorf("service: add messages: turn %d: %w", t.Step, err)
		}
		k.KeepProposals(ctx, proposers, t.Step, m.rd, &s.n)
	}
	if err := writepath.TakeReported(ctx, &s.audit, writepath.Reporters(s.stack), 0, true); err != nil {
		return nil, fmt.Errorf("service: add messages: %w", err)
	}
	facts, err := s.written(ctx)
	if err != nil {
		return nil, fmt.Errorf("service: add messages: kept, but %w", err)
	}
	return facts, nil
}

// turnsOf pairs msgs into turns: a user message opens a turn, the
// assistant's answer closes it; an answer without a question is a turn
// of its own.
func turnsOf(msgs []Message) ([]layer.Turn, error) {
	var turns []layer.Turn
	open := false // the last turn has a query and no response yet
	for i, msg := range msgs {
		switch msg.Role {
		case RoleUser:
			turns = append(turns, layer.Turn{Step: len(turns), Query: msg.Text})
			open = true
		case RoleAssistant:
			if !open {
				turns = append(turns, layer.Turn{Step: len(turns)})
			}
			turns[len(turns)-1].Response = msg.Text
			open = false
		default:
			return nil, fmt.Errorf("%w: message %d has role %q: want %q or %q", ErrInvalidMessage, i, msg.Role, RoleUser, RoleAssistant)
		}
	}
	return turns, nil
}

// written returns the last versions of the facts of this namespace the
// session's audit says were written, in the order first written; a fact
// deleted since is left out.
func (s *session) written(ctx context.Context) ([]Fact, error) {
	ids := writtenIDs(s.audit.Entries(), s.m.ns)
	out := make([]Fact, 0, len(ids))
	for _, id := range ids {
		f, err := s.facts.Get(ctx, id)
		if errors.Is(err, semanticmemory.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// writtenIDs returns the IDs of the facts of layer ns that entries say
// were written, in the order first written.
func writtenIDs(entries []audit.Entry, ns string) []string {
	var ids []string
	for _, e := range entries {
		if e.Op == audit.OpWrite && e.Layer == ns && e.Key != "" && !slices.Contains(ids, e.Key) {
			ids = append(ids, e.Key)
		}
	}
	return ids
}
