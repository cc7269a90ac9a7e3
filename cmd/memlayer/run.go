package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/memlayer/memlayer/inspect"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/redis"
	"github.com/memlayer/memlayer/storage/sqlite"
	"github.com/memlayer/memlayer/thread"
)

// errUsage is a command line that cannot be run; the usage is printed.
var errUsage = errors.New("usage")

const usage = `usage: memlayer [-store S] [-json] COMMAND [ARGS]

commands:
  threads [-limit N] [-offset N]                 list every thread, newest first
  threads -resource R [-limit N] [-cursor C] [-meta K=V]...
                                                 a resource's threads, newest first, with titles
  show THREAD                                    a thread's metadata, summary and messages
  messages [-from N] [-limit N] THREAD           a page of a thread's messages (-from -N: the last N)
  title [-resource R] THREAD [TITLE]             a thread's title; set it ("" derives it again)
  meta [-resource R] [-unset K]... THREAD [K=V]...
                                                 a thread's metadata; set and remove entries
  reindex                                        list every stored thread under its resource again
  state LAYER SCOPE                              a layer's records for a scope key
                                                 (LAYER: working_memory, kv_memory, entity_memory,
                                                 episodic_memory, semantic_memory, or your layer's ID)
  quarantined                                    records the layers set aside
  restore [-replace] KEY                         put a quarantined record back as its layer's state
  erase [-y] RESOURCE                            delete everything stored for a resource
  delete [-y] THREAD                             delete a thread and its thread-scoped records
  export [-resource R]                           every record (or a resource's) as JSON lines

Flags go before or after the command and its arguments; "--" ends them.
The store is a SQLite file, a Redis URL or a PostgreSQL URL (postgres://):
-store, or $MEMLAYER_STORE.
`

// command is what a command takes: how many arguments, and which flags
// besides the global ones (-store, -namespace, -json); and what runs it.
type command struct {
	// args is how many arguments it takes; more, up to maxArgs (-1: any
	// number), are optional.
	args, maxArgs int
	flags         []string
	run           func(ctx context.Context, x invocation) error
}

// invocation is what a command runs with: the store's inspector, the
// flags, the arguments and the standard streams.
type invocation struct {
	in          inspect.Inspector
	o           *opts
	args        []string
	stdin       io.Reader
	out, stderr io.Writer
}

// commands are the commands by name.
var commands = map[string]command{
	"threads": {0, 0, []string{"resource", "limit", "offset", "cursor", "meta"}, func(ctx context.Context, x invocation) error {
		return threads(ctx, x.in, x.o, x.out)
	}},
	"show":        {1, 1, nil, func(ctx context.Context, x invocation) error { return show(ctx, x.in, x.o, x.args[0], x.out) }},
	"messages":    {1, 1, []string{"from", "limit"}, messages},
	"title":       {1, 2, []string{"resource"}, title},
	"meta":        {1, -1, []string{"resource", "unset"}, meta},
	"reindex":     {0, 0, nil, reindex},
	"state":       {2, 2, nil, state},
	"quarantined": {0, 0, nil, func(ctx context.Context, x invocation) error { return quarantined(ctx, x.in, x.o, x.out) }},
	"restore":     {1, 1, []string{"replace"}, restore},
	"erase": {1, 1, []string{"y"}, func(ctx context.Context, x invocation) error {
		return erase(ctx, x.in, x.o, x.args[0], x.stdin, x.out, x.stderr)
	}},
	"delete": {1, 1, []string{"y"}, func(ctx context.Context, x invocation) error {
		return deleteThread(ctx, x.in, x.o, x.args[0], x.stdin, x.out, x.stderr)
	}},
	"export": {0, 0, []string{"resource"}, func(ctx context.Context, x invocation) error { return export(ctx, x.in, x.o, x.out) }},
}

// globalFlags are taken by every command.
var globalFlags = []string{"store", "namespace", "json"}

// opts are the flags, accepted before or after the command.
type opts struct {
	store, namespace, resource, cursor string
	json, yes, replace                 bool
	limit, offset, from                int
	meta, unset                        list
}

// list is a flag that may be given many times.
type list []string

func (l *list) String() string { return strings.Join(*l, ",") }

func (l *list) Set(v string) error {
	*l = append(*l, v)
	return nil
}

func (o *opts) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.store, "store", o.store, "SQLite file, Redis URL or postgres:// URL (default $MEMLAYER_STORE)")
	fs.StringVar(&o.namespace, "namespace", o.namespace, "Redis key namespace (default the store's)")
	fs.BoolVar(&o.json, "json", o.json, "print JSON")
	fs.BoolVar(&o.yes, "y", o.yes, "erase or delete without asking")
	fs.BoolVar(&o.replace, "replace", o.replace, "restore over the layer's newer state")
	fs.StringVar(&o.resource, "resource", o.resource, "only this resource")
	fs.IntVar(&o.limit, "limit", o.limit, "at most this many threads")
	fs.IntVar(&o.offset, "offset", o.offset, "skip this many threads")
	fs.StringVar(&o.cursor, "cursor", o.cursor, "the page after this cursor")
	fs.Var(&o.meta, "meta", "only threads with this metadata entry, K=V")
	fs.Var(&o.unset, "unset", "remove this metadata key")
	fs.IntVar(&o.from, "from", o.from, "the index of the first message; negative counts from the end")
	return fs
}

// parseInterspersed parses args with fs, taking flags between and after
// the arguments as well as before them (the flag package stops at the
// first argument), and returns the arguments. After "--" everything is an
// argument.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		left := fs.Args()
		if n := len(args) - len(left); n > 0 && args[n-1] == "--" {
			return append(rest, left...), nil
		}
		if len(left) == 0 {
			return rest, nil
		}
		rest, args = append(rest, left[0]), left[1:]
	}
}

// run runs the command line args and returns the exit status: 0, 1 for
// a failure (an erase or delete that finds nothing to remove included), 2
// for a bad command line. Questions go to stderr, so that stdout holds
// only the output (JSON lines with -json).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	err := runErr(ctx, args, stdin, stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage), errors.Is(err, thread.ErrInvalidMeta), errors.Is(err, thread.ErrInvalidQuery), errors.Is(err, thread.ErrInvalidID):
		fmt.Fprintf(stderr, "memlayer: %v\n\n%s", err, usage)
		return 2
	default:
		fmt.Fprintf(stderr, "memlayer: %v\n", err)
		return 1
	}
}

func runErr(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	o := &opts{store: os.Getenv("MEMLAYER_STORE")}
	fs := o.flags("memlayer")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: no command", errUsage)
	}
	cmd := fs.Arg(0)
	c, ok := commands[cmd]
	if !ok {
		return fmt.Errorf("%w: unknown command %q", errUsage, cmd)
	}
	cfs := o.flags(cmd)
	rest, err := parseInterspersed(cfs, fs.Args()[1:])
	if err != nil {
		return fmt.Errorf("%w: %s: %w", errUsage, cmd, err)
	}
	if err := c.checkUse(cmd, rest, fs, cfs); err != nil {
		return err
	}
	st, closeStore, err := openStore(ctx, o.store, o.namespace)
	if err != nil {
		return err
	}
	defer closeStore()
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	return c.run(ctx, invocation{in: inspect.Inspector{Store: st}, o: o, args: rest, stdin: stdin, out: out, stderr: stderr})
}

// checkUse checks that the flags set in sets are global ones or the
// command's own, and that it got as many arguments (rest) as it takes.
func (c command) checkUse(name string, rest []string, sets ...*flag.FlagSet) error {
	var bad []string
	allowed := slices.Concat(globalFlags, c.flags)
	notFor := func(f *flag.Flag) {
		if !slices.Contains(allowed, f.Name) && !slices.Contains(bad, "-"+f.Name) {
			bad = append(bad, "-"+f.Name)
		}
	}
	for _, fs := range sets {
		fs.Visit(notFor)
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s does not take %s", errUsage, name, strings.Join(bad, ", "))
	}
	return c.checkArgs(name, len(rest))
}

// checkArgs checks that the command takes n arguments.
func (c command) checkArgs(name string, n int) error {
	if n >= c.args && (c.maxArgs < 0 || n <= c.maxArgs) {
		return nil
	}
	if c.maxArgs == c.args {
		return fmt.Errorf("%w: %s takes %d argument(s), got %d", errUsage, name, c.args, n)
	}
	most := "any number of"
	if c.maxArgs >= 0 {
		most = strconv.Itoa(c.maxArgs)
	}
	return fmt.Errorf("%w: %s takes %d to %s arguments, got %d", errUsage, name, c.args, most, n)
}

// restore puts a quarantined record back (Inspector.RestoreQuarantined).
func restore(ctx context.Context, x invocation) error {
	target, err := x.in.RestoreQuarantined(ctx, x.args[0], x.o.replace)
	if errors.Is(err, storage.ErrConflict) {
		return fmt.Errorf("%w (the layer has a newer state: -replace overwrites it)", err)
	}
	if err != nil {
		return err
	}
	if x.o.json {
		return writeJSON(x.out, map[string]string{"restored": x.args[0], "to": target})
	}
	fmt.Fprintf(x.out, "restored %s to %s\n", safe(x.args[0]), safe(target))
	return nil
}

// openPostgres opens a PostgreSQL URL. It is nil unless the command is
// built with the postgres tag (postgres.go), which keeps the PostgreSQL
// client out of the default build.
var openPostgres func(ctx context.Context, url string) (storage.Store, func(), error)

// openStore opens a Redis URL, a PostgreSQL URL or an existing SQLite
// file.
func openStore(ctx context.Context, spec, namespace string) (storage.Store, func(), error) {
	if spec == "" {
		return nil, nil, fmt.Errorf("%w: no store: give -store (a SQLite file or a Redis URL) or set MEMLAYER_STORE", errUsage)
	}
	scheme, _, isURL := strings.Cut(spec, "://")
	switch {
	case slices.Contains([]string{"redis", "rediss", "redis+cluster", "rediss+cluster"}, scheme):
		return openRedis(ctx, spec, namespace)
	case scheme == "postgres" || scheme == "postgresql":
		if openPostgres == nil {
			return nil, nil, fmt.Errorf("%w: this memlayer was built without PostgreSQL support; build it with -tags postgres", errUsage)
		}
		return openPostgres(ctx, spec)
	case isURL:
		return nil, nil, fmt.Errorf("%w: unknown store URL scheme in %q (want a SQLite path, redis://... or postgres://...)", errUsage, scheme+"://")
	}
	return openSQLite(ctx, spec)
}

// openRedis opens a Redis URL and checks the server answers.
func openRedis(ctx context.Context, url, namespace string) (storage.Store, func(), error) {
	// go-redis would print its dial failures to stderr; the command
	// reports the error itself.
	redis.SetLogger(slog.New(slog.DiscardHandler))
	st, err := redis.New(redis.Config{URL: url, Namespace: namespace})
	if err != nil {
		return nil, nil, fmt.Errorf("open Redis store: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := st.Ping(pctx); err != nil {
		st.Close()
		return nil, nil, fmt.Errorf("cannot reach the Redis server: %w", err)
	}
	return st, func() { st.Close() }, nil
}

// openSQLite opens an existing SQLite file.
func openSQLite(ctx context.Context, path string) (storage.Store, func(), error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("SQLite store %q: %w", path, err)
	}
	if fi.IsDir() {
		return nil, nil, fmt.Errorf("SQLite store %q is a directory", path)
	}
	st, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		return nil, nil, err
	}
	return st, func() { st.Close() }, nil
}

// writeJSONLines prints each of vs as one line of JSON.
func writeJSONLines[T any](w io.Writer, vs []T) error {
	for _, v := range vs {
		if err := writeJSON(w, v); err != nil {
			return err
		}
	}
	return nil
}

// writeJSON prints v as one line of JSON.
func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func threads(ctx context.Context, in inspect.Inspector, o *opts, w io.Writer) error {
	if o.resource != "" && o.offset == 0 {
		return resourceThreads(ctx, in, o, w)
	}
	if o.cursor != "" || len(o.meta) > 0 {
		return fmt.Errorf("%w: threads: -cursor and -meta page and filter a resource's threads: give -resource (and no -offset)", errUsage)
	}
	ts, err := in.Threads(ctx, inspect.ThreadQuery{ResourceID: o.resource, Limit: o.limit, Offset: o.offset})
	if err != nil {
		return err
	}
	if o.json {
		return writeJSONLines(w, ts)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "THREAD\tRESOURCE\tAGENT\tMESSAGES\tSTEPS\tUPDATED")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", safe(t.ThreadID), dash(t.ResourceID), dash(t.Agent), t.Messages, t.Steps, t.UpdatedAt.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}

// dash returns s escaped (see safe), or "-" for an empty s.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return safe(s)
}

// threadView is a thread as show prints it with -json.
type threadView struct {
	Thread   thread.Info                `json:"thread"`
	Title    string                     `json:"title,omitempty"`
	Metadata map[string]string          `json:"metadata,omitempty"`
	Summary  thread.Summary             `json:"summary"`
	First    int                        `json:"first"`
	Messages []thread.Message           `json:"messages"`
	Layers   map[string]json.RawMessage `json:"layers,omitempty"`
}

func show(ctx context.Context, in inspect.Inspector, o *opts, id string, w io.Writer) error {
	c, err := in.Thread(ctx, id)
	if err != nil {
		return err
	}
	t, err := catalog(in).Get(ctx, id)
	if err != nil {
		return err
	}
	v := threadView{Title: t.Title, Metadata: t.Metadata,
		Thread: thread.Info{ThreadID: c.ThreadID, ResourceID: c.ResourceID, Agent: c.Agent, Steps: c.Steps,
			Messages: c.Total, Usage: c.Usage, UpdatedAt: c.UpdatedAt, Version: c.Version},
		Summary: c.Summary, First: c.First, Messages: c.Messages, Layers: byID(c.Layers.Layers),
	}
	if o.json {
		return writeJSON(w, v)
	}
	fmt.Fprintf(w, "thread:    %s\ntitle:     %s\nresource:  %s\nagent:     %s\nupdated:   %s\nsteps:     %d\nmessages:  %d (stored from %d)\ntokens:    %d in, %d out\n",
		safe(v.Thread.ThreadID), dash(v.Title), dash(v.Thread.ResourceID), dash(v.Thread.Agent), v.Thread.UpdatedAt.UTC().Format(time.RFC3339), v.Thread.Steps,
		v.Thread.Messages, v.First, v.Thread.Usage.PromptTokens, v.Thread.Usage.CompletionTokens)
	if len(v.Metadata) > 0 {
		fmt.Fprintf(w, "metadata:  %s\n", safe(metaText(v.Metadata)))
	}
	if ids := slices.Sorted(mapKeys(v.Layers)); len(ids) > 0 {
		fmt.Fprintf(w, "layers:    %s\n", safe(strings.Join(ids, ", ")))
	}
	if v.Summary.Text != "" {
		fmt.Fprintf(w, "\nsummary (v%d, of the first %d messages):\n%s\n", v.Summary.Version, v.Summary.Covers, indent(v.Summary.Text))
	}
	fmt.Fprintln(w, "\nmessages:")
	for i, m := range v.Messages {
		writeMessage(w, v.First+i, m)
	}
	return nil
}

// writeMessage writes message number i of a thread for show: its role
// and text, then a line per tool call and result.
func writeMessage(w io.Writer, i int, m thread.Message) {
	fmt.Fprintf(w, "[%d] %s:", i, safe(m.Role))
	if m.Text != "" {
		fmt.Fprintf(w, " %s%s", safe(m.Text), elidedNote(m.TextElided))
	}
	fmt.Fprintln(w)
	for _, tc := range m.ToolCalls {
		fmt.Fprintf(w, "    call %s %s(%s)%s\n", safe(tc.ID), safe(tc.Name), safe(tc.Arguments), elidedNote(tc.Elided))
	}
	for _, tr := range m.ToolResults {
		fmt.Fprintf(w, "    result %s %s: %s%s\n", safe(tr.CallID), safe(tr.Name), safe(tr.Content), elidedNote(tr.Elided))
	}
}

// elidedNote says what retention cut from a stored text (see
// thread.Elided), or nothing.
func elidedNote(e *thread.Elided) string {
	if e == nil {
		return ""
	}
	return fmt.Sprintf(" [elided: %d bytes, sha256 %s]", e.Bytes, safe(e.SHA256))
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// indent returns the lines of s, each escaped (see safe) and indented
// by two spaces.
func indent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = "  " + safe(l)
	}
	return strings.Join(lines, "\n")
}

// recordView is a stored record as state and export print it: the value
// as JSON when it is JSON, else as a string.
type recordView struct {
	Key     string          `json:"key"`
	Version int64           `json:"version"`
	Value   json.RawMessage `json:"value,omitempty"`
	Text    *string         `json:"text,omitempty"`
}

func view(it storage.Item) recordView {
	r := recordView{Key: it.Key, Version: it.Version}
	if json.Valid(it.Value) {
		r.Value = json.RawMessage(it.Value)
	} else {
		s := string(it.Value)
		r.Text = &s
	}
	return r
}

// state prints a layer's records for a scope key. The layer is named by
// its ID (a built-in layer's stored name is a deprecated alias); a name
// that is neither a built-in layer's nor holds any record is an error.
func state(ctx context.Context, x invocation) error {
	r := resolveLayer(x.args[0], x.stderr)
	scope := x.args[1]
	items, err := x.in.LayerState(ctx, r.stored, scope)
	if err != nil {
		return err
	}
	if len(items) == 0 {
		if err := checkKnown(ctx, x.in.Store, r); err != nil {
			return err
		}
	}
	if x.o.json {
		for _, it := range items {
			if err := writeJSON(x.out, view(it)); err != nil {
				return err
			}
		}
		return nil
	}
	if len(items) == 0 {
		fmt.Fprintf(x.out, "layer %s has no records for scope %q\n", r, scope)
		return nil
	}
	for _, it := range items {
		printRecord(x.out, it)
	}
	return nil
}

// printRecord prints a layer record under its name: a JSON value
// compacted (its line breaks are layout), then every value escaped, so
// it is one line of output.
func printRecord(w io.Writer, it storage.Item) {
	name := it.Key
	if lk, ok := inspect.ParseLayerKey(it.Key); ok {
		name = lk.Name
	}
	value := it.Value
	var c bytes.Buffer
	if json.Compact(&c, value) == nil {
		value = c.Bytes()
	}
	fmt.Fprintf(w, "== %s (version %d, %d bytes)\n%s\n", safe(name), it.Version, len(it.Value), safe(string(value)))
}

func quarantined(ctx context.Context, in inspect.Inspector, o *opts, w io.Writer) error {
	qs, err := in.Quarantined(ctx)
	if err != nil {
		return err
	}
	vs := quarantinedByID(qs)
	if o.json {
		return writeJSONLines(w, vs)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LAYER\tSCOPE\tAT\tKEY")
	for _, q := range vs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", safe(q.LayerID), safe(q.ScopeKey), q.At.Format(time.RFC3339), safe(q.Key))
	}
	return tw.Flush()
}

// confirm asks question on stderr and reads the answer from stdin; any
// answer but y or yes cancels.
func confirm(stdin io.Reader, stderr io.Writer, question, cancelled string) error {
	fmt.Fprintf(stderr, "%s? [y/N] ", question)
	line, _ := bufio.NewReader(stdin).ReadString('\n')
	if !strings.HasSuffix(line, "\n") {
		fmt.Fprintln(stderr) // no answer: end the question's line
	}
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		return fmt.Errorf("%s cancelled: nothing was deleted", cancelled)
	}
	return nil
}

// errNothingFound is an erase or delete that finds no record to remove:
// the command exits 1, as a typo in the ID must not pass for success.
var errNothingFound = errors.New("0 records found")

// removal is what erase and delete share: what is removed (a resource or
// a thread), its ID, the keys it would remove and the removal itself.
type removal struct {
	what, id string
	keys     func(context.Context) ([]string, error)
	remove   func(context.Context) (*inspect.Erased, error)
}

// run asks (unless -y) and removes: on stderr the question, on stdout
// the report (the Erased as JSON with -json). Finding nothing to remove
// is errNothingFound, with or without -y.
func (r removal) run(ctx context.Context, o *opts, stdin io.Reader, w, stderr io.Writer, verb, done string) error {
	nothing := func() error {
		return fmt.Errorf("%w for %s %q: nothing was %s", errNothingFound, r.what, r.id, done)
	}
	if !o.yes {
		keys, err := r.keys(ctx)
		if err != nil {
			return err
		}
		if len(keys) == 0 {
			return nothing()
		}
		if err := confirm(stdin, stderr, fmt.Sprintf("%s %s %q (%d records)", verb, r.what, r.id, len(keys)), verb); err != nil {
			return err
		}
	}
	e, err := r.remove(ctx)
	if err != nil {
		return err
	}
	if len(e.Keys) == 0 {
		return nothing()
	}
	e = erasedByID(e)
	if o.json {
		return writeJSON(w, e)
	}
	return r.report(w, e, done)
}

// report writes what the removal removed, as text: how many threads and
// records, then how many records of each kind.
func (r removal) report(w io.Writer, e *inspect.Erased, done string) error {
	fmt.Fprintf(w, "%s %s %q: %d threads, %d records\n", done, r.what, r.id, len(e.Threads), len(e.Keys))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, k := range slices.Sorted(mapKeys(e.Counts)) {
		fmt.Fprintf(tw, "  %s\t%d\n", safe(k), e.Counts[k])
	}
	return tw.Flush()
}

// erase deletes everything stored for a resource (Inspector.EraseResource).
func erase(ctx context.Context, in inspect.Inspector, o *opts, resource string, stdin io.Reader, w, stderr io.Writer) error {
	return removal{what: "resource", id: resource,
		keys:   func(ctx context.Context) ([]string, error) { return in.ResourceKeys(ctx, resource) },
		remove: func(ctx context.Context) (*inspect.Erased, error) { return in.EraseResource(ctx, resource) },
	}.run(ctx, o, stdin, w, stderr, "erase", "erased")
}

// deleteThread deletes a thread and its thread-scoped records
// (Inspector.DeleteThread).
func deleteThread(ctx context.Context, in inspect.Inspector, o *opts, thread string, stdin io.Reader, w, stderr io.Writer) error {
	if thread == "" {
		return fmt.Errorf("%w: delete: empty thread ID", errUsage)
	}
	return removal{what: "thread", id: thread,
		keys:   func(ctx context.Context) ([]string, error) { return in.ThreadKeys(ctx, thread) },
		remove: func(ctx context.Context) (*inspect.Erased, error) { return in.DeleteThread(ctx, thread) },
	}.run(ctx, o, stdin, w, stderr, "delete", "deleted")
}

func export(ctx context.Context, in inspect.Inspector, o *opts, w io.Writer) error {
	var keys []string
	var err error
	if o.resource != "" {
		keys, err = in.ResourceKeys(ctx, o.resource)
	} else {
		keys, err = in.Store.List(ctx, "")
	}
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	for _, k := range keys {
		it, err := in.Store.Get(ctx, k)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		if err := writeJSON(w, view(it)); err != nil {
			return err
		}
	}
	return nil
}
