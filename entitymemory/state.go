package entitymemory

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/memlayer/memlayer/internal/jsonx"
)

// StateVersion is the version of the state format written by Snapshot and
// persisted in storage:
//
//	{"version": 2, "clock": 7, "entities": [{"type": "page",
//	  "id": "page-123", "name": "About Us", "slug": "about-us",
//	  "parent": "site-1", "seenAt": "2026-11-22T14:00:00Z", "seq": 7}, ...]}
//
// newest first. clock is the layer's logical (Lamport) clock: every
// recording of an entity takes the next value as its seq, and after a
// lost compare-and-swap race a writer continues from the larger of its
// clock and the stored one, so the entities it records next come after
// everything it has seen. The list is ordered by seq, never by seenAt:
// wall clocks of different processes disagree. seenAt only serves
// Config.TTL and the "entities" data.
//
// Version 1 ({"version": 1, "entities": [...]}, no clock or seq) and
// version 0 (a bare JSON array of entities, as written by hand or by
// tools predating the envelope, with IDs as strings or numbers and
// seenAt optional) are read and migrated: their entities, in list order,
// get seqs n down to 1 and the clock n. Later versions are refused with
// [ErrVersion]. A seenAt outside years 0-9999 (which JSON cannot
// represent) or a clock beyond 2^53 makes the state unreadable
// ([ErrCorrupt]).
const StateVersion = 2

// maxClock bounds a stored clock or seq, so that counting on from it can
// never wrap around.
const maxClock = 1 << 53

type stateV2 struct {
	Version  int            `json:"version"`
	Clock    uint64         `json:"clock,omitempty"`
	Entities []storedEntity `json:"entities"`
}

// storedEntity reads IDs written as numbers as well as strings.
type storedEntity struct {
	Type   string     `json:"type"`
	ID     flexString `json:"id"`
	Name   string     `json:"name"`
	Slug   string     `json:"slug,omitempty"`
	Parent flexString `json:"parent,omitempty"`
	SeenAt time.Time  `json:"seenAt"`
	Seq    uint64     `json:"seq,omitempty"`
}

type flexString string

func (f *flexString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*f = flexString(s)
	case string(b) == "null":
		*f = ""
	default:
		if _, err := strconv.ParseFloat(string(b), 64); err != nil {
			return fmt.Errorf("id %s: want a string or a number", b)
		}
		*f = flexString(jsonx.Value{Raw: b, Kind: jsonx.KindNumber}.Scalar())
	}
	return nil
}

// Times a state can hold: JSON (RFC 3339) has four-digit years.
var (
	minTime = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

// clampTime returns t in UTC, moved into years 0-9999 if outside.
func clampTime(t time.Time) time.Time {
	t = t.UTC()
	switch {
	case t.Before(minTime):
		return minTime
	case t.After(maxTime):
		return maxTime
	}
	return t
}

// encodeState writes list and the logical clock in the current format.
func encodeState(list []Entity, clock uint64) []byte {
	st := stateV2{Version: StateVersion, Clock: clock, Entities: make([]storedEntity, len(list))}
	for i, e := range list {
		st.Entities[i] = storedEntity{Type: e.Type, ID: flexString(e.ID), Name: e.Name, Slug: e.Slug, Parent: flexString(e.Parent), SeenAt: clampTime(e.SeenAt), Seq: e.seq}
	}
	b, err := json.Marshal(st)
	if err != nil {
		// Every field is a string, a number or a time in range.
		panic("entitymemory: encode state: " + err.Error())
	}
	return b
}

// decodeState reads state in any supported version, cleaning every entity
// and keeping at most capacity of them, newest (highest seq) first, and
// the logical clock. Errors are ErrVersion or ErrCorrupt.
func decodeState(data []byte, capacity int) ([]Entity, uint64, error) {
	st, err := parseState(bytes.TrimSpace(data))
	if err != nil {
		return nil, 0, err
	}
	if st.Version < 2 {
		// Migrate: list order is the order of recording.
		st.Clock = 0
		for i := range st.Entities {
			st.Entities[i].Seq = uint64(len(st.Entities) - i)
		}
	}
	clock, err := st.checkedClock()
	if err != nil {
		return nil, 0, err
	}
	return newestEntities(st.Entities, capacity), clock, nil
}

// parseState decodes trimmed state of any supported version: a version
// 0 list, or an object that says its version.
func parseState(data []byte) (stateV2, error) {
	var st stateV2
	switch {
	case len(data) == 0:
		return st, fmt.Errorf("%w: empty", ErrCorrupt)
	case data[0] == '[':
		if err := json.Unmarshal(data, &st.Entities); err != nil {
			return st, fmt.Errorf("%w: version 0: %w", ErrCorrupt, err)
		}
		return st, nil
	case data[0] == '{':
		return parseVersioned(data)
	}
	return st, fmt.Errorf("%w: not a JSON object or array", ErrCorrupt)
}

// parseVersioned decodes state held in an object, after checking that
// it says a version this build reads.
func parseVersioned(data []byte) (stateV2, error) {
	var st stateV2
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return st, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	switch {
	case head.Version == nil:
		return st, fmt.Errorf("%w: no version", ErrCorrupt)
	case *head.Version > StateVersion:
		return st, fmt.Errorf("%w: version %d, this build reads up to %d", ErrVersion, *head.Version, StateVersion)
	case *head.Version < 0:
		return st, fmt.Errorf("%w: version %d", ErrCorrupt, *head.Version)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("%w: version %d: %w", ErrCorrupt, *head.Version, err)
	}
	return st, nil
}

// checkedClock returns the logical clock, at least every entity's seq,
// after checking that each entity's time and the clock are in range.
func (st *stateV2) checkedClock() (uint64, error) {
	clock := st.Clock
	for i := range st.Entities {
		s := &st.Entities[i]
		if y := s.SeenAt.UTC().Year(); y < 0 || y > 9999 {
			return 0, fmt.Errorf("%w: entity %d: seenAt %s is outside years 0-9999", ErrCorrupt, i, s.SeenAt.Format(time.RFC3339))
		}
		clock = max(clock, s.Seq)
	}
	if clock > maxClock {
		return 0, fmt.Errorf("%w: clock %d is beyond %d", ErrCorrupt, clock, uint64(maxClock))
	}
	return clock, nil
}

// newestEntities cleans the stored entities and returns at most capacity
// of them, newest (highest seq) first, without repeats.
func newestEntities(stored []storedEntity, capacity int) []Entity {
	slices.SortStableFunc(stored, func(a, b storedEntity) int { return cmp.Compare(b.Seq, a.Seq) })
	out := make([]Entity, 0, min(len(stored), capacity))
	for _, s := range stored {
		if len(out) == capacity {
			break
		}
		e, ok := clean(Entity{Type: s.Type, ID: string(s.ID), Name: s.Name, Slug: s.Slug, Parent: string(s.Parent), SeenAt: s.SeenAt.UTC(), seq: s.Seq})
		if ok && !containsEntity(out, &e) {
			out = append(out, e)
		}
	}
	return out
}
