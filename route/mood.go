package route

import (
	"strings"
	"unicode"
)

// A mood is how a text addresses its reader, read from its first words
// and its punctuation.
type mood int

const (
	moodUnknown   mood = iota // neither a subject nor a verb comes first
	moodStatement             // a subject comes first: "I teach maths", "The lock needs ..."
	moodRequest               // a question, or a verb first: "Turn on the heating"
)

// subjects are the words that start a statement: pronouns, possessives
// and articles, in English, Portuguese, Spanish, French and German.
var subjects = setOf("i", "i'm", "i've", "i'd", "we", "we're", "you", "he", "she", "it", "it's", "they", "my", "our", "his", "her",
	"their", "its", "the", "a", "an", "this", "these", "those", "there", "everyone", "nobody", "eu", "nós", "ele", "ela",
	"o", "os", "as", "meu", "minha", "nosso", "nossa", "yo", "nosotros", "el", "la", "los", "las", "mi", "mis", "nuestro",
	"nuestra", "je", "j'ai", "nous", "il", "elle", "le", "les", "mon", "ma", "mes", "notre", "ich", "wir", "er", "sie", "es",
	"der", "die", "das", "mein", "meine", "unser", "unsere")

// objects are the words that follow a verb in the imperative: an
// article, a pronoun or a particle ("Turn on", "Send the", "Give me").
var objects = setOf("the", "a", "an", "my", "our", "me", "us", "it", "them", "this", "that", "these", "those", "all",
	"every", "on", "off", "up", "down", "out")

// imperative reports whether the words first and second open a sentence
// in the imperative: a verb of a task, or a word that is neither a
// subject nor a past tense in -ed followed by an object.
func imperative(first, second string) bool {
	return taskVerbs[first] || !subjects[first] && !strings.HasSuffix(first, "ed") && objects[second]
}

// askers open a request that is not a question: "please", or the
// writer's wish for an action now.
var askers = []string{" please ", " pls ", " bitte ", " por favor ", " s'il ", " i'd like ", " i would like ", " i want you ",
	" i need you "}

// opens reports whether the reading starts with any of the cues, which
// are padded with spaces as the reading's text is.
func (r reading) opens(cues []string) bool {
	for _, c := range cues {
		if strings.HasPrefix(r.lower, c) {
			return true
		}
	}
	return false
}

// setOf returns a set of words.
func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// mood returns the mood of the reading's first sentence: a question or
// an imperative is a request, a subject first a statement.
func (r reading) mood() mood {
	first, second := firstWords(r.lower)
	switch {
	case strings.ContainsAny(r.lower, "?¿") || r.opens(askers):
		return moodRequest
	case subjects[first]:
		return moodStatement
	case imperative(first, second) || isNumber(second):
		return moodRequest
	}
	return moodUnknown
}

// firstWords returns the first two words of s, trimmed of punctuation.
func firstWords(s string) (string, string) {
	var w [2]string
	for i := range w {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		end := strings.IndexFunc(s, unicode.IsSpace)
		if end < 0 {
			end = len(s)
		}
		w[i] = strings.TrimFunc(s[:end], func(r rune) bool { return unicode.IsPunct(r) && r != '\'' })
		s = s[end:]
	}
	return w[0], w[1]
}

// isNumber reports whether w starts with a digit: "3", "10km".
func isNumber(w string) bool { return w != "" && w[0] >= '0' && w[0] <= '9' }

// standing are the cues of a lasting wish within a request: a standing
// order ("from now on", "always") or a request to remember. The words
// match whole tokens, the phrases anywhere.
var (
	standingWords = []string{"always", "never", "remember", "note", "sempre", "nunca", "siempre", "toujours", "jamais",
		"immer", "nie", "lembra", "lembre", "recuerda", "souviens", "merk"}
	standingPhrases = []string{" from now on", " in future", " by default", " every time", " keep in mind", " don't forget",
		" did i mention", " did i tell you", " didn't i tell you"}
)

// standing reports whether the reading holds a cue of a lasting wish.
func (r reading) standing() bool {
	for _, w := range standingWords {
		if r.tokens[w] {
			return true
		}
	}
	return r.holds(standingPhrases)
}

// holds reports whether the reading holds any of the cues, which are
// padded with spaces as the reading's text is.
func (r reading) holds(cues []string) bool {
	for _, c := range cues {
		if strings.Contains(r.lower, c) {
			return true
		}
	}
	return false
}

// selves are the subjects by which a writer speaks of themselves.
var selves = setOf("i", "we", "i'm", "we're")

// statesSelf reports whether a clause after the first starts with the
// writer as its subject, in the present: "..., I block mornings".
func (r reading) statesSelf() bool {
	for _, sep := range []string{", ", "; ", " so ", " because ", " since "} {
		i := strings.Index(r.lower, sep)
		if i < 0 {
			continue
		}
		first, second := firstWords(r.lower[i+len(sep):])
		if selves[first] && !strings.HasSuffix(second, "ed") {
			return true
		}
	}
	return false
}

// lastingMessage reports whether a user's message states something that
// lasts, by its mood: a statement lasts unless it reads as something
// that happened; a request lasts only if it holds a standing wish or a
// statement of the writer's own; a text of neither mood is read by its
// cues.
func lastingMessage(r reading) bool {
	switch r.mood() {
	case moodStatement:
		s := r.scores()
		// A time of day is a habit's as well as an event's.
		return s[classEvent]-2*b2i(r.clock) <= s[classDurable] || r.standing()
	case moodRequest:
		return r.standing() || r.statesSelf()
	}
	return cuesLast(r)
}

// cuesLast reports whether a message of neither mood reads as lasting
// by its cues: more of a lasting fact's than of an event's, and spoken
// by its writer or with two cues or more.
func cuesLast(r reading) bool {
	s := r.scores()
	s[classDurable] += b2i(possessive(r))
	return s[classDurable] > 0 && s[classDurable] >= s[classEvent] && (firstPerson(r) || s[classDurable] >= 2)
}

// sequences are the marks of steps in order.
var sequences = []string{" then ", "→", "->", "=>", "followed by", "step 1", " first, ", ", then", " after that "}

// purposes open a procedure on what it is for, or when it applies.
var purposes = []string{" to ", " how to ", " when ", " whenever ", " if ", " before ", " for ", " para ", " pour ", " um "}
