package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/memlayer/memlayer/inspect"
	"github.com/memlayer/memlayer/thread"
)

// The commands on the application's view of threads (thread.Catalog):
// a resource's threads, titles, metadata and pages of messages.

// catalog returns the thread.Catalog of the inspector's store.
func catalog(in inspect.Inspector) thread.Catalog { return thread.Catalog{Store: in.Store} }

// pairs parses K=V arguments.
func pairs(what string, kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: %s %q is not KEY=VALUE", errUsage, what, kv)
		}
		m[k] = v
	}
	return m, nil
}

// nextPage is the line after a JSON list that has a next page.
type nextPage struct {
	Next string `json:"next"`
}

// resourceThreads lists a resource's threads (Catalog.List): a table,
// then the cursor of the next page; with -json a line per thread, then
// {"next": CURSOR} when there is a next page.
func resourceThreads(ctx context.Context, in inspect.Inspector, o *opts, w io.Writer) error {
	md, err := pairs("-meta", o.meta)
	if err != nil {
		return err
	}
	p, err := catalog(in).List(ctx, o.resource, thread.ListQuery{Limit: o.limit, Cursor: o.cursor, Metadata: md})
	if err != nil {
		return err
	}
	if o.json {
		return writeThreadsJSON(w, p)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "THREAD\tTITLE\tAGENT\tMESSAGES\tUPDATED\tMETADATA")
	for _, t := range p.Threads {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", safe(t.ThreadID), dash(t.Title), dash(t.Agent), t.Messages,
			t.UpdatedAt.UTC().Format(time.RFC3339), dash(metaText(t.Metadata)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if p.Next != "" {
		fmt.Fprintf(w, "next page: -cursor %s\n", p.Next)
	}
	return nil
}

// writeThreadsJSON writes a page of threads as JSON lines, then
// {"next": CURSOR} when there is a next page.
func writeThreadsJSON(w io.Writer, p thread.Page) error {
	if err := writeJSONLines(w, p.Threads); err != nil || p.Next == "" {
		return err
	}
	return writeJSON(w, nextPage{p.Next})
}

// metaText returns metadata as K=V pairs sorted by key.
func metaText(m map[string]string) string {
	keys := slices.Sorted(mapKeys(m))
	for i, k := range keys {
		keys[i] = k + "=" + m[k]
	}
	return strings.Join(keys, " ")
}

// messages prints a page of a thread's messages (Catalog.Messages); with
// -json the page as one object.
func messages(ctx context.Context, x invocation) error {
	p, err := catalog(x.in).Messages(ctx, x.args[0], thread.MessageQuery{From: x.o.from, Limit: x.o.limit})
	if err != nil {
		return err
	}
	if x.o.json {
		return writeJSON(x.out, p)
	}
	fmt.Fprintf(x.out, "messages %d to %d of %d (stored from %d)\n", p.First, p.Next, p.Total, p.Retained)
	for i, m := range p.Messages {
		writeMessage(x.out, p.First+i, m)
	}
	if p.Next < p.Total {
		fmt.Fprintf(x.out, "next page: -from %d\n", p.Next)
	}
	return nil
}

// title prints a thread's title, after setting it when given one.
func title(ctx context.Context, x invocation) error {
	c := catalog(x.in)
	var t thread.Thread
	var err error
	if len(x.args) == 2 {
		t, err = c.Update(ctx, x.args[0], thread.Update{ResourceID: x.o.resource, Title: &x.args[1]})
	} else {
		t, err = c.Get(ctx, x.args[0])
	}
	if err != nil {
		return err
	}
	return printThread(x, t)
}

// meta prints a thread's metadata, after setting the K=V arguments and
// removing the -unset keys.
func meta(ctx context.Context, x invocation) error {
	set, err := pairs("metadata", x.args[1:])
	if err != nil {
		return err
	}
	c := catalog(x.in)
	var t thread.Thread
	if len(set) > 0 || len(x.o.unset) > 0 {
		t, err = c.Update(ctx, x.args[0], thread.Update{ResourceID: x.o.resource, Set: set, Unset: x.o.unset})
	} else {
		t, err = c.Get(ctx, x.args[0])
	}
	if err != nil {
		return err
	}
	return printThread(x, t)
}

// reindex puts every stored thread on its resource's list
// (Catalog.Reindex).
func reindex(ctx context.Context, x invocation) error {
	if err := catalog(x.in).Reindex(ctx); err != nil {
		return err
	}
	if x.o.json {
		return writeJSON(x.out, map[string]bool{"reindexed": true})
	}
	fmt.Fprintln(x.out, "reindexed: every stored thread is on its resource's list")
	return nil
}

// printThread prints a thread's title and metadata: with -json the
// thread as one object.
func printThread(x invocation, t thread.Thread) error {
	if x.o.json {
		return writeJSON(x.out, t)
	}
	how := "derived"
	if t.TitleSet {
		how = "set"
	}
	fmt.Fprintf(x.out, "thread:    %s\nresource:  %s\ntitle:     %s (%s)\n", safe(t.ThreadID), dash(t.ResourceID), dash(t.Title), how)
	for _, k := range slices.Sorted(mapKeys(t.Metadata)) {
		fmt.Fprintf(x.out, "meta:      %s=%s\n", safe(k), safe(t.Metadata[k]))
	}
	return nil
}
