package semanticmemory

import (
	"strings"
	"testing"
)

func TestArgShape(t *testing.T) {
	tests := []struct {
		args, want string
	}{
		{`{"id":"page-101","status":"published"}`, `{"id":"<id>","status":"published"}`},
		{`{"status":"published","id":"page-7"}`, `{"id":"<id>","status":"published"}`}, // keys sorted
		{`{"pageId":"abc","type":"hero","heading":"Run further"}`, `{"heading":"<text>","pageId":"<id>","type":"hero"}`},
		{`{"title":"about"}`, `{"title":"<text>"}`},                        // a text key, even one word
		{`{"mode":"Fast Lane"}`, `{"mode":"<text>"}`},                      // not one lowercase word
		{`{"ref":"x"}`, `{"ref":"<id>"}`},                                  // an ID key
		{`{"target":"u17"}`, `{"target":"<id>"}`},                          // a digit
		{`{"publishAt":"2027-03-01T08:00:00Z"}`, `{"publishAt":"<time>"}`}, // a time
		{`{"day":"2027-03-01"}`, `{"day":"<time>"}`},                       // a date
		{`{"url":"https://cdn.example.com/a.jpg","from":"/offers"}`, `{"from":"<url>","url":"<url>"}`},
		{`{"limit":10,"draft":true,"parent":null}`, `{"draft":true,"limit":"<number>","parent":null}`},
		{`{"items":["Home","Shop"],"menu":"main"}`, `{"items":["<text>"],"menu":"main"}`},
		{`{"filter":{"status":"draft","ownerId":"u-9"}}`, `{"filter":{"ownerId":"<id>","status":"draft"}}`},
		{`{"locale":"de"}`, `{"locale":"de"}`},
		{``, `{}`},
		{`{}`, `{}`},
		{`not json`, `"…"`},
		{`{"a":{"b":{"c":{"d":{"e":{"f":1}}}}}}`, `{"a":{"b":{"c":{"d":{"e":"…"}}}}}`},
	}
	for _, tt := range tests {
		if got := argShape(tt.args); got != tt.want {
			t.Errorf("argShape(%s) = %s, want %s", tt.args, got, tt.want)
		}
	}
	big := `{"text":"` + strings.Repeat("x", maxShapeBytes) + `"}`
	if got := argShape(big); got != "{…}" {
		t.Errorf("argShape(%d bytes) = %.40s, want {…}", len(big), got)
	}
}

func TestErrorResult(t *testing.T) {
	for content, want := range map[string]bool{
		`{"page":{"id":"p1"}}`:                false,
		`{"error":"validation failed"}`:       true,
		`{"error":null,"page":{}}`:            false,
		`{"errors":[{"msg":"x"}]}`:            true,
		`{"errors":[]}`:                       false,
		`{"ok":false}`:                        true,
		`{"success":true}`:                    false,
		`{"status":"failed","reason":"lock"}`: true,
		`{"status":"published"}`:              false,
		`Error: no such page`:                 true,
		`failed to connect`:                   true,
		`done`:                                false,
		``:                                    false,
	} {
		if got := errorResult(content); got != want {
			t.Errorf("errorResult(%q) = %v, want %v", content, got, want)
		}
	}
}

func TestDeterministicName(t *testing.T) {
	steps := []SkillStep{{Tool: "cms_getPage", Args: `{"id":"<id>"}`}, {Tool: "cms_updatePage", Args: `{"id":"<id>","status":"published"}`}}
	for _, tt := range []struct {
		triggers []string
		want     string
	}{
		{[]string{"Publish the About us page.", "Can you publish the Careers page now?"}, "publish page"},
		{[]string{"Publish page-101", "Please publish page-202"}, "publish page"},
		{[]string{"Do it", "Make it so"}, "update page published"}, // no shared verb: the last tool
		{[]string{"Publish the About page"}, "update page published"},
	} {
		if got := deterministicName(tt.triggers, steps); got != tt.want {
			t.Errorf("deterministicName(%q) = %q, want %q", tt.triggers, got, tt.want)
		}
	}
	if got := toolWords("pages.create"); strings.Join(got, " ") != "create" {
		t.Errorf("toolWords(pages.create) = %q", got)
	}
}

func FuzzArgShape(f *testing.F) {
	for _, s := range []string{`{"id":"p-1","status":"published"}`, `{"a":[1,{"b":"x"}]}`, `{"a":`, `[`, `"x"`, `{"\u00e9":"\"q\""}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		s := argShape(args)
		if len(s) > maxShapeOut+len("…") {
			t.Fatalf("shape of %d bytes", len(s))
		}
		if s != argShape(args) {
			t.Fatal("not deterministic")
		}
	})
}
