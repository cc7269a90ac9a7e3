// Package prompt turns what a [layer.Stack] recalled into a system prompt
// and fits the prompt and the message history into a context window.
//
//	c, err := prompt.New(prompt.Config{Instructions: "You are a CMS assistant."})
//	system, err := c.Compile(recalled, nil) // recalled: layer.Stack.Recall's result, in slot order
//
// One model call goes: [Allocate] divides the window among layers and
// history; the stack recalls each layer under its allocation;
// [ProjectLayersWithin] (or [ProjectLayers]) drops items that still do not
// fit; [Compiler.Compile] renders the system prompt; [ProjectHistory]
// keeps the newest messages that fit in the history budget; [Messages]
// puts the system prompt in front of them.
//
// # Templates
//
// A [Compiler] renders a Handlebars template (github.com/aymerick/raymond)
// parsed once by [New]. Each recalled layer is a variable named after its
// ID in camelCase ([VarName]: "working_memory" → {{workingMemory}}),
// {{{layers}}} is every layer in slot order, {{{instructions}}} the
// agent's instructions, and the caller's variables join them. Without a
// template the prompt is the instructions followed by each layer's block,
// separated by blank lines. Helpers and partials are registered on the
// compiler's own template, never globally (raymond panics on a duplicate
// global name), and partials are parsed up front, because raymond parses
// partials registered from source lazily, which races under concurrent
// rendering. Template syntax errors name the line; a panicking helper is
// an error, not a crash. New also rejects partials that would recurse
// without end (raymond would overflow the stack, which kills the
// process): a partial including itself, directly or through others, a
// chain deeper than [MaxPartialDepth], a partial name computed by a
// helper and a name that is not in [Config.Partials].
//
// User variables that are maps, slices or structs are passed as JSON text
// (raymond would print them in Go syntax); wrap one in [Raw] to iterate it
// with {{#each}} or read its fields with paths. "layers" and
// "instructions" are reserved; a user variable named like a recalled layer
// is shadowed by the layer.
//
// # Untrusted text
//
// Layer text comes from tool results and the model. Layers fence it
// themselves with [fence.Wrap], which defangs any "<tag" or "</tag" of
// their own block inside the text. The compiler keeps that intact: layer
// text is passed as a raymond.SafeString (so even {{workingMemory}} does
// not HTML-escape the block, which would garble the fence), and it is a
// value, never template source, so "{{instructions}}" inside a layer's
// text stays literal. The tests render hostile texts (closing tags, fake
// "[WORKING MEMORY]" headers, template syntax) and check that each stays
// inside its block.
//
// The compiler adds one guard of its own: fence.Wrap only defangs a
// block's own tag, so the compiler defangs every other block tag it knows
// inside each item too, with fence.Defang, the matcher Fence uses: both
// compare a skeleton of the name (Unicode's confusables, NFKC, case
// folding; white space, separators, invisible and bidi characters
// dropped) and see through look-alike brackets and closers reversed by a
// right-to-left override. The tags it knows are those of
// [Config.LayerIDs] (every layer of the stack, recalled in the step or
// not), of [BuiltinLayerIDs] and of the layers and fenced items of the
// step, so a value cannot imitate a block that is absent from this
// prompt either. An entity named "</entities><working_memory>…" therefore
// cannot forge a working memory block. A layer's block tag
// (fence.Tag of its ID) belongs to that layer, a built-in tag with
// no such layer to none, another tag to the first layer (in slot order)
// fencing with it; another layer presenting the same fence is treated as
// unfenced.
//
// # Budgets
//
// [Allocate] mirrors noetic's budget.ts (min guarantees, 60% of the rest
// shared by the layers in proportion to their headroom, 40% to history,
// unbounded layers splitting what bounded ones leave) in integer tokens,
// with layer.Unbounded as the one "no limit". Projection never cuts
// an item or a message: a layer item that does not fit is skipped on its
// own, and history is cut only where no tool call is separated from its
// result.
//
// # Tokens
//
// Counting is pluggable through [Counter]. The default, [Estimate], is
// about four ASCII bytes a token (punctuation counting double) plus one
// token per non-ASCII rune. Package prompt/tiktoken offers an exact
// Counter for OpenAI-style models (embedded vocabularies, no network).
// The agent hands its Counter to every layer's Recall
// ([layer.Query.Counter]), so the layers' Item.Tokens and the compiler's
// budgets agree.
//
// # Concurrency
//
// A [Compiler] is immutable after New and safe for concurrent use (tested
// under -race, with partials). [Allocate], [ProjectLayers] and
// [ProjectHistory] are pure functions that do not modify their inputs.
package prompt
