package episodicmemory

import (
	"testing"
	"time"
)

// A request refers back by a pronoun, an answer or a correction at its
// start, or by adding to what was done anywhere in it; "too" adds only
// where it ends a clause.
func TestRefersBack(t *testing.T) {
	for query, want := range map[string]bool{
		"Publish it":                               true,
		"She replied: apartment 4B":                true,
		"No, use the other template":               true,
		"Don't promise a discount, just apologize": true,
		"Don’t promise a discount":                 true,
		"Actually make it blue":                    true,
		"Flag the supplier too, that's the third":  true,
		"Empty the trash too":                      true,
		"Cancel the open orders too!":              true,
		"Send the invoice as well":                 true,
		"Please could you also resize the logo":    true,
		"The headline is too long on mobile":       false,
		"The margin is too thin":                   false,
		"Order a tattoo kit":                       false,
		"Check the toolbar, the tools menu":        false,
		"Create a landing page for the sale":       false,
		"Write a blog post about remote work":      false,
		"":                                         false,
	} {
		if got := refersBack(query); got != want {
			t.Errorf("refersBack(%q) = %v, want %v", query, got, want)
		}
	}
}

// An entity only the calls have does not start a task when the request
// follows up: it refers back, or every word of it is the task's. An
// entity the request names does, and so do calls' entities under a
// request in other words.
func TestNewTask_CalledEntities(t *testing.T) {
	now := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	call := func(args string) []Episode { return []Episode{{Kind: KindTool, Tool: "x", Arguments: args}} }
	for _, c := range []struct {
		query string
		eps   []Episode
		want  bool
	}{
		{"What address do we have for the customer?", call(`{"id":"cus-301"}`), false},
		{"Flag the supplier too, that's the third broken vase this month", call(`{"sku":"VASE-TALL-W"}`), false},
		{"Ask her for a photo of the damage", call(`{"to":"cus-877"}`), false},
		{"Give me the traffic report for last month", call(`{"range":"last_month"}`), true},
		{"What address do we have for customer cus-999?", call(`{"id":"cus-999"}`), true},
		{"What address do we have for the customer?", call(`{"id":"ord-58812"}`), false}, // an entity the task holds
	} {
		tr := tracker{loaded: true, task: 1, last: now}
		tr.learnRequest("A customer says order ord-58812 never arrived; the address was incomplete")
		tr.learnRequest("Refund the broken vase")
		if got := tr.newTask(c.query, c.eps); got != c.want {
			t.Errorf("newTask(%q, %s) = %v, want %v", c.query, c.eps[0].Arguments, got, c.want)
		}
	}
}
