// Package history decides what of a thread's history a model is sent: a
// window of recent turns and a rolling summary of the older ones.
//
//	cfg := agentloop.Config{
//		Model:   model,
//		History: history.Config{MaxTurns: 6},
//	}
//
// A [Summarizer] writes the summary. The default, [DeterministicSummarizer],
// needs no model: one line per turn with the request, each tool and its
// call ID, the IDs and names of the entities its result mentions, failures
// and the start of the answer. [NewModelSummarizer] asks a langchaingo
// model instead. The summary is shown by the history_summary [Layer].
package history
