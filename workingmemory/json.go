package workingmemory

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/memlayer/memlayer/internal/jsonx"
)

// The scratchpad's JSON values are in jsonx's tree form: *jsonx.Object
// (members sorted by key, keys unique), []any, string, json.Number, bool
// or nil; jsonx.ToGo converts to the map[string]any form that callers
// and jsonschema see.

// decodeJSON parses data as exactly one JSON value. Nesting deeper than
// maxDepth (objects and arrays) fails with ErrTooDeep.
func decodeJSON(data []byte, maxDepth int) (any, error) {
	v, err := jsonx.Decode(data, maxDepth)
	if errors.Is(err, jsonx.ErrTooDeep) {
		return nil, fmt.Errorf("%w: more than %d levels of nesting", ErrTooDeep, maxDepth)
	}
	return v, err
}

// normalize turns any Go value into the JSON types the scratchpad works
// with, by a JSON round trip when it is not already made of them. The
// result shares nothing with v.
func normalize(v any, maxDepth int) (any, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return decodeJSON(v, maxDepth)
	case []byte:
		return decodeJSON(v, maxDepth)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeJSON(b, maxDepth)
}
