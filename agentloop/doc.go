// Package agentloop runs a ReAct loop over a langchaingo [llms.Model] with
// memlayer's memory layers, tools, thread checkpoints and child agents.
//
// # A run
//
// [Agent.Run] runs the agent on a thread (and optional resource):
//
//  1. The thread, if stored, is loaded: its head record, its rolling
//     summary, its layer snapshots and the messages the summary does not
//     cover (never the whole thread); the conversation continues where
//     the last run stopped.
//  2. A new [layer.Stack] is built over Config.Layers and initialised:
//     every layer loads its own state from the store under its scope key.
//  3. Per step: the layers are recalled under budgets from
//     prompt.Allocate (an item that does not fit its layer's budget, or
//     the layers' total, is dropped: prompt.ProjectLayersWithin); the
//     system prompt is compiled (instructions or a
//     Handlebars template plus the layers' blocks, among them the
//     history_summary layer's); the history's window (see "History"
//     below) is projected into what is left of the context window,
//     including what the layers did not use of their budgets (tool calls and their
//     results are never split; the current user message is always sent,
//     and when it alone does not fit the run fails with ErrInputTooLarge
//     without calling the model); GenerateContent is called with every tool
//     definition: the agent's tools, spawn_agent, and the layers'
//     functions under their tool names (layer.ToolName: the scratchpad's
//     update is "working_memory_update", because provider APIs accept
//     only [a-zA-Z0-9_-]{1,64}).
//  4. The tool calls are executed (concurrently, up to
//     Config.ToolConcurrency, except [Tool.Exclusive] tools, which run
//     alone; calls beyond Config.MaxToolCallsPerStep are answered with an
//     error and not run), and the AI message with its calls plus one tool
//     message per result (exactly one ToolCallResponse part each, as the
//     OpenAI client requires) are appended to the history. A result
//     longer than Config.MaxToolResultBytes (16 KiB by default) is cut
//     in the history, with a note giving its size and its call's ID
//     ("…; full result: call <ID>]"); the layers get it whole. A tool call ID
//     already used in the thread (providers and scripted models reuse
//     them across turns) gets a suffix, so every result pairs with its
//     own call.
//  5. The step is handed to the layers' Store as a [layer.Turn], a
//     summary is made if enough turns have left the window, and the step
//     is written: its new messages as a segment, then the thread's head. This happens even when the run's context
//     ended during the tools: what they did is real, so it is recorded on
//     a context without the cancellation, bounded by Config.SaveTimeout.
//
// The loop ends when the model answers without tool calls, or a limit
// stops it: Config.MaxSteps, MaxTokens or Timeout give a [*LimitError]
// that matches ErrMaxSteps, ErrMaxTokens or ErrTimeout with errors.Is and
// carries the partial [Result]. A final answer the model could not finish
// is an error too, returned with the Result (Output holds what came):
// ErrTruncated when its stop reason is an output limit ("length",
// "max_tokens"), ErrFiltered when it is a content filter or a refusal
// ("content_filter", "refusal", "SAFETY"). Result.StopReason and the
// model-call events carry the stop reason as the provider spelled it.
// Cancelling the context stops the run at
// the next suspension point (the model call and tools get the context);
// what the run did and no checkpoint holds yet (the user's message when
// the first model call was cut short, an interrupted step) is
// checkpointed before the run returns, so the LimitError's Result and the
// stored thread agree and an empty Input continues the thread; the
// layers are closed on every exit path, with a context that is not
// cancelled so they can flush.
//
// # Tools
//
// A [Tool] has a name, a description, a JSON Schema for its arguments
// object (sent to the model verbatim, and checked with
// santhosh-tekuri/jsonschema before the tool runs; each schema is
// compiled once and kept while among the 256 most recently
// used) and a Call. [NewTool] builds a typed tool that decodes
// its arguments into a Go value; without an explicit schema it infers one
// from the Go type with github.com/google/jsonschema-go (JSON field
// names, types, required fields, descriptions from jsonschema tags), so
// the model sees the fields; [FromLangchain] adapts a langchaingo
// tools.Tool, whose input is one string: the model is offered an "input"
// string parameter and the tool receives its value (or the raw JSON
// arguments when the model sent no "input" string). [New] finds every
// configuration problem it can see (names, schemas, layer specs, layer
// tools whose wire names clash), so a run never fails for one.
//
// An unknown tool name, arguments that are not a JSON object or fail the
// schema, a tool error and a tool panic all become the tool's result,
// prefixed "error: ", and the run continues: the model can correct
// itself. That text is written for the model: memlayer's package
// prefixes ("layer: ", "agentloop: ") are left out (the Go errors keep
// them), and a schema failure under an anyOf [T, null] wrapper (how the
// scratchpad's update tool lets a field say "no change") reports what T
// wants. A layer function may have aliases: the scratchpad's legacy
// updateWorkingMemory call runs as its update tool. The same schema validation is plugged into the layer stack
// (layer.StackConfig.ValidateArgs), so layer functions are checked too;
// [ValidateArgs] offers it to stacks built by hand. Schema errors list
// every violation with its JSON pointer, which is what a model needs to
// correct its call.
//
// # What models and providers send
//
// A response with several choices is one assistant turn (langchaingo's
// Anthropic client returns one choice per content block: a text block,
// then one per tool_use): the texts are joined and every tool call runs,
// in order; usage and stop reason are the first choice's, never summed.
// Only when Config.CallOptions ask for alternatives (llms.WithN(n), n >
// 1) is the first choice the answer. Replayed to that Anthropic client,
// which sends only the first part of a message, an assistant turn goes
// as one message per part; the Messages API combines them again.
//
// Only the names offered to the model run: a layer function is called by
// its wire name, never its internal one. What is stored is what every
// client accepts when the thread continues, possibly on another
// provider: a call whose arguments are not a JSON object is kept with {}
// (its error result quotes up to 1,000 bytes of what the model sent, and
// the layers' Store gets it whole), and one whose name providers refuse
// is kept as "invalid_tool_name". A thread loaded from the store is
// treated the same way.
//
// A panic in a model call, a tool, a child agent or Config.Stream is
// recovered, logged with its stack, and becomes that call's error
// (matching ErrPanic): a model call's ends the run, the others reach the
// model as a tool result. Reported usage that is all zero (langchaingo's
// OpenAI client when a server omits it), negative, not a number or above
// 100 million tokens for one call is replaced by the estimate, marked
// Usage.Estimated, so MaxTokens still applies.
//
// # Threads and checkpoints
//
// After every step the run writes what the step added (see "The stored
// thread" below): its messages as a segment, the layer snapshots that
// changed, a new summary if one was made, and then the thread's head
// under storage.ThreadKey(threadID, "checkpoint") with compare-and-swap
// against the version the run started from. A new Agent, in a new
// process, with the same store and thread ID continues the
// conversation: the history comes from the thread and the layers load
// their own state in Init. Two overlapping runs of one thread cannot both
// win: the loser fails with a [*CheckpointError] matching ErrCheckpoint and
// storage.ErrConflict, whose SavedSteps and SavedMessages say how much of
// the losing run the thread kept (its first steps may have been saved
// before the other run started; then its user message is in the thread
// and a retry with the same Input would repeat it). The loser's records
// are written under names no other write uses and are never named by a
// head, so none of them is ever read (the run deletes them). A head that
// vanished under the run (a store restarted empty, an expired or deleted
// key) is reported as ErrCheckpointGone instead, and not recreated, so an
// erase stays an erase: the Result holds the history the run had, and the
// next run with an Input starts the thread afresh. The snapshot in the
// thread is restored into the layers only with Config.RestoreLayers, and
// then only for thread- and execution-scoped layers: resource and global
// state may have moved on in other threads since, and the layers' own
// storage is the source of truth.
//
// Earlier turns are compacted when a run starts: each tool result is
// replaced by a one-line reference (the tool, the size, the first 120
// characters), and tool-call arguments over 256 bytes by
// {"_compacted":"<n> bytes"} (still a JSON object, because providers are
// sent it), since layers such as entity memory and the scratchpad keep
// what mattered and the full text would fill the window. The current
// turn's results and arguments stay whole (a run without Input continues
// the last turn, so that turn stays whole too). Compaction is recorded
// in the head (Checkpoint.Compacted: how many messages, from the first,
// are compacted), never recognised by a message's text, so a tool
// result cannot pass itself off as a reference; the stored messages of
// the window stay as written.
// Config.KeepToolResults turns compaction off.
//
// What a run holds of a thread is its window, not the whole thread:
// [Result.Messages] (also in a [*LimitError]'s Result) is the messages
// the summary did not cover when the run started, then the run's own;
// [Agent.LoadCheckpoint] returns the head, the summary
// ([thread.Checkpoint].Summary) and the messages it does not cover
// ([thread.Checkpoint].Messages, from message Checkpoint.First of
// Checkpoint.Total), compacted as a run would load them. The whole
// transcript, as stored and never compacted, is [Agent.Transcript]'s
// (for audit and for layers that keep their own log); it reads every
// segment it keeps. history.Config.RetainMessages bounds what it keeps,
// by default too ([thread.DefaultRetainMessages], 200): when a summary is
// stored, the messages it covers that are older than the last 200 are
// deleted, and the covered ones kept have each text, argument or result
// over [thread.ElideAbove] (4 KiB) cut to a stub with its size and SHA-256
// ([thread.Elided]), so a model that sends a 60 KB argument every turn leaves a
// thread of about 360 KB, not one that grows 60 KB a turn. The summary's
// record names the covered segments kept, so retention never lists the
// store. The window, the summary, the layers' own records (the episodic
// log keeps each result whole) and the audit trail are not touched; a
// negative RetainMessages keeps every message whole.
//
// # History
//
// The model is sent a window of recent turns and a rolling summary of
// the older ones ([history.Config]; history.Config.Full sends the whole
// history instead). A turn is a user message and
// everything up to the next one, so a tool call is never separated from
// its result. The window holds the current turn and at least
// history.Config.MaxTurns (4) turns before it; when
// history.Config.SummarizeAfter (2) more have left it, they are
// summarized, so no turn leaves the prompt before the summary holds it.
// When the window does not fit its share of the context window, its
// oldest turns are summarized at once. The summary is shown by the
// built-in layer "history_summary" (slot 200, template variable
// historySummary, fenced as <history_summary>), whose budget
// (history.Config.SummaryTokens, 500) is taken from the history's
// share.
//
// A [history.Summarizer] writes the summary. The default,
// [history.DeterministicSummarizer], needs no model: one line per turn with the
// request, each tool and its call ID, the IDs and names of the entities
// its result mentions (read with a forgiving scanner, so a truncated
// result still gives its IDs), failures and the answer's start; over its
// budget, the oldest turns are told more coarsely (history.Resolution:
// a shorter line per turn, then one list of IDs for the oldest). It runs when a
// step is recorded, so a step's prompt depends only on what was stored
// before the step. [history.NewModelSummarizer] asks any langchaingo model, with
// a replaceable prompt; it runs in the background, the steps meanwhile
// use the previous summary, and a run waits for it (bounded by
// Config.SaveTimeout once the run's context has ended) and stores it
// before returning. A failed summary is reported (EventSummary) and the
// previous one stays. Summaries are numbered ([thread.Summary].Version) and
// stored with the thread.
//
// # The stored thread
//
// Package thread stores the thread: a small head under compare-and-swap,
// append-only message segments, the summary and the layer snapshots, in
// memlayer's own JSON format, never langchaingo's. Its documentation
// describes the records and every version's migration.
//
// # Child agents
//
// [Agent.Spawn] (from code, on a thread), [ToolContext.Spawn] (from inside a
// tool, on the tool's run) and the spawn_agent tool (offered to the model unless
// Config.DisableSpawnTool) run a child agent on a subtask: same model and
// tools, its own instructions if given, and layers derived from the
// parent's through [layer.Stack.Spawn] — each layer's OnSpawn decides
// what the child inherits, so the child's layer tools act on the child's
// state. The child's final answer is the tool result; afterwards
// [layer.Stack.Return] lets parent layers merge the child's changes.
// Depth is bounded by Config.MaxDepth: at the limit, spawn_agent is no
// longer offered and Spawn fails with ErrMaxDepth. Children are not
// checkpointed. A run and all its children, at every depth, share its
// limits: MaxTokens counts every child's tokens (a child starts no model
// call once the run is over it) and the run's Result.Usage includes
// them; Config.MaxChildrenPerStep bounds the spawn_agent calls run for
// one response (the others are answered with an error) and
// Config.MaxChildrenPerRun the children started in all (ErrMaxChildren).
//
// A child can also have layers of its own, which its parent has not:
// from code, SpawnInput.Layers; by ID, SpawnInput.LayerIDs picks from
// Config.SpawnLayers, and so does the spawn_agent tool's "layers"
// argument, whose schema enumerates exactly those IDs, so the model can
// only choose among the layers the developer offered. They are
// initialised with the child's env and closed when the child ends.
//
// # Tools and the current run
//
// The layers are bound per run: each run's stack holds its own thread's,
// resource's or global state, loaded in Init. A tool that needs that
// state is made with [NewContextTool] (or sets Tool.CallContext) and gets
// the [ToolContext] of each call: [ToolContext.Stack] is the run's stack,
// in which layer.Find or a layer package's helper (workingmemory.From and
// workingmemory.StateAs, kv.From) finds a layer; in a child agent it is
// the child's run. This is the one way for a tool to reach the current
// run's memory; a tool must not keep layer state of its own, which would
// be shared by every thread and user of the agent.
//
// # Observability
//
// Every model call (with token usage read from GenerationInfo, or
// estimated with the token counter when the model reports none), tool
// call, layer hook, step and checkpoint is an [Event] for Config.Observer
// and a debug record for Config.Logger (a failed checkpoint is a
// warning). A step event's Duration minus ModelTime and ToolTime is
// memlayer's own overhead. Config.Stream receives the model's text as it
// is generated, through llms.WithStreamingFunc; the tool-call deltas that
// langchaingo's OpenAI client streams through the same func are filtered
// out.
//
// # Traces
//
// With Config.TracerProvider (or otel's global provider) set, a run is
// traced. The spans follow OpenTelemetry's GenAI semantic conventions
// (go.opentelemetry.io/otel/semconv/v1.41.0, the newest with them):
//
//	invoke_agent {Config.Name}      the run: gen_ai.agent.name, gen_ai.conversation.id (the thread)
//	  memlayer.checkpoint.load      reading the thread
//	  memlayer.step                 one step, memlayer.step
//	    chat {model}                the model call: gen_ai.request.model, gen_ai.provider.name,
//	                                gen_ai.usage.input_tokens and output_tokens, gen_ai.response.finish_reasons
//	    execute_tool {tool}         each tool call: gen_ai.tool.name, gen_ai.tool.call.id
//	    memlayer.hook               each layer hook: memlayer.layer, memlayer.hook
//	    memlayer.search             a layer's index query: memlayer.layer, memlayer.search.k and hits
//	    memlayer.index, .unindex    a layer's index writes: memlayer.layer, memlayer.index.documents
//	    memlayer.checkpoint.save    the step's checkpoint
//	  memlayer.audit.commit         the run's audit turn: memlayer.audit.entries
//
// Config.ModelName and Config.ModelProvider name the model (see
// there). When the provider reports no usage, the tokens are memlayer's
// estimate and memlayer.usage.estimated is true. Attributes carry IDs,
// names and counts, never text from memory, prompts or tool results; an
// error's text is masked by the agent's redactor. The I/O spans are made
// only under a span that records, so without a provider a run allocates
// nothing for them.
//
// # Write gating and the audit trail
//
// What the model asks a layer's write tool (semantic memory's memorize)
// to keep is a layer.Write {Kind, Text, Importance, Source}, and the
// agent's route.Router (Config.Router) decides where it goes:
// route.Default, with no model call, sends transient reasoning (kind reasoning, thought, plan, ...)
// to the scratchpad, an actionable outcome (outcome, action, tool_result,
// ...) to the episode log, and a durable fact (fact, skill, preference,
// profile, decision, ...) to semantic memory, and routes any other kind
// by its text. It then gates the write: it measures its importance, its
// novelty against what the destination layer holds (the layer's
// candidates, layer.CandidateSource) and its size, and refuses it below
// the route.Thresholds; the model gets the refusal and its reason as the
// tool's error. A route.Func replaces the table (and is not gated); a route.Route names a layer ID or the
// sort of write a layer.Keeper keeps. A layer's Store can propose writes
// too: a layer that is a layer.Proposer has what it proposed in each
// step routed, kept and audited the same way.
//
// Every memory operation of a run is recorded — each layer's recall (under
// scored assembly, on by default, every candidate with its score and
// whether it was packed), each route and its reason, each write, superseded or
// forgotten fact, what each layer's Store kept and evicted and how many
// key-value entries the step's code wrote (where the layer counts them in
// its Metrics), the values redacted — and
// committed as the run ends, as one turn of the thread's audit (package
// audit), stored with the thread through Config.Store, the newest
// AuditConfig.Keep turns kept. Result.Writes lists what the run wrote,
// Result.Audit is the committed turn (an [EventAudit] reports the commit),
// [Agent.Audit] reads a thread's turns, and [Agent.Commit] commits a turn
// for code that uses the layers outside [Agent.Run]. A corrupt or failed
// audit never fails a run. Audited texts are masked as stored texts are.
//
// # Budget status
//
// A run's [Status] is where it stands against its budgets: the tokens
// each layer used and left of the last step's prompt, the tokens in
// total, the events so far by kind, and the time elapsed against
// Config.Timeout. A tool or a layer reads it during the run with
// [RunStatus]; Result.Status is its value as the run ended. A [Tally]
// builds the same value from observed events, for code outside the loop.
//
// # Cost
//
// A step's cost does not grow with the thread: a run loads only the
// summary and the messages it does not cover, a step writes only what it
// added (its segment, the head, the layer snapshots that changed), and
// usage estimates reuse each message's token count. The stack runs the
// layers' Snapshot hooks as one batch on a reused goroutine. On a store
// that is a storage.Batcher, a step's records and head commit as one
// transaction.
//
// # langchaingo interop
//
// Package chainmemory adapts a layer stack to langchaingo's
// schema.Memory and exports the layers' functions as langchaingo tools.
// The package agentloop/agenttest has a scripted llms.Model for tests.
//
// # Concurrency
//
// An [Agent] is immutable after [New] and safe for concurrent use; runs
// on different threads are independent. Tools, the Observer and Stream
// may be called from several goroutines at once.
package agentloop
