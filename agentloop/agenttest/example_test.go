package agenttest_test

import (
	"context"
	"fmt"
	"regexp"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop/agenttest"
)

// A policy model reads its prompt: here it finds an order number in the
// system prompt and looks it up.
func ExampleNewFunc() {
	order := regexp.MustCompile(`order (\d+)`)
	m := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		if id := order.FindStringSubmatch(r.System()); id != nil {
			return agenttest.Calls(agenttest.Call("lookup", map[string]string{"order": id[1]})), nil
		}
		return agenttest.Text("Which order?"), nil
	})
	resp, _ := m.GenerateContent(context.Background(), []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "Memory: the user asked about order 4711."),
		llms.TextParts(llms.ChatMessageTypeHuman, "Where is it?"),
	})
	c := resp.Choices[0].ToolCalls[0]
	fmt.Println(c.ID, c.FunctionCall.Name, c.FunctionCall.Arguments, resp.Choices[0].StopReason)
	// Output:
	// call_0_0 lookup {"order":"4711"} tool_calls
}

// A fixed script answers call n with step n.
func ExampleNew() {
	m := agenttest.New(agenttest.Reply(agenttest.Text("first")), agenttest.Reply(agenttest.Text("second")))
	for range 3 {
		out, err := m.Call(context.Background(), "hi")
		fmt.Println(out, err)
	}
	// Output:
	// first <nil>
	// second <nil>
	//  agenttest: script exhausted: call 2, 2 steps
}
