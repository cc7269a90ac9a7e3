// Package fence keeps untrusted text inside the block it was put in.
//
// Every layer puts its recalled text in the system prompt as a block:
//
//	block := fence.Wrap(fence.Tag("working_memory"), notes)
//
// The text may come from a tool result or from the model.
// Wrap makes sure it cannot close its block or open another of the same name.
// [Defang] does the same for a set of tags, so the prompt compiler can keep one block from forging another.
//
// A tag matches whatever a reader would take for it.
// Look-alike letters, look-alike brackets, separators, invisible characters and right-to-left overrides do not hide a tag.
// The look-alike tables come from Unicode's confusables data and are generated into fold_table.go.
//
// The package imports only the standard library.
package fence
