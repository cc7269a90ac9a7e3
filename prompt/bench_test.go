package prompt

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt/fence"
)

// benchTemplate uses ten variables: three layers, the instructions and
// six user variables.
const benchTemplate = `{{{instructions}}}
User: {{user}} ({{locale}}), today is {{date}}. Tone: {{tone}}.
Product: {{product}}; tools: {{{tools}}}; plan: {{plan}}.
{{{workingMemory}}}
{{{entities}}}
{{{notes}}}`

var benchVars = map[string]any{
	"user": "Ann", "locale": "en-GB", "date": "2026-11-22", "tone": "brief",
	"product": "CMS", "tools": "pages, media", "plan": 3,
}

// storer is a no-op layer with a Store hook, to measure the stack's
// per-Store cost.
type storer struct{ layer.Layer }

func (storer) Store(context.Context, layer.Turn) error { return nil }

func benchLayers(withStore bool) []layer.Layer {
	ls := []layer.Layer{
		layer.Text(layer.Spec{ID: "working-memory", Slot: layer.SlotWorkingMemory}, fence.Wrap("working_memory", "plan: rewrite the home page\nstatus: drafting")),
		layer.Text(layer.Spec{ID: "entities", Slot: layer.SlotEntities}, "[WORKING MEMORY]\n- page \"Home\" (id 1)\n- page \"About\" (id 2)"),
		layer.Func(layer.Spec{ID: "notes", Slot: 200}, func(context.Context, layer.Query) ([]layer.Item, error) {
			return []layer.Item{{Text: "the user prefers short answers"}}, nil
		}),
	}
	if withStore {
		for i, l := range ls {
			ls[i] = storer{l}
		}
	}
	return ls
}

func benchStack(b *testing.B, withStore bool) *layer.Stack {
	b.Helper()
	s, err := layer.NewStack(layer.StackConfig{Layers: benchLayers(withStore), Env: layer.Env{ThreadID: "t1"}})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Init(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// reportCPU adds a cpu-ns/op metric: process CPU time per iteration since
// start (see processCPU). It counts every goroutine of the process, so it
// includes the stack's hook goroutines and the garbage collector.
func reportCPU(b *testing.B, start time.Duration) {
	if start == 0 || b.N == 0 {
		return
	}
	b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
}

var benchTurn = layer.Turn{Query: "rename the home page", Response: "done"}

// BenchmarkStackStep is one agent step's memory work: recall from a stack
// of three no-op layers, store the turn, and compile a ten-variable
// template. "storers" gives every layer a no-op Store hook, so the stack
// runs three concurrent Store calls per step.
func BenchmarkStackStep(b *testing.B) {
	for _, withStore := range []bool{false, true} {
		name := "recall-only-layers"
		if withStore {
			name = "storers"
		}
		b.Run(name, func(b *testing.B) {
			ctx := b.Context()
			s := benchStack(b, withStore)
			c := mustNew(b, Config{Template: benchTemplate, Instructions: "You are a CMS assistant."})
			q := layer.Query{Text: "rename the home page"}
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				rec, err := s.Recall(ctx, q, nil)
				if err != nil || len(rec) != 3 {
					b.Fatalf("Recall = %d layers, %v", len(rec), err)
				}
				if err := s.Store(ctx, benchTurn); err != nil {
					b.Fatal(err)
				}
				if _, err := c.Compile(rec, benchVars); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkStackStepParts breaks BenchmarkStackStep down.
func BenchmarkStackStepParts(b *testing.B) {
	ctx := b.Context()
	q := layer.Query{Text: "rename the home page"}
	b.Run("Recall", func(b *testing.B) {
		s := benchStack(b, false)
		b.ReportAllocs()
		cpu := processCPU()
		for b.Loop() {
			if _, err := s.Recall(ctx, q, nil); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, cpu)
	})
	for _, withStore := range []bool{false, true} {
		b.Run(fmt.Sprintf("Store/storers=%v", withStore), func(b *testing.B) {
			s := benchStack(b, withStore)
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				if err := s.Store(ctx, benchTurn); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
		})
	}
	b.Run("Compile", func(b *testing.B) {
		s := benchStack(b, false)
		rec, err := s.Recall(ctx, q, nil)
		if err != nil {
			b.Fatal(err)
		}
		c := mustNew(b, Config{Template: benchTemplate, Instructions: "You are a CMS assistant."})
		b.ReportAllocs()
		cpu := processCPU()
		for b.Loop() {
			if _, err := c.Compile(rec, benchVars); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, cpu)
	})
}

func BenchmarkCompile(b *testing.B) {
	rec := []layer.Recalled{
		rec("working-memory", fence.Wrap("working_memory", "plan: rewrite the home page\nstatus: drafting <b>")),
		rec("entities", fence.Wrap("entities", "- page \"Home\" (id 1)"), "- page \"About\" (id 2)"),
		rec("notes", "the user prefers short answers"),
	}
	for _, tc := range []struct{ name, tpl string }{{"default", ""}, {"template10", benchTemplate}} {
		b.Run(tc.name, func(b *testing.B) {
			c := mustNew(b, Config{Template: tc.tpl, Instructions: "You are a CMS assistant."})
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				if _, err := c.Compile(rec, benchVars); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
		})
	}
}

func BenchmarkAllocate(b *testing.B) {
	r := Request{Total: 128000, Reserve: 4000, System: 800, Layers: []layer.Spec{
		{ID: "working-memory", Budget: layer.Budget{Min: 200, Max: 1500}},
		{ID: "entities", Budget: layer.Budget{Max: 800}},
		{ID: "semantic-recall"},
	}}
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		if _, err := Allocate(r); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
}

// BenchmarkProjectHistory projects a 100-message conversation (a third of
// it tool traffic) into a budget that keeps about half of it.
func BenchmarkProjectHistory(b *testing.B) {
	var msgs []llms.MessageContent
	for i := range 25 {
		id := fmt.Sprintf("call-%d", i)
		msgs = append(msgs,
			human(fmt.Sprintf("question %d: %s", i, strings.Repeat("word ", 20))),
			call(id),
			result(id, strings.Repeat(`{"id":1,"title":"Home"}`, 5)),
			ai(fmt.Sprintf("answer %d: %s", i, strings.Repeat("word ", 30))),
		)
	}
	total := 0
	for _, m := range msgs {
		total += CountMessage(Estimate, m)
	}
	capTokens := total / 2
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		if got := ProjectHistory(msgs, capTokens, nil); len(got) == 0 {
			b.Fatal("nothing kept")
		}
	}
	reportCPU(b, cpu)
}
