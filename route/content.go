package route

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/memlayer/memlayer/internal/lexical"
	"github.com/memlayer/memlayer/layer"
)

// ContentBytes is how much of a write's text routing by content reads:
// the first ContentBytes bytes (cut at a rune boundary).
const ContentBytes = 2048

// A class is what a text reads as, when routed by content.
type class int

const (
	classDurable class = iota // a lasting fact about the user or the world
	classSkill                // a reusable procedure
	classEvent                // something that happened, a result, a measurement
	classIntent               // reasoning or a plan still to carry out
	nClasses
)

// sorts is each class's sort of keeper, and words its reason.
var (
	sorts = [nClasses]string{layer.KeepsSemantic, layer.KeepsSemantic, layer.KeepsEpisodic, layer.KeepsScratchpad}
	words = [nClasses]string{
		"it reads as a lasting fact, so it goes to semantic memory",
		"it reads as a reusable procedure (a skill), so it goes to semantic memory",
		"it reads as something that happened, so it goes to the episode log",
		"it reads as reasoning or a plan still to carry out, so it goes to the scratchpad",
	}
)

// A cue is a word or phrase that suggests a class. A cue of letters
// only matches a whole token (lexical.Tokens) — for a lasting fact, any
// token of the same stem (lexical.Stem: "likes" and "liked" match
// "like") —; any other cue matches anywhere in the lowercased text.
type cue struct {
	text   string
	weight int
	token  bool   // whether it matches whole tokens
	stem   string // lexical.Stem(text), for a token
}

// cues are the cues of each class, in English and, for the commonest,
// Portuguese, Spanish, French and German.
var cues = [nClasses][]cue{
	classDurable: append(weighted(2, "always", "never"), weighted(1, "prefer", "preference", "like", "dislike", "hate", "love", "favorite", "favourite",
		"usually", "every", "each", "eat", "can't", "cannot", "allergic", "vegetarian", "vegan", "timezone", "birthday", "live", "work", "based",
		"name", "rather", "remember", "keep in mind", "note that", "prefiro", "prefiero", "bevorzuge", "nombre", "nome", "heiße", "llamo", "chamo", "odeio", "odio", "déteste", "hasse",
		"speaks", "language", "policy", "rule", "default", "must", "deadline", "budget", "owns", "role", "title", "team",
		"prefere", "prefiere", "préfère", "bevorzugt", "sempre", "siempre", "toujours", "immer", "nunca", "jamais", "gosta", "aime",
		"mora", "vive", "habite", "wohnt", "trabalha", "trabaja", "travaille", "arbeitet", "is a", "is an", "are ", "is the", "uses",
		" is ", "capital", "means", "stands for", "defined")...),
	classSkill: weighted(1, "steps", "step 1", "workflow", "procedure", "recipe", "how to", "to publish", "to create", "to update",
		"to delete", "to deploy", "to rename", "whenever", "every time", "each time", "->", "→", "=>", "then", "reusable", "sequence",
		"in order to", "first call", "call ", "passo", "pasos", "étapes", "schritte"),
	classEvent: weighted(1, "created", "published", "updated", "deleted", "sent", "returned", "failed", "failure", "succeeded", "success",
		"completed", "finished", "ran", "called", "fetched", "uploaded", "merged", "deployed", "took", "error", "status", "http",
		"ms", "seconds", "minutes", "latency", "p95", "p99", "count", "rate", "yesterday", "today", "ago", "just", "was", "were",
		"received", "responded", "panic", "exception", "traceback", "pass", "passed", "fail", "ok", "timed out", "timeout", "too large", "401", "403", "409", "413", "429", "502", "503", "got", "found", "saw", "noticed", "observed", "logged", "%", "200", "404", "500",
		"criou", "publicou", "publicado", "creado", "publicó", "publié", "créé", "erstellt", "veröffentlicht", "falhou", "falló",
		"échoué", "fehlgeschlagen", "ontem", "ayer", "hier", "gestern", "did", "asked", "said", "told", "wanted", "requested"),
	classIntent: weighted(2, "i will", "i'll", "let me", "i should", "i need to", "need to", "next", "todo", "to do", "to-do",
		"maybe", "perhaps", "hypothesis", "i think", "might", "plan", "going to", "let's", "should i", "wonder", "not sure",
		"vou ", "voy a", "je vais", "ich werde", "próximo", "siguiente", "ensuite", "danach", "hmm", "later", "afterwards",
		"check whether", "check if", "verify", "consider", "first,", "after that", "remaining", "pending", "tbd", "idea",
		"probably", "likely", "seems", "guess", "suspect", "could be", "please"),
}

// weighted returns the cues texts, each of weight w.
func weighted(w int, texts ...string) []cue {
	out := make([]cue, len(texts))
	for i, t := range texts {
		out[i] = cue{text: t, weight: w, token: isToken(t)}
		if out[i].token {
			out[i].stem = lexical.Stem(t)
		}
	}
	return out
}

// isToken reports whether a cue matches whole tokens only.
func isToken(s string) bool {
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// reading is a text as routing by content reads it.
type reading struct {
	lower  string          // the lowercased text, padded with spaces
	tokens map[string]bool // its tokens
	stems  map[string]bool // their stems
	tools  int             // how many words look like tool names
	clock  bool            // whether it holds a time of day (14:05) or a place in a file (cache.go:41)
	verb   bool            // whether it starts with a verb of a task (an imperative)
	// sequence is whether it holds steps in order ("then", "→"), and
	// purpose whether it opens on what they are for ("To ship abroad,
	// ...", "When ... ,") and is not the writer's own plan.
	sequence, purpose bool
	answer            bool // whether it starts with a tool's name and a colon (a tool's answer)
}

// read reads the first ContentBytes of text.
func read(text string) reading {
	if len(text) > ContentBytes {
		text = strings.ToValidUTF8(text[:ContentBytes], "") // a rune cut in two goes
	}
	text = strings.ReplaceAll(text, "’", "'")
	r := reading{lower: " " + strings.ToLower(text) + " ", tokens: map[string]bool{}, stems: map[string]bool{}}
	toks := lexical.Tokens(nil, r.lower)
	for _, t := range toks {
		r.tokens[t] = true
		r.stems[lexical.Stem(t)] = true
		r.clock = r.clock || isClock(t) || isLocation(t)
	}
	r.readTools(text)
	r.readShape()
	return r
}

// readTools counts the words of text that look like tool names, and
// whether text opens with one and a colon.
func (r *reading) readTools(text string) {
	name, _, ok := strings.Cut(text, ":")
	r.answer = ok && looksLikeTool(name)
	for _, f := range strings.Fields(text) {
		if looksLikeTool(f) {
			r.tools++
		}
	}
}

// readShape reads how the text opens and whether it holds steps in
// order, once its tools are counted.
func (r *reading) readShape() {
	first, second := firstWords(r.lower)
	r.verb = imperative(first, second)
	r.sequence = r.tools >= 2 || r.holds(sequences)
	r.purpose = r.sequence && r.opens(purposes) && !firstPerson(*r)
}

// taskVerbs are the verbs that start a task still to carry out, in the
// imperative.
var taskVerbs = map[string]bool{"ask": true, "check": true, "verify": true, "review": true, "compare": true, "confirm": true,
	"publish": true, "create": true, "update": true, "delete": true, "rename": true, "fix": true, "send": true, "move": true,
	"add": true, "remove": true, "find": true, "look": true, "try": true, "test": true, "write": true, "draft": true,
	"remind": true, "pay": true, "call": true, "email": true, "book": true, "buy": true, "schedule": true, "plan": true}

// isClock reports whether a token is a time of day: "14:05", "9:30:12".
func isClock(t string) bool {
	h, m, ok := strings.Cut(t, ":")
	return ok && len(h) >= 1 && len(h) <= 2 && len(m) >= 2 && strings.Trim(h+m, "0123456789:") == ""
}

// isLocation reports whether a token is a place in a file, as a log or
// a stack trace gives it: "cache.go:41", "app.py:7:3".
func isLocation(t string) bool {
	name, line, ok := strings.Cut(t, ":")
	return ok && strings.Contains(name, ".") && line != "" && strings.Trim(line, "0123456789:") == ""
}

// toolVerbs are the verbs a dotted tool name ends with (pages.create).
var toolVerbs = map[string]bool{"create": true, "get": true, "list": true, "update": true, "delete": true, "publish": true,
	"search": true, "read": true, "write": true, "send": true, "run": true, "find": true}

// looksLikeTool reports whether a word looks like a tool's name:
// cms_getPage, update_page(...), getPage, pages.create.
func looksLikeTool(w string) bool {
	w = strings.TrimRight(strings.TrimLeft(w, "`'\"("), "`'\",.;:)")
	if i := strings.IndexByte(w, '('); i > 0 {
		w = w[:i]
	}
	if w == "" || strings.IndexFunc(w, notToolChar) >= 0 {
		return false
	}
	return snakeName(w) || dottedVerb(w) || camelName(w)
}

// notToolChar reports whether r cannot be in a tool's name.
func notToolChar(r rune) bool {
	return !(r == '_' || r == '.' || r >= '0' && r <= '9' || r < utf8.RuneSelf && unicode.IsLetter(r))
}

// snakeName reports whether w has a '_' between two letters: cms_get.
func snakeName(w string) bool {
	for i := 1; i < len(w)-1; i++ {
		if w[i] == '_' && unicode.IsLetter(rune(w[i-1])) && unicode.IsLetter(rune(w[i+1])) {
			return true
		}
	}
	return false
}

// dottedVerb reports whether w ends with a '.' and a tool verb after three
// bytes or more: pages.create.
func dottedVerb(w string) bool {
	i := strings.LastIndexByte(w, '.')
	return i > 2 && toolVerbs[w[i+1:]]
}

// camelName reports whether w starts with a lowercase letter and has an
// uppercase one after a lowercase one, past its second byte: getPage
// (not iPhone).
func camelName(w string) bool {
	if !unicode.IsLower(rune(w[0])) {
		return false
	}
	for i := 2; i < len(w); i++ {
		if unicode.IsUpper(rune(w[i])) && unicode.IsLower(rune(w[i-1])) {
			return true
		}
	}
	return false
}

// scores returns how strongly the reading suggests each class.
func (r reading) scores() [nClasses]int {
	var s [nClasses]int
	for c := range nClasses {
		for _, q := range cues[c] {
			if r.matches(c, q) {
				s[c] += q.weight
			}
		}
	}
	s[classEvent] += 2 * (b2i(r.clock) + b2i(r.answer))
	s[classIntent] += 2 * b2i(r.verb)
	// Two or more tool names in a sequence is a procedure, unless it is
	// something still to do, or done. A procedure has steps in order:
	// without them, a procedure's words ("steps", "recipe") are not one.
	if r.tools >= 2 {
		s[classSkill] += 2 * r.tools
	}
	s[classSkill] += 2 * b2i(r.purpose)
	if !r.sequence {
		s[classSkill] = 0
	}
	return s
}

// b2i returns 1 for true and 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// matches reports whether the reading holds cue q of class c.
func (r reading) matches(c class, q cue) bool {
	if !q.token {
		return strings.Contains(r.lower, q.text)
	}
	return r.tokens[q.text] || c == classDurable && r.stems[q.stem]
}

// classify returns the class a text reads as: the class of the highest
// score, ties going to the first in the order durable, skill, event,
// intent. A text with no cue is durable: a write tool keeps what lasts.
func classify(text string) class {
	s := read(text).scores()
	best := classDurable
	for c := range nClasses {
		if s[c] > s[best] {
			best = c
		}
	}
	return best
}

// ByContent routes w by what its text reads as, whatever its kind: see
// the package doc.
func ByContent(w layer.Write) Route {
	c := classify(w.Text)
	return Route{Layer: sorts[c], Reason: "kind " + quote(w.Kind) + " is routed by its text: " + words[c]}
}

// userMessage routes a user's message: what the user states about
// themselves or the work that lasts goes to semantic memory, anything
// else to the episode log.
func userMessage(w layer.Write) Route {
	if lastingMessage(read(w.Text)) {
		return Route{Layer: layer.KeepsSemantic, Reason: "a user's message that states something lasting goes to semantic memory"}
	}
	return Route{Layer: layer.KeepsEpisodic, Reason: "a user's message goes to the episode log"}
}

// possessive reports whether the reading starts by speaking of what its
// writer has or is: "My laptop runs ...", "I'm ...".
func possessive(r reading) bool {
	for _, p := range []string{" my ", " our ", " i'm ", " i am ", " meu ", " minha ", " mi ", " mon ", " ma ", " mein ", " meine "} {
		if strings.HasPrefix(r.lower, p) {
			return true
		}
	}
	return false
}

// firstPerson reports whether the reading speaks of its writer.
func firstPerson(r reading) bool {
	for _, t := range []string{"i", "my", "me", "i'm", "eu", "meu", "minha", "yo", "mi", "je", "mon", "ma", "ich", "mein", "meine", "we", "our"} {
		if r.tokens[t] {
			return true
		}
	}
	return false
}

// quote returns s in double quotes.
func quote(s string) string { return `"` + s + `"` }
