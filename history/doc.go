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
//
// # Resolutions
//
// A summary tells the history at three resolutions ([Resolution]): its
// newest turns step by step, older turns in one shorter line each, and
// the oldest in one line of their IDs and names. Each coarser form keeps
// the IDs and names of the finer one, as far as its budget allows:
//
//	Entities seen earlier: site_1 "Northwind"; page_101 "About Us"
//	- Turn: Add a team section → page_101, sec_7 "Team" | answer: Added sec_7.
//	- User: Publish About Us | publishPage (call c9) → page_101 "About Us" | answer: Published.
//
// Over its budget, the summary tells its oldest parts more coarsely
// ([Fit]): the newest lines, within half the budget, stay steps; older
// lines of steps become turn lines, then the oldest lines fold into the
// entities line. The summarizer fits each summary it
// writes to its budget, and the layer fits the summary it shows to the
// step's budget, so each part is shown at the finest resolution that
// fits, the newest the finest. A [ModelSummarizer] with MaxTokens asks
// its model to tell the summary more coarsely the same way.
package history
