package entitymemory

import (
	"reflect"
	"testing"

	"github.com/memlayer/memlayer/layer"
)

// unknownToolNothing are results of tools no rule types that hold no
// resource: scalars, arrays of numbers, objects without IDs, objects
// with an ID alone, error results and text. None yields an entity.
var unknownToolNothing = []struct{ name, tool, args, result string }{
	// Scalars.
	{"number", "weather_lookup", ``, `21`},
	{"float", "get_temperature", ``, `21.5`},
	{"string", "weather_lookup", ``, `"sunny"`},
	{"bool", "check_availability", ``, `true`},
	{"null", "weather_lookup", ``, `null`},
	{"empty", "weather_lookup", ``, ``},
	// Arrays of numbers and other scalars.
	{"array of numbers", "get_readings", ``, `[1, 2, 3.5]`},
	{"array of arrays", "get_matrix", ``, `[[1, 2], [3, 4]]`},
	{"array of strings", "list_cities", ``, `["Paris", "Lyon"]`},
	{"empty array", "search", ``, `[]`},
	// Objects without IDs.
	{"the issue's example", "weather_lookup", ``, `{"temperature": 21, "city": "Paris"}`},
	{"the issue's example with args", "weather_lookup", `{"city":"Paris"}`, `{"temperature": 21, "city": "Paris"}`},
	{"nested objects without IDs", "get_weather", ``, `{"main":{"temp":21,"humidity":40},"wind":{"speed":3.2},"name":"Paris"}`},
	{"list of objects without IDs", "weather_forecast", ``, `{"list":[{"dt":1,"temp":3},{"dt":2,"temp":4}]}`},
	{"named object without an ID", "get_weather", ``, `{"city":{"name":"Paris","country":"FR"}}`},
	{"empty object", "weather_lookup", ``, `{}`},
	// An ID alone: the tool's name would be the only sign of a type.
	{"ID alone", "weather_lookup", ``, `{"id":"w1","temperature":21}`},
	{"IDs alone in a list", "weather_lookup", ``, `[{"id":1,"t":21},{"id":2,"t":22}]`},
	{"ID alone under an envelope", "get_metrics", ``, `{"data":{"id":5,"value":3}}`},
	{"ID alone in GraphQL edges", "run_query", ``, `{"edges":[{"node":{"id":"n1","count":3}}]}`},
	{"ID alone, its members not read", "create_ticket", ``, `{"id":"t1","ticket_type":{"id":"106","name":"Bug"}}`},
	{"another type's ID", "weather_lookup", ``, `{"stationId":"st-1","temperature":21}`},
	{"bare id in args", "weather_lookup", `{"id":"paris"}`, `{"temperature": 21}`},
	{"bare id in args, text result", "run", `{"id":"x"}`, `ok`},
	// Error results.
	{"error string", "weather_lookup", `{"weatherId":"w1"}`, `{"error":"city not found"}`},
	{"error object with an ID", "weather_lookup", ``, `{"error":{"id":"err_1","name":"NotFound"}}`},
	{"status code", "weather_lookup", `{"weatherId":"w1"}`, `{"cod":404,"status":404,"message":"city not found"}`},
	{"success false", "weather_lookup", ``, `{"success":false,"forecast":{"id":"fc-1","title":"Paris"}}`},
	{"MCP isError", "weather_lookup", ``, `{"content":[{"type":"text","text":"{\"forecast\":{\"id\":\"fc-1\"}}"}],"isError":true}`},
	{"error text", "weather_lookup", `{"weatherId":"w1"}`, `Error: upstream timed out`},
	// Text results.
	{"plain text", "weather_lookup", ``, `Sunny, 21 °C in Paris.`},
	{"markdown", "summarize_page", ``, "# Summary\n\n- one\n- two"},
	{"MCP text content", "weather_lookup", ``, `{"content":[{"type":"text","text":"Sunny, 21 °C"}]}`},
	{"MCP JSON without a resource", "weather_lookup", ``, `{"content":[{"type":"text","text":"{\"temperature\":21}"}]}`},
	{"JSON encoded twice without a resource", "weather_lookup", ``, `"{\"temperature\": 21, \"id\": \"w1\"}"`},
}

func TestExtractUnknownToolWithoutResource(t *testing.T) {
	for _, tt := range unknownToolNothing {
		t.Run(tt.name, func(t *testing.T) {
			if got := Extract(tt.tool, tt.args, tt.result); len(got) != 0 {
				t.Errorf("Extract(%q, %q, %q) = %+v, want nothing", tt.tool, tt.args, tt.result, got)
			}
		})
	}
}

// The layer records nothing from such results, and what it knew stays.
func TestLayerUnknownToolWithoutResource(t *testing.T) {
	l := bindMem(t, mustNew(t, Config{}))
	l.Add(Entity{Type: "page", ID: "page-1", Name: "Home"})
	for _, tt := range unknownToolNothing {
		if err := l.Store(t.Context(), turn(result(tt.tool, tt.args, tt.result))); err != nil {
			t.Fatalf("%s: Store = %v", tt.name, err)
		}
	}
	if got := ents(l.Entities()); !reflect.DeepEqual(got, []ent{{"page", "page-1", "Home", "", ""}}) {
		t.Errorf("entities %+v, want only page-1", got)
	}
	if items, _ := l.Recall(t.Context(), layer.Query{}); len(items) != 1 {
		t.Errorf("recall gave %d items, want the one block", len(items))
	}
}

func TestExtractUnknownToolWithResource(t *testing.T) {
	weatherRule := &Config{Rules: Rules{Types: map[string]string{"weather_lookup": "weather"}}}
	tests := []struct {
		name, tool, args, result string
		cfg                      *Config
		want                     []ent
	}{
		{"the issue's example: under a key naming a type", "weather_lookup", ``,
			`{"forecast": {"id": "fc-1", "title": "Paris, Tuesday"}}`, nil,
			[]ent{{"forecast", "fc-1", "Paris, Tuesday", "", ""}}},
		{"an ID alone under a key naming a type", "weather_lookup", ``,
			`{"temperature":21,"station":{"id":"st-1"}}`, nil,
			[]ent{{"station", "st-1", "st-1", "", ""}}},
		{"a list under a key naming a type", "weather_lookup", ``,
			`{"readings":[{"id":1,"value":3},{"id":2,"value":4}]}`, nil,
			[]ent{{"reading", "1", "1", "", ""}, {"reading", "2", "2", "", ""}}},
		{"a type member", "weather_lookup", ``,
			`{"id":"fc-1","object":"forecast","temp":21}`, nil,
			[]ent{{"forecast", "fc-1", "fc-1", "", ""}}},
		{"a generic type member", "run", ``,
			`{"id":"fc-1","type":"forecast"}`, nil,
			[]ent{{"forecast", "fc-1", "fc-1", "", ""}}},
		{"an ID with a name takes the tool's type", "weather_lookup", ``,
			`{"id":"w1","name":"Paris now","temperature":21}`, nil,
			[]ent{{"weather", "w1", "Paris now", "", ""}}},
		{"an ID with a slug", "get_page", ``,
			`{"id":"page-7","slug":"about"}`, nil,
			[]ent{{"page", "page-7", "about", "", ""}}},
		{"an ID with a qualified label", "get_asset", ``,
			`{"id":"a1","originalFileName":"logo.svg"}`, nil,
			[]ent{{"asset", "a1", "logo.svg", "", ""}}},
		{"an ID under <type>Id", "weather_lookup", ``,
			`{"weatherId":"w-1","temperature":21}`, nil,
			[]ent{{"weather", "w-1", "w-1", "", ""}}},
		{"named entities in a list", "search", ``,
			`[{"id":"p1","title":"One"},{"id":"p2"},{"id":"p3","title":"Three"}]`, nil,
			[]ent{{"item", "p1", "One", "", ""}, {"item", "p3", "Three", "", ""}}},
		{"the arguments name the type", "get-section-content", `{"sectionId":"sec-1"}`,
			`<h1>Welcome</h1>`, nil,
			[]ent{{"section", "sec-1", "sec-1", "", ""}}},
		{"an ID alone, with the ID in the arguments", "cms_updatePage", `{"pageId":"page-1","status":"published"}`,
			`{"id":"page-1","status":"published"}`, nil,
			[]ent{{"page", "page-1", "page-1", "", ""}}},
		{"the arguments give an ID and a name", "rename_page", `{"id":"page-1","title":"New"}`,
			`{"ok":true}`, nil,
			[]ent{{"page", "page-1", "New", "", ""}}},
		{"MCP JSON with a resource", "weather_lookup", ``,
			`{"content":[{"type":"text","text":"{\"forecast\":{\"id\":\"fc-1\",\"title\":\"Tue\"}}"}]}`, nil,
			[]ent{{"forecast", "fc-1", "Tue", "", ""}}},
		// Forgetting needs only the ID.
		{"a destructive tool's ID alone", "delete_page", `{"id":"p1"}`,
			`{"id":"p1","deleted":true}`, nil,
			[]ent{{"page", "p1", "p1", "", ""}}},
		{"a destructive tool's bare id argument", "delete_page", `{"id":"p1"}`,
			`{"ok":true}`, nil,
			[]ent{{"page", "p1", "p1", "", ""}}},
		{"a deleted flag", "api_call", ``,
			`{"id":"cus_1","deleted":true}`, nil,
			[]ent{{"item", "cus_1", "cus_1", "", ""}}},
		// A rule makes the tool known: its results are read as they are.
		{"a ruled tool's ID alone", "weather_lookup", ``,
			`{"id":"w1","temperature":21}`, weatherRule,
			[]ent{{"weather", "w1", "w1", "", ""}}},
		{"a ruled tool's bare id argument", "weather_lookup", `{"id":"paris"}`,
			`{"temperature":21}`, weatherRule,
			[]ent{{"weather", "paris", "paris", "", ""}}},
		{"a ruled tool's nameless list", "weather_lookup", ``,
			`[{"id":1,"t":21},{"id":2,"t":22}]`, weatherRule,
			[]ent{{"weather", "1", "1", "", ""}, {"weather", "2", "2", "", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := defaultExtractor
			if tt.cfg != nil {
				x = NewExtractor(*tt.cfg)
			}
			got := x.Extract(tt.tool, tt.args, tt.result)
			if g := ents(got); !reflect.DeepEqual(g, tt.want) {
				t.Errorf("Extract(%q, %q, %q):\n got %+v\nwant %+v", tt.tool, tt.args, tt.result, g, tt.want)
			}
		})
	}
}
