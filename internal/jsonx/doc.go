// Package jsonx holds the JSON code memlayer writes by hand because it
// carries semantics no library offers: the immutable sorted tree the
// scratchpad merges ([Object], [Decode], [Append]), the escaper
// ([AppendString]), the forgiving scanner that reads truncated tool
// results for entity extraction ([Value]), and the map from a decoded
// string's bytes to the escapes they were written as, with which package
// redact masks a value in place ([UnquoteOffsets]). Everything else uses
// encoding/json. On valid input the decoder agrees with encoding/json
// (FuzzDecodeMatchesEncodingJSON): same values, the last of duplicate keys
// wins.
package jsonx
