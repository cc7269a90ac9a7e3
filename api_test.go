package memlayer_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exported returns the exported identifiers of the package in dir, test
// files excluded, as "Name" for types, funcs, consts and vars and
// "Type.Name" for methods, exported struct fields and interface methods
// of exported types.
func exported(t *testing.T, dir string) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				switch {
				case !d.Name.IsExported():
				case d.Recv == nil:
					out[d.Name.Name] = true
				default:
					typ := d.Recv.List[0].Type
					if s, ok := typ.(*ast.StarExpr); ok {
						typ = s.X
					}
					if id, ok := typ.(*ast.Ident); ok && id.IsExported() {
						out[id.Name+"."+d.Name.Name] = true
					}
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								out[n.Name] = true
							}
						}
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						out[s.Name.Name] = true
						var fields *ast.FieldList
						switch typ := s.Type.(type) {
						case *ast.StructType:
							fields = typ.Fields
						case *ast.InterfaceType:
							fields = typ.Methods
						default:
							continue
						}
						for _, fl := range fields.List {
							for _, n := range fl.Names {
								if n.IsExported() {
									out[s.Name.Name+"."+n.Name] = true
								}
							}
						}
					}
				}
			}
		}
	}
	return out
}

// Issue 10: exported names that nothing needs stay gone, and layer's
// exported surface does not grow back.
func TestPlainNames01_UnneededNamesGone(t *testing.T) {
	gone := map[string][]string{
		"layer": {"SlotReminder", "SlotSteering", "SlotTaskState", "SlotObservations", "SlotProcedural", "SlotRAG",
			// One timeout per layer (Spec.Timeout, StackConfig.Timeout),
			// integer budgets with layer.Unbounded, and names nothing needs.
			"Timeouts", "DefaultTimeouts", "Spec.Timeouts", "StackConfig.Timeouts", "Budget.Unbounded",
			"MaxAbandonedHooks", "SnapshotVersion", "MaxWireNameLen", "MaxIDLen", "ValidateID", "GlobalScopeKey",
			"ErrDuplicateID", "Response", "Recalled.Slot", "Spec.EffectiveScope", "Tool.Name",
			"HookTool", "HookSnapshot", "HookRestore", "HookClear", "HookStats", "HookData",
			"Stack.Specs", "Stack.Layer", "Stack.LookupTool", "Stack.Env", "Stack.Data",
			"Unwrapper", "Snapshot.Name", "StackConfig.Name", "ErrNotInitialized", "HookInit", "HookRecall", "HookStore", "HookSpawn", "HookReturn", "HookClose",
			"Stats", "StatsReporter", "Stack.Stats",
			"Data", "Provides", "Provider.Provides", "Tool", "WireName", "Env.Depth"},
		"prompt":        {"Check", "Messages", "LayerShare"},
		"workingmemory": {"FenceTag"},
		"entitymemory":  {"EstimateTokens", "Option", "WithRules", "WithNameFields", "WithMaxPerList", "WithMaxResultBytes"},
	}
	for dir, names := range gone {
		have := exported(t, dir)
		for _, n := range names {
			if have[n] {
				t.Errorf("%s.%s is exported again", dir, n)
			}
		}
	}
	for _, keep := range []string{"SlotWorkingMemory", "SlotEntities", "SlotEpisodic", "SlotSemanticRecall"} {
		if !exported(t, "layer")[keep] {
			t.Errorf("layer.%s is gone; a built-in or coming layer uses it", keep)
		}
	}
	const max = 190 // +3: issue 28's naming scheme: Spec.StorageID, Spec.StorageName and DeprecatedToolName (a renamed layer keeps its stored data under its former ID, and its tools answer to their former names for a release); +1: issue 27's Kept.Evicted (a write's Commit names the facts it evicted); +2: issue 28's BlockRenderer and its method (scored assembly keeps a candidate layer's header and order: the layer renders the block of the candidates it won); +5: issue 25's composite recall query: Situator and its method, Query.Situation, Stack.Situation and MaxSituationPart; +47: issue 24 declares every layer capability in layer, so that a layer of one's own can do all a built-in does: Candidate and its 8 fields (back from prompt: CandidateSource returns them, and layer cannot import prompt), CandidateSource, MetricsReporter, Proposer and Keeper with their 5 methods, Write and its 9 fields, Kept and its 7 fields, Effect and its 4 values, Function.Effect, DefaultKind, DefaultImportance and the 3 Keeps sorts; 132 before that (+1: Skeleton (issue 23: the prompt compiler gives a block tag to its layer by the skeleton Fence compares, so that no spelling of the tag is another layer's); +1: Env.RootThreadID (issue 23: a child agent's memory is keyed by its root thread, never found by a thread ID's prefix); +1: Env.Redact (issue 23: the key-value memory masks the values it stores with the agent's redactor); 129 before that (−13: Data and its three fields, Provides and its two fields (Provider.Functions replaces Provider.Provides: code reads a layer's state through its own typed methods), Tool and its three fields (Stack.Tools lists Functions under the names offered), WireName (ToolName gives the name offered), Env.Depth (no layer read it); 142 before that (−6: Stats, StatsReporter and Stack.Stats (a layer reports figures through a Metrics() map[string]int64 method, one mechanism for monitoring and for what it holds); −11: Unwrapper (As walks any Unwrap() Layer method), Snapshot.Name and StackConfig.Name (the checkpoint keeps the agent name), ErrNotInitialized (ErrClosed: not open), the six Hook constants (Event.Hook, now HookCall.Hook, lists the names); 191 when the layer clean-up (H1) began; −34: one timeout per layer, integer budgets, names nothing needs; +9 then −9: Candidate and its fields (issue 12), moved to prompt beside Assemble; +1: Function.Aliases (issue 14: the legacy updateWorkingMemory call runs as the tool); +1: ToolResult.Duration (issue 11: the episodic log). 194 before issue 10's clean-up began (+2: Query.Counter, Query.Count, the one token counter; +1: FenceTag, moved here from workingmemory))
	if n := len(exported(t, "layer")); n > max {
		t.Errorf("layer exports %d identifiers, want at most %d", n, max)
	}
}
