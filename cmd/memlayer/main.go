// Command memlayer looks at, labels and erases the memory memlayer agents
// stored.
//
// Usage:
//
//	memlayer [-store S] [-json] COMMAND [ARGS]
//
//	threads [-limit N] [-offset N]                 list every thread, newest first
//	threads -resource R [-limit N] [-cursor C] [-meta K=V]...
//	                                               a resource's threads, newest first, with titles
//	show THREAD                                    a thread's metadata, summary and messages
//	messages [-from N] [-limit N] THREAD           a page of a thread's messages (-from -N: the last N)
//	title [-resource R] THREAD [TITLE]             a thread's title; set it ("" derives it again)
//	meta [-resource R] [-unset K]... THREAD [K=V]...
//	                                               a thread's metadata; set and remove entries
//	reindex                                        list every stored thread under its resource again
//	state LAYER SCOPE                              a layer's records for a scope key
//	                                               (LAYER: working_memory, kv_memory, entity_memory,
//	                                               episodic_memory, semantic_memory, or your layer's ID)
//	quarantined                                    records the layers set aside
//	restore [-replace] KEY                         put a quarantined record back as its layer's state
//	erase [-y] RESOURCE                            delete everything stored for a resource
//	delete [-y] THREAD                             delete a thread and its thread-scoped records
//	export [-resource R]                           every record (or a resource's) as JSON lines
//
// Flags go before or after the command and its arguments; "--" ends
// them (for an ID that starts with "-"). A flag the command does not
// take is an error that names it.
//
// The store is a SQLite file path, a Redis URL (redis://, rediss://,
// redis+cluster://, rediss+cluster://) or a PostgreSQL URL (postgres://,
// postgresql://; the tables of storage/postgres's defaults), given by
// -store or, without it, $MEMLAYER_STORE; -namespace picks the Redis key
// namespace. PostgreSQL needs a build with the postgres tag
// (go install -tags postgres), which links its client. Output is a
// table for people, in which stored text is escaped: control characters,
// bidirectional overrides and line breaks print as \xNN, \uNNNN, \n, so
// no stored value reaches the terminal as a control sequence or forges a
// line. -json prints JSON (one object a line for lists) for scripts, with
// encoding/json's escaping. threads -resource reads the resource's list
// of threads (thread.Catalog), 20 a page unless -limit: the table ends
// with the -cursor of the next page, and -json with a {"next": CURSOR}
// line. -offset pages the scan of every thread instead. reindex adds
// the threads written by builds that kept no lists (thread.Catalog.Reindex);
// run it once the last process of such a build has stopped. messages -json
// prints the page as one object (thread.MessagePage). title and meta
// need -resource only for a thread no run has stored yet. A title or
// metadata entry that is too long or holds a control character, a bad
// -limit or -cursor, and an ID over thread.MaxIDLen exit 2, like any
// bad command line; a thread not found exits 1. erase and delete ask
// for confirmation on standard error and read the answer from standard
// input unless -y, so that standard output holds only the result; one
// that finds nothing to remove says "0 records found" and exits 1.
// Global-scope state is shared by every user and is not erased with a
// resource (see inspect.Inspector).
//
// Layers are named by their IDs, as in the docs, the prompt's block tags
// and the tools: state's LAYER, show's layers, quarantined's LAYER
// column (and layer_id with -json) and the counts of erase and delete.
// state also takes the name a built-in layer's data is stored under
// (working-memory, kv-memory, entities, episodic-memory, semantic):
// deprecated, with a note on standard error. Keys (quarantined's,
// restore's, export's) are printed as stored. A LAYER that is no
// built-in layer and has no record in the store exits 2.
package main

import (
	"context"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
