package entitymemory

import (
	"slices"
	"strings"
)

// Header is the default first line of the rendered block, unless
// Config.Header replaces it. It names the block apart from the
// scratchpad's working memory, which may share the prompt.
const Header = "[RECENT ENTITIES]"

// LegacyHeader is the header of the original format, before the entity
// block had a name of its own. Set Config.Header to it to keep that
// format.
const LegacyHeader = "[WORKING MEMORY]"

// EmptyText is the line rendered under the header when no entity is
// tracked and Config.RenderEmpty is set.
const EmptyText = "No entities tracked yet."

// DefaultInstructions are the reference-resolution instructions rendered
// after the entities unless Config.Instructions replaces them.
const DefaultInstructions = `To resolve references such as "it", "this page" or "the section", use the most recent entity of the matching type above (types and entities are listed newest first) and its ID. If several entities could match and the conversation does not settle it, ask the user which one they mean. If none matches, look it up with a tool (a list or search call) or ask the user; never make up an ID.`

// render writes the block for list (newest first): the header, then one
// group per type in order of each type's most recent entity, newest first
// within a type, then the archived entities the conversation named (when
// any) under RecalledHeader, grouped the same way, then the instructions
// (when not empty).
func render(list, named []Entity, header, instructions string) string {
	var b strings.Builder
	n := len(header) + len(instructions) + 4
	for i := range list {
		n += len(list[i].Type) + len(list[i].Name) + len(list[i].ID) + len(list[i].Slug) + len(list[i].Parent) + 32
	}
	b.Grow(n)
	b.WriteString(header)
	writeGroups(&b, list)
	if len(named) > 0 {
		b.WriteString("\n")
		b.WriteString(RecalledHeader)
		writeGroups(&b, named)
	}
	if instructions != "" {
		b.WriteString("\n\n")
		b.WriteString(instructions)
	}
	return b.String()
}

// writeGroups writes list grouped by type, in order of each type's first
// entity.
func writeGroups(b *strings.Builder, list []Entity) {
	var done [16]string
	seen := done[:0]
	for i := range list {
		t := list[i].Type
		if slices.Contains(seen, t) {
			continue
		}
		seen = append(seen, t)
		b.WriteByte('\n')
		b.WriteString(plural(t))
		b.WriteByte(':')
		for j := i; j < len(list); j++ {
			if list[j].Type == t {
				writeEntity(b, &list[j])
			}
		}
	}
}

// writeEntity writes one line: `  - "Name" (id, slug: s, parent: p)`.
func writeEntity(b *strings.Builder, e *Entity) {
	b.WriteString("\n  - \"")
	b.WriteString(escaper.Replace(e.Name))
	b.WriteString("\" (")
	b.WriteString(escaper.Replace(e.ID))
	if e.Slug != "" {
		b.WriteString(", slug: ")
		b.WriteString(escaper.Replace(e.Slug))
	}
	if e.Parent != "" {
		b.WriteString(", parent: ")
		b.WriteString(escaper.Replace(e.Parent))
	}
	b.WriteByte(')')
}

// escaper escapes text that is already a single line (see clip) so that
// it stays inside its quotes and cannot open or close a tag: '"' and '\'
// are backslash-escaped, '<' becomes "&lt;". Line breaks, should any
// reach here, are written as a space.
var escaper = strings.NewReplacer(`"`, `\"`, `\`, `\\`, "<", "&lt;", "\n", " ", "\r", " ")
