// Package jsonx holds the JSON code memlayer writes by hand because it
// carries semantics no library offers: the immutable sorted tree the
// scratchpad merges ([Object], [Decode], [Append]), the escaper
// ([AppendString]), and the forgiving scanner that reads truncated tool
// results for entity extraction ([Value]). Everything else uses
// encoding/json. On valid input the decoder agrees with encoding/json
// (FuzzDecodeMatchesEncodingJSON): same values, the last of duplicate keys
// wins.
package jsonx
