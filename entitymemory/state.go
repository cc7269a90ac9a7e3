package entitymemory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// StateVersion is the version of the state format written by Snapshot and
// persisted in storage:
//
//	{"version": 1, "entities": [{"type": "page", "id": "page-123",
//	  "name": "About Us", "slug": "about-us", "parent": "site-1",
//	  "seenAt": "2026-11-22T14:00:00Z"}, ...]}
//
// newest first. Version 0 — a bare JSON array of entities, as written by
// hand or by tools predating the envelope, with IDs as strings or
// numbers and seenAt optional — is read and migrated. Later versions are
// refused with [ErrVersion].
const StateVersion = 1

type stateV1 struct {
	Version  int            `json:"version"`
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
		*f = flexString(jval{raw: b, kind: kindNumber}.scalar())
	}
	return nil
}

// encodeState writes list in the current format.
func encodeState(list []Entity) []byte {
	st := stateV1{Version: StateVersion, Entities: make([]storedEntity, len(list))}
	for i, e := range list {
		st.Entities[i] = storedEntity{Type: e.Type, ID: flexString(e.ID), Name: e.Name, Slug: e.Slug, Parent: flexString(e.Parent), SeenAt: e.SeenAt.UTC()}
	}
	b, err := json.Marshal(st)
	if err != nil {
		// Every field is a string or a time; this cannot happen.
		panic("entitymemory: encode state: " + err.Error())
	}
	return b
}

// decodeState reads state in any supported version, cleaning every entity
// and keeping at most capacity of them. Errors are ErrVersion or
// ErrCorrupt.
func decodeState(data []byte, capacity int) ([]Entity, error) {
	data = bytes.TrimSpace(data)
	var ents []storedEntity
	switch {
	case len(data) == 0:
		return nil, fmt.Errorf("%w: empty", ErrCorrupt)
	case data[0] == '[':
		if err := json.Unmarshal(data, &ents); err != nil {
			return nil, fmt.Errorf("%w: version 0: %w", ErrCorrupt, err)
		}
	case data[0] == '{':
		var head struct {
			Version *int `json:"version"`
		}
		if err := json.Unmarshal(data, &head); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		switch {
		case head.Version == nil:
			return nil, fmt.Errorf("%w: no version", ErrCorrupt)
		case *head.Version > StateVersion:
			return nil, fmt.Errorf("%w: version %d, this build reads up to %d", ErrVersion, *head.Version, StateVersion)
		case *head.Version < 0:
			return nil, fmt.Errorf("%w: version %d", ErrCorrupt, *head.Version)
		}
		var st stateV1
		if err := json.Unmarshal(data, &st); err != nil {
			return nil, fmt.Errorf("%w: version %d: %w", ErrCorrupt, *head.Version, err)
		}
		ents = st.Entities
	default:
		return nil, fmt.Errorf("%w: not a JSON object or array", ErrCorrupt)
	}
	out := make([]Entity, 0, min(len(ents), capacity))
	for _, s := range ents {
		if len(out) == capacity {
			break
		}
		e, ok := clean(Entity{Type: s.Type, ID: string(s.ID), Name: s.Name, Slug: s.Slug, Parent: string(s.Parent), SeenAt: s.SeenAt})
		if !ok {
			continue
		}
		if containsEntity(out, &e) {
			continue
		}
		out = append(out, e)
	}
	return out, nil
}
