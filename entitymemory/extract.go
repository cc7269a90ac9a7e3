package entitymemory

import (
	"bytes"
	"html"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/memlayer/memlayer/internal/jsonx"
)

// Entity is something the agent worked on: a page, a section, an issue, a
// file. Entities are identified by Type and ID together.
type Entity struct {
	// Type is the normalised type: lowercase words joined by '_', singular
	// ("page", "blog_post").
	Type string `json:"type"`
	// ID is the entity's identifier as text, exactly as the result gave
	// it; numeric IDs are written in decimal ("123"). See [MaxIDLen].
	ID string `json:"id"`
	// Name is a human name: a title, name, slug, filename, heading or
	// label, or the ID when the result had none. It is a single line of at
	// most MaxNameLen bytes.
	Name string `json:"name"`
	// Slug is an optional second handle: a slug, a Shopify handle, a Jira
	// key ("ED-1"), a Linear identifier ("ENG-123").
	Slug string `json:"slug,omitempty"`
	// Parent is the ID of the entity this one belongs to, when the tool
	// arguments (pageId on a section call) or the result named one.
	Parent string `json:"parent,omitempty"`
	// SeenAt is when the entity was last seen. [Extract] leaves it zero;
	// the layer sets it when it records the entity.
	SeenAt time.Time `json:"seenAt"`
	// Deleted reports that the result said the entity was deleted
	// ({"deleted": true}, {"is_deleted": true}). The layer forgets such
	// an entity instead of recording it; it is never stored.
	Deleted bool `json:"-"`

	// seq is the layer's logical clock when the entity was last
	// recorded: higher is more recent (see StateVersion).
	seq uint64
}

// Limits on what is kept of one entity.
const (
	// MaxNameLen caps Name and Slug, in bytes; longer text is cut at a
	// rune boundary and ends in "…".
	MaxNameLen = 120
	// MaxIDLen is the longest ID or Parent kept, in bytes. IDs are never
	// altered: an entity whose ID is longer, or holds a character that
	// cannot be shown as it is (a control, format or line-separator
	// character, white space other than ' ', invalid UTF-8), is skipped,
	// and such a parent is left out.
	MaxIDLen = 256
)

// Defaults of the extraction options.
const (
	// DefaultMaxPerList is how many entities one list in a result yields.
	DefaultMaxPerList = 3
	// DefaultMaxResultBytes is how much of a tool result is read.
	DefaultMaxResultBytes = 256 << 10
)

// DefaultNameFields is the order in which fields are tried for an entity's
// name. The first six are the classic ones; the rest cover issue
// trackers (summary), mail (subject), people (display name, email). Keys
// match without regard to case, '_' or '-' ("display_name" is
// "displayName").
var DefaultNameFields = []string{
	"title", "name", "slug", "filename", "heading", "label",
	"summary", "subject", "displayName", "email",
}

// Rules map tool names to entity types ahead of the built-in guess of
// [TypeFromToolName]. Func is asked first, then Types; when neither
// answers, the built-in guess applies. An answer of "" means "this tool
// yields no entities". A tool a rule types is known: every object with
// an ID in its results is an entity, even one with an ID alone, which an
// unknown tool's results must have more than (see the package doc,
// Unknown tools).
type Rules struct {
	// Types maps exact tool names to types ("cms_put": "page").
	Types map[string]string
	// Func returns the type for a tool name and whether it decided.
	Func func(toolName string) (typ string, ok bool)
}

// Extractor finds entities in tool results without calling a model. It is
// safe for concurrent use. The zero Extractor uses the defaults, like
// NewExtractor(Config{}).
type Extractor struct {
	once       sync.Once
	rules      Rules
	nameFields []string
	maxPerList int
	maxResult  int
	nameRank   map[string]int
	keys       map[string]keyInfo   // roles and name ranks, by folded key
	keyFilter  [keyFilterLen]uint64 // by folded length, a bit per last byte % 64
	mu         sync.RWMutex
	types      map[string]nameInfo // cache: tool name or key → what it says
}

// NewExtractor returns an Extractor configured by the extraction fields
// of cfg (Rules, NameFields, MaxPerList, MaxResultBytes, with their
// defaults when zero); the layer's other fields are ignored. The layer
// built by [New] extracts with NewExtractor(cfg).
func NewExtractor(cfg Config) *Extractor {
	x := &Extractor{rules: cfg.Rules, nameFields: cfg.NameFields, maxPerList: cfg.MaxPerList, maxResult: cfg.MaxResultBytes}
	x.once.Do(x.setup)
	return x
}

// defaultExtractor serves Extract.
var defaultExtractor = NewExtractor(Config{})

// setup fills in defaults and compiles the key tables.
func (x *Extractor) setup() {
	if len(x.nameFields) == 0 {
		x.nameFields = DefaultNameFields
	}
	if x.maxPerList <= 0 {
		x.maxPerList = DefaultMaxPerList
	}
	if x.maxResult <= 0 {
		x.maxResult = DefaultMaxResultBytes
	}
	x.compileKeys()
}

// compileKeys builds the tables of the keys the extractor looks at: the
// name fields' ranks, every key's role and rank, and the quick filter
// of maybeKey.
func (x *Extractor) compileKeys() {
	x.nameRank = make(map[string]int, len(x.nameFields))
	var buf []byte
	for i, f := range x.nameFields {
		k := string(normKey(buf, []byte(f)))
		if _, dup := x.nameRank[k]; !dup {
			x.nameRank[k] = i
		}
	}
	x.keys = make(map[string]keyInfo, len(roles)+len(x.nameRank))
	for k, r := range roles {
		x.keys[k] = keyInfo{role: r, name: -1}
	}
	for k, r := range x.nameRank {
		x.keys[k] = keyInfo{role: roles[k], name: r}
	}
	for k := range x.keys {
		if len(k) < keyFilterLen {
			x.keyFilter[len(k)] |= 1 << (k[len(k)-1] % 64)
		}
	}
}

const keyFilterLen = 32

// maybeKey is a quick test, on a folded key's length and last byte, that
// rules out most keys before the map lookup.
func (x *Extractor) maybeKey(k []byte) bool {
	if len(k) == 0 {
		return false
	}
	if len(k) >= keyFilterLen {
		return true
	}
	return x.keyFilter[len(k)]&(1<<(k[len(k)-1]%64)) != 0
}

// Extract returns the entities in one tool result, as the zero
// [Extractor] would (the default options). toolName names the type; args
// (the call's JSON arguments) may name a parent; result is what the tool
// returned. It never fails: results it cannot read yield nothing.
func Extract(toolName, args, result string) []Entity {
	return defaultExtractor.Extract(toolName, args, result)
}

// Extract returns the entities in one tool result, newest-first order
// being the order of the result's list. Error payloads ({"error": ...},
// {"success": false}, GraphQL {"errors": [...]}, 404 bodies) yield
// nothing. At most the list cap of entities is returned. An object the
// result flags as deleted comes back with Deleted set: it is gone, not
// live.
func (x *Extractor) Extract(toolName, args, result string) []Entity {
	return x.extractInto(nil, toolName, args, result)
}

// extractInto is Extract writing into buf[:0].
func (x *Extractor) extractInto(buf []Entity, toolName, args, result string) []Entity {
	x.once.Do(x.setup)
	tool := x.toolType(toolName)
	if tool.skip() {
		return nil
	}
	e := extraction{x: x, hint: tool.typ, sureHint: tool.sure, anyID: tool.ruled || tool.destructive, out: buf[:0]}
	e.scan(result)
	if e.failed {
		return nil
	}
	e.fromArgs(parseArgs(args, e.abuf[:0]))
	return e.out
}

// scan walks a tool result, read up to the extractor's cap. A result
// that is not JSON is only checked for reading as an error.
func (e *extraction) scan(result string) {
	data := resultBytes(result, e.x.maxResult)
	if len(data) == 0 || data[0] != '{' && data[0] != '[' {
		e.failed = looksLikeErrorText(data)
		return
	}
	// Each object is scanned when the walk reaches it, its nested
	// values left as spans of the bytes (skipped by counting brackets)
	// until visited; strings are copied only when kept.
	v, _ := jsonx.ScanValue(data, 0)
	e.walk(v, "", 0)
}

// resultBytes returns the bytes of a result to scan: at most limit of
// them, trimmed, and the JSON inside when the result is a JSON string
// holding JSON (a result encoded twice). The scanner only reads them and
// every string it keeps is copied out, so the result's bytes are
// borrowed instead of copied.
func resultBytes(result string, limit int) []byte {
	data := unsafe.Slice(unsafe.StringData(result), len(result))
	if len(data) > limit {
		data = data[:limit]
	}
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		if inner := embeddedJSON(jsonx.Value{Raw: data, Kind: jsonx.KindString}); inner != nil {
			return inner
		}
	}
	return data
}

// fromArgs completes the entities found with what the call's arguments
// say: the entity the call acted on, when the result named none, and
// each entity's parent, when the result gave none.
func (e *extraction) fromArgs(a args) {
	if len(e.out) == 0 && e.hint != "" {
		e.actedOn(a)
	}
	for i := range e.out {
		if e.out[i].Parent == "" {
			e.out[i].Parent = exactID(a.parentFor(e.out[i]))
		}
	}
}

// actedOn adds the entity of the tool's type that the arguments give the
// ID of, when they give one.
func (e *extraction) actedOn(a args) {
	id, typed := a.ownID(e.hint)
	name := a.name(e.x)
	// The arguments hold the entity as an object would: "<type>Id" types
	// it, a name names it.
	if id == "" || !e.plain(Entity{Name: name}, typed) {
		return
	}
	if ent := finish(Entity{Type: e.hint, ID: id, Name: name}); ent.ID != "" {
		e.out = append(e.out, ent)
	}
}

// toolKnowledge is what the extractor knows of a tool: the type its
// results hold, whether that type is sure (a rule gave it, or the name
// pairs it with a verb: "create_page"), and whether a rule gave it.
type toolKnowledge struct {
	typ                      string
	sure, ruled, destructive bool
}

// skip reports whether a rule says the tool yields no entities.
func (k toolKnowledge) skip() bool { return k.ruled && k.typ == "" }

// toolType returns what the extractor knows of a tool: what a rule says,
// else what its name says.
func (x *Extractor) toolType(name string) toolKnowledge {
	t, ok := "", false
	if x.rules.Func != nil {
		t, ok = x.rules.Func(name)
	}
	if !ok {
		t, ok = x.rules.Types[name]
	}
	if ok {
		return toolKnowledge{typ: NormalizeType(t), sure: true, ruled: true}
	}
	ni := x.info(unsafe.Slice(unsafe.StringData(name), len(name)))
	return toolKnowledge{typ: ni.typ, sure: ni.verb, destructive: ni.destructive}
}

// nameInfo is what a tool name or key says.
type nameInfo struct {
	typ         string
	verb        bool // the name holds a verb: typ is what the tool acts on
	destructive bool
}

// info returns what a tool name or key says, cached: agents call the same
// few tools, and results use the same few keys.
func (x *Extractor) info(name []byte) nameInfo {
	x.mu.RLock()
	ni, ok := x.types[string(name)]
	x.mu.RUnlock()
	if ok {
		return ni
	}
	key := string(name)
	ni = nameInfo{destructive: destructive(key)}
	ni.typ, ni.verb = typeFromToolName(key)
	x.mu.Lock()
	if x.types == nil {
		x.types = make(map[string]nameInfo)
	}
	if len(x.types) < 4096 {
		x.types[key] = ni
	}
	x.mu.Unlock()
	return ni
}

// Destructive reports whether a tool name says it deletes what it acts on
// ("cms_deletePage", "remove_section", "files.trash"). The layer forgets
// the entities of such tools instead of recording them.
func (x *Extractor) Destructive(toolName string) bool {
	x.once.Do(x.setup)
	return x.info(unsafe.Slice(unsafe.StringData(toolName), len(toolName))).destructive
}

// destructive reports whether a tool name says it deletes what it acts
// on ("cms_deletePage", "remove_section", "files.trash").
func destructive(tool string) bool {
	for _, w := range words(tool) {
		switch w {
		case "delete", "remove", "destroy", "trash", "purge", "erase":
			return true
		}
	}
	return false
}

// looksLikeErrorText reports whether a non-JSON result reads as an error.
func looksLikeErrorText(d []byte) bool {
	if len(d) > 16 {
		d = d[:16]
	}
	l := strings.ToLower(string(d))
	for _, p := range []string{"error", "failed", "failure", "not found", "404", "500", "exception", "denied", "forbidden", "unauthorized"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// extraction is the state of one Extract call.
type extraction struct {
	x    *Extractor
	hint string
	// sureHint: the hint is what the tool acts on, and beats a generic
	// "type" field (see entityType).
	sureHint bool
	// anyID: every object with an ID is an entity, as a rule types the
	// tool, or the tool is destructive (see plain).
	anyID   bool
	out     []Entity
	failed  bool
	visited int
	kbuf    [64]byte
	abuf    [16]jsonx.Field
}

// Ranks in roles of the type fields that normKey cannot tell apart.
const (
	rankUnderscoreType = 2 // "_type"
	rankSysType        = 4 // Contentful sys.type, other than "Entry"
	rankType           = 5 // "type", and sys.type "Entry"
)

// Bounds on the walk through one result.
const (
	maxDepth   = 8
	maxVisited = 48
)

// Key roles. The keys are folded with normKey.
var (
	slugRank  = map[string]int{"slug": 0, "handle": 1, "identifier": 2, "key": 3}
	envelopes = setOf("data", "result", "results", "items", "matches", "nodes", "edges",
		"hits", "value", "values", "response", "payload", "body", "list", "collection",
		"node", "item", "output", "content", "rows", "resource", "resources")
	containers = setOf("attributes", "fields", "properties", "snippet")
	// notEntities are keys whose objects describe the response or a
	// related party, not what the tool worked on.
	notEntities = setOf("meta", "metadata", "links", "pagination", "paging", "extensions",
		"includes", "sys", "parent", "error", "errors", "headers", "request", "query",
		"params", "filters", "facets", "aggregations", "cursor", "pageinfo", "schema",
		"permissions", "owner", "author", "creator", "user", "lastmodifyinguser",
		"createdby", "updatedby", "lasteditedby", "organization", "account", "workspace",
		"team", "project", "repository", "base", "site", "space", "environment",
		"warnings", "warning")
	// genericTypes are type names that say nothing.
	genericTypes = setOf("object", "list", "array", "entity", "item", "resource", "node",
		"error", "result", "response", "record_list", "file_list", "string", "text")
)

// reserved reports whether the folded key k is an envelope's, a
// container's, or one of notEntities: its objects are walked in their own
// way or not at all, and never describe the object that holds them.
func reserved(k []byte) bool {
	return envelopes[string(k)] || containers[string(k)] || notEntities[string(k)]
}

// keyInfo is what a member's key means on an entity: a role, and its
// rank among the name fields (-1: not a name field).
type keyInfo struct {
	role role
	name int
}

// role is what a member's key means on an entity.
type role struct {
	kind roleKind
	rank int
}

type roleKind uint8

const (
	roleID roleKind = iota + 1
	roleType
	roleSlug
	roleSys
	roleParentID
	roleParent
	roleRPC
	roleContainer
	roleDeleted
)

// roles holds every key entity looks at, so that each member costs one
// map lookup. IDs and types are ranked, strongest first. The members that
// name an entity's type are the explicit type fields "object" (Stripe,
// Notion), "__typename" (GraphQL), "_type" (Sanity; rankUnderscoreType,
// told from "type" by its raw key), "kind" (Google, "drive#file";
// Kubernetes) and Contentful's sys.type (rankSysType; "Entry" ranks with
// "type", as an entry's real type is its content type), then the generic
// "type", which often says what kind of thing within its type an entity
// is (a section of type "hero").
var roles = func() map[string]role {
	m := map[string]role{
		"documentid": {roleID, 0}, "id": {roleID, 1}, "uuid": {roleID, 2}, "gid": {roleID, 3}, "guid": {roleID, 4}, "uid": {roleID, 5},
		"object": {roleType, 0}, "typename": {roleType, 1}, "kind": {roleType, 3}, "type": {roleType, rankType},
		"sys": {kind: roleSys}, "parentid": {kind: roleParentID}, "parent": {kind: roleParent}, "jsonrpc": {kind: roleRPC},
		"deleted": {kind: roleDeleted}, "isdeleted": {kind: roleDeleted},
	}
	for k := range containers {
		m[k] = role{kind: roleContainer}
	}
	for k, r := range slugRank {
		m[k] = role{roleSlug, r}
	}
	return m
}()

// norm folds key into the extraction's scratch buffer. The result is
// valid until the next call.
func (e *extraction) norm(key []byte) []byte {
	return normKey(e.kbuf[:0], key)
}

// walk extracts entities from v, found under a key of type keyType ("" at
// the top or under an envelope), and reports whether the extraction is
// over (see done).
func (e *extraction) walk(v jsonx.Value, keyType string, depth int) bool {
	if depth > maxDepth || e.failed || e.visited >= maxVisited {
		return e.done()
	}
	e.visited++
	switch v.Kind {
	case jsonx.KindArray:
		e.list(v, keyType, depth)
	case jsonx.KindObject:
		e.object(v, keyType, depth)
	}
	return e.done()
}

// object extracts from an object: the entity it is, unless it is an
// error payload (checked first at the top), else the entities in its
// members. A resource that is not kept (see plain) is not looked into:
// its members describe it.
func (e *extraction) object(v jsonx.Value, keyType string, depth int) {
	var fb [24]jsonx.Field
	fs := v.Fields(fb[:0])
	ent, f := e.entity(fs, keyType)
	switch {
	case (depth == 0 || f == notResource) && e.isError(fs, depth):
		e.failed = true
	case f == kept:
		e.out = append(e.out, ent)
	case f == notResource:
		e.descend(fs, depth)
	}
}

// finding is what entity makes of an object.
type finding uint8

const (
	// notResource: the object has no ID; its members may hold entities.
	notResource finding = iota
	// kept: the object is an entity.
	kept
	// passed: the object has an ID but does not plainly hold a resource
	// of a tool no rule types (see plain); it yields nothing.
	passed
)

// done reports whether the extraction is over: it found entities, or the
// result is an error payload.
func (e *extraction) done() bool { return len(e.out) > 0 || e.failed }

// nested reports whether v is an object or an array.
func nested(v jsonx.Value) bool { return v.Kind == jsonx.KindObject || v.Kind == jsonx.KindArray }

// scalar reports whether v is a string or a number.
func scalar(v jsonx.Value) bool { return v.Kind == jsonx.KindString || v.Kind == jsonx.KindNumber }

// descend looks into the members of an object that is not itself an
// entity: first the member named after the tool's type ({page: ...},
// {pages: [...]}), then envelopes (data, results, items, ...), then any
// other member holding objects, in document order, and last JSON held in
// a string. The search stops once the walk is over.
func (e *extraction) descend(fs []jsonx.Field, depth int) {
	if e.descendHinted(fs, depth) || e.descendEnvelopes(fs, depth) || e.descendOthers(fs, depth) {
		return
	}
	e.descendText(fs, depth)
}

// descendHinted walks the members named after the tool's type.
func (e *extraction) descendHinted(fs []jsonx.Field, depth int) bool {
	if e.hint == "" {
		return false
	}
	for _, f := range fs {
		if nested(f.Value) && e.x.info(f.Key).typ == e.hint && e.walk(f.Value, e.hint, depth+1) {
			return true
		}
	}
	return false
}

// descendEnvelopes walks the envelope members (data, results, items, ...).
func (e *extraction) descendEnvelopes(fs []jsonx.Field, depth int) bool {
	for _, f := range fs {
		if nested(f.Value) && envelopes[string(e.norm(f.Key))] && e.walk(f.Value, "", depth+1) {
			return true
		}
	}
	return false
}

// descendOthers walks the other members holding objects or arrays,
// skipping those that describe the response or a related party, and
// containers.
func (e *extraction) descendOthers(fs []jsonx.Field, depth int) bool {
	for _, f := range fs {
		if !nested(f.Value) {
			continue
		}
		if reserved(e.norm(f.Key)) {
			continue
		}
		// The member named after the hint was tried first.
		kt := e.x.info(f.Key).typ
		if (kt != e.hint || e.hint == "") && e.walk(f.Value, kt, depth+1) {
			return true
		}
	}
	return false
}

// descendText walks JSON held in a string member: MCP tool results wrap
// the tool's output as {"content": [{"type": "text", "text": "{...}"}]}.
func (e *extraction) descendText(fs []jsonx.Field, depth int) {
	if e.done() || depth >= maxDepth {
		return
	}
	for _, f := range fs {
		if f.Value.Kind != jsonx.KindString || !textKeys[string(e.norm(f.Key))] {
			continue
		}
		if inner := embeddedJSON(f.Value); inner != nil {
			v, _ := jsonx.ScanValue(inner, 0)
			if e.walk(v, "", depth+1) {
				return
			}
		}
	}
}

// textKeys are the string members that may hold JSON.
var textKeys = setOf("text", "json", "body", "data", "result", "content", "payload", "output", "response")

// embeddedJSON returns the decoded text of a string value when it holds a
// JSON object or array, else nil.
func embeddedJSON(v jsonx.Value) []byte {
	raw := v.Raw
	i := skipQuotedBlanks(raw, 1)
	if i >= len(raw) || raw[i] != '{' && raw[i] != '[' {
		return nil
	}
	d := bytes.TrimSpace(jsonx.UnquoteBytes(raw))
	if len(d) == 0 || d[0] != '{' && d[0] != '[' {
		return nil
	}
	return d
}

// skipQuotedBlanks returns the index of the first byte of the quoted
// JSON text raw, from i on, that is not a space or an escaped newline,
// tab or carriage return.
func skipQuotedBlanks(raw []byte, i int) int {
	for i < len(raw) {
		switch {
		case raw[i] == ' ':
			i++
		case raw[i] == '\\' && i+1 < len(raw) && blankEscapes[raw[i+1]]:
			i += 2
		default:
			return i
		}
	}
	return i
}

// blankEscapes are the letters that follow the backslash of the escaped
// white space \n, \t and \r.
var blankEscapes = [256]bool{'n': true, 't': true, 'r': true}

// list takes up to the cap of entities from an array, in order.
func (e *extraction) list(v jsonx.Value, keyType string, depth int) {
	taken := 0
	var fb [24]jsonx.Field
	v.Elems(func(el jsonx.Value) bool {
		if el.Kind != jsonx.KindObject {
			return true
		}
		fs := el.Fields(fb[:0])
		ent, f := e.entity(fs, keyType)
		if f == notResource {
			ent, f = e.wrappedEntity(fs, keyType, fb[:0])
		}
		if f == kept {
			e.out = append(e.out, ent)
			taken++
		}
		return taken < e.x.maxPerList
	})
	if taken == 0 && depth < maxDepth {
		// A list of envelopes ([{data: {...}}]) or of lists.
		v.Elems(func(el jsonx.Value) bool { return !e.walk(el, keyType, depth+1) })
	}
}

// wrappedEntity reads the entity in a one-level wrapper, such as a
// GraphQL edge ({node: {...}}): its first envelope member that holds an
// object. buf may share memory with fs.
func (e *extraction) wrappedEntity(fs []jsonx.Field, keyType string, buf []jsonx.Field) (Entity, finding) {
	for _, f := range fs {
		if f.Value.Kind == jsonx.KindObject && envelopes[string(e.norm(f.Key))] {
			return e.entity(f.Value.Fields(buf), keyType)
		}
	}
	return Entity{}, notResource
}

// isError reports whether an object is an error payload: one of its
// members says so (see errorSigns).
func (e *extraction) isError(fs []jsonx.Field, depth int) bool {
	for _, f := range fs {
		if says, ok := errorSigns[string(e.norm(f.Key))]; ok && says(f.Value) {
			return true
		}
	}
	return false
}

// errorSigns maps the folded keys of the members that may mark an error
// payload to the test of the member's value that says it does.
var errorSigns = map[string]func(v jsonx.Value) bool{
	"error": notEmpty, "errors": notEmpty, "errormessages": notEmpty, "fault": notEmpty,
	"success": isFalse, "ok": isFalse,
	// MCP CallToolResult {"isError": true}.
	"iserror": isTrue, "failed": isTrue,
	"object": namesError, "type": namesError,
	"sys":    sysNamesError,
	"status": errorStatus, "statuscode": errorStatus, "httpstatus": errorStatus, "code": errorStatus,
}

// notEmpty reports whether an error member holds something.
func notEmpty(v jsonx.Value) bool { return !v.Empty() }

// isFalse reports whether a member is the JSON false.
func isFalse(v jsonx.Value) bool {
	return v.Kind == jsonx.KindBool && string(v.Raw) == "false"
}

// isTrue reports whether a member is the JSON true.
func isTrue(v jsonx.Value) bool {
	return v.Kind == jsonx.KindBool && string(v.Raw) == "true"
}

// namesError reports whether a type member is the string "error", in
// any case.
func namesError(v jsonx.Value) bool {
	return v.Kind == jsonx.KindString && strings.EqualFold(v.Scalar(), "error")
}

// sysNamesError reports whether a Contentful sys object has the type
// "error", in any case.
func sysNamesError(v jsonx.Value) bool {
	var fb [8]jsonx.Field
	var kb [64]byte
	for _, g := range v.Fields(fb[:0]) {
		if string(normKey(kb[:0], g.Key)) == "type" && strings.EqualFold(g.Value.Scalar(), "error") {
			return true
		}
	}
	return false
}

// errorStatus reports whether a status member is an HTTP error code,
// 400 to 599.
func errorStatus(v jsonx.Value) bool {
	n, err := strconv.Atoi(v.Scalar())
	return err == nil && n >= 400 && n <= 599
}

// entity builds an entity from an object's members, if it has an ID: it
// reads the members, adds what a Contentful sys object says, settles the
// ID and the type, names the entity, then keeps it if it plainly is a
// resource.
func (e *extraction) entity(fs []jsonx.Field, keyType string) (Entity, finding) {
	// Every rank starts at "nothing found": past the last name field.
	c := candidate{idR: 99, typR: 99, slugR: 99, nameR: len(e.x.nameFields)}
	for _, f := range fs {
		if !e.member(&c, f) {
			return Entity{}, notResource
		}
	}
	if c.sys.Kind == jsonx.KindObject {
		e.sysMembers(&c)
	}
	typed, ok := e.settle(&c, fs, keyType)
	if !ok {
		return Entity{}, notResource
	}
	e.nameEntity(&c, fs)
	if !e.plain(c.ent, typed) {
		return Entity{}, passed
	}
	ent := finish(c.ent)
	if ent.ID == "" {
		return ent, notResource
	}
	return ent, kept
}

// settle settles the ID of an object read into c, falling back on a
// "<type>Id" member, and its type. It reports whether the result types
// the object (a type member, the key it is nested under, or a "<type>Id"
// member giving its ID), and whether the object has an ID.
func (e *extraction) settle(c *candidate, fs []jsonx.Field, keyType string) (typed, ok bool) {
	typed = c.typR < 99 || keyType != "" && !genericTypes[keyType]
	if c.ent.ID == "" && c.keyVal == "" {
		c.ent.ID = e.nounID(fs, c.ent.Type, keyType)
		typed = typed || c.ent.ID != ""
	}
	if !c.settleID() {
		return false, false
	}
	c.ent.Type = e.entityType(c.ent.Type, c.typR, keyType)
	return typed, true
}

// plain reports whether an entity with an ID, read from an object the
// result types or not (typed), is kept. Every entity of a tool a rule
// types is. An unknown tool's entity must plainly be a resource: the
// result types it, or it has a name or slug. An ID alone is not enough,
// as the tool's name is then the only sign of a type ("weather" from
// weather_lookup). An entity to forget (a destructive tool's, or one
// flagged deleted) needs only its ID: forgetting never adds one.
func (e *extraction) plain(ent Entity, typed bool) bool {
	return e.anyID || typed || ent.Name != "" || ent.Slug != "" || ent.Deleted
}

// nameEntity sets the entity's name and slug: from its name fields and
// its containers, else from looser names in the object's members fs.
func (e *extraction) nameEntity(c *candidate, fs []jsonx.Field) {
	conts := c.conts[:c.nconts]
	c.ent.Name = e.name(conts, c.name, c.nameR)
	if c.ent.Slug == "" {
		c.ent.Slug = e.containerSlug(conts)
	}
	if c.ent.Name != "" {
		return
	}
	var slug string
	c.ent.Name, slug = e.looseName(fs)
	if c.ent.Slug == "" {
		c.ent.Slug = slug
	}
}

// nounID returns the ID of an object that has no plain one, under a key
// that names its own type: "<type>Id" or "<type>_id" for the type it
// names itself, the type of the key it is nested under, or the tool's
// type ({"videoId": ...} from get_video, {"schema": {"schema_id": ...}}).
// A "<type>Id" of any other type names a related entity and is left alone.
func (e *extraction) nounID(fs []jsonx.Field, own, keyType string) string {
	for _, f := range fs {
		if !scalar(f.Value) {
			continue
		}
		k := e.norm(f.Key)
		if len(k) < 3 || !bytes.HasSuffix(k, []byte("id")) || !e.ownsIDKey(k, own, keyType) {
			continue
		}
		if s := f.Value.Scalar(); s != "" {
			return s
		}
	}
	return ""
}

// ownsIDKey reports whether the folded key k is "<type>id" for the type
// an object names itself (own), the type of the key it is nested under,
// or the tool's type.
func (e *extraction) ownsIDKey(k []byte, own, keyType string) bool {
	for _, t := range [3]string{own, keyType, e.hint} {
		if t != "" && isOwnIDKey(k, t) {
			return true
		}
	}
	return false
}

// looseName names an entity that has no name under the usual name fields,
// from, in order: a person's first and last name ("given_name",
// "family_name"); the name fields of a member object that has no ID of
// its own and so describes this entity ({"item_data": {"name": ...}},
// {"fieldData": {"name": ..., "slug": ...}}), whose slug it takes too; a
// member whose key ends in "name" or "title" ("originalFileName",
// "full_name"); the same in such a member object ("_default_title_").
func (e *extraction) looseName(fs []jsonx.Field) (name, slug string) {
	if n := e.personName(fs); n != "" {
		return n, ""
	}
	var nb [8]jsonx.Field
	inner := e.describers(fs, nb[:0])
	var gb [32]jsonx.Field
	for _, f := range inner {
		gs := f.Value.Fields(gb[:0])
		if e.hasOwnID(gs) {
			continue
		}
		if name, _ := e.nameIn(gs, len(e.x.nameFields)); name != "" {
			return name, e.slugIn(gs, len(slugRank))
		}
	}
	if n := e.labelLike(fs); n != "" {
		return n, ""
	}
	for _, f := range inner {
		gs := f.Value.Fields(gb[:0])
		if e.hasOwnID(gs) {
			continue
		}
		if n := e.labelLike(gs); n != "" {
			return n, ""
		}
	}
	return "", ""
}

// describers appends to buf, up to its capacity, the members of an
// object that hold objects and may describe it: not envelopes,
// containers, or members that describe the response or a related party.
func (e *extraction) describers(fs, buf []jsonx.Field) []jsonx.Field {
	for _, f := range fs {
		if f.Value.Kind != jsonx.KindObject || len(buf) == cap(buf) {
			continue
		}
		if reserved(e.norm(f.Key)) {
			continue
		}
		buf = append(buf, f)
	}
	return buf
}

// hasOwnID reports whether an object's members include an ID: such an
// object is an entity of its own, not a description of its container.
func (e *extraction) hasOwnID(fs []jsonx.Field) bool {
	for _, f := range fs {
		if ki, ok := e.x.keys[string(e.norm(f.Key))]; ok && (ki.role.kind == roleID || ki.role.kind == roleSys) {
			return true
		}
	}
	return false
}

// labelLike returns the first text member whose key is a name field
// with a qualifier that keeps it the entity's own label
// ("originalFileName", "full_name", "_default_title_"); a name field
// qualified by another noun names something else ("account_name",
// "customer_name").
func (e *extraction) labelLike(fs []jsonx.Field) string {
	for _, f := range fs {
		if f.Value.Kind != jsonx.KindString {
			continue
		}
		if !isLabelKey(e.norm(f.Key)) {
			continue
		}
		if s := f.Value.Scalar(); strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}

// isLabelKey reports whether the folded key k is a label suffix after a
// label qualifier ("fullname", "originalfilename").
func isLabelKey(k []byte) bool {
	for _, suf := range labelSuffixes {
		if len(k) > len(suf) && string(k[len(k)-len(suf):]) == suf && labelQualifiers[string(k[:len(k)-len(suf)])] {
			return true
		}
	}
	return false
}

// labelSuffixes and labelQualifiers make the keys labelLike accepts.
var (
	labelSuffixes   = []string{"filename", "name", "title"}
	labelQualifiers = setOf("original", "display", "full", "default", "friendly", "short",
		"public", "formatted", "pretty", "human", "common", "official", "preferred", "legal", "nick", "file")
)

// personName returns "First Last" from a first or given name and a last,
// family or surname, when the object has both.
func (e *extraction) personName(fs []jsonx.Field) string {
	first, last := "", ""
	for _, f := range fs {
		if f.Value.Kind != jsonx.KindString {
			continue
		}
		switch string(e.norm(f.Key)) {
		case "firstname", "givenname":
			first = strings.TrimSpace(f.Value.Scalar())
		case "lastname", "familyname", "surname":
			last = strings.TrimSpace(f.Value.Scalar())
		}
	}
	if first == "" || last == "" {
		return ""
	}
	return first + " " + last
}

// candidate is an entity being read from an object's members: the best
// value found so far for each field, with the rank it was found at
// (lower wins).
type candidate struct {
	ent              Entity
	idR, typR, slugR int
	keyVal           string      // the "key" member, when it gave the slug
	sys              jsonx.Value // Contentful's sys object
	name             string
	nameR            int
	conts            [4]jsonx.Field // container members (attributes, fields)
	nconts           int
}

// member records what one member says about the entity. It reports false
// when the object cannot be an entity (a JSON-RPC envelope, whose "id" is
// the request's).
func (e *extraction) member(c *candidate, f jsonx.Field) bool {
	k := e.norm(f.Key)
	if !e.x.maybeKey(k) {
		return true
	}
	ki, ok := e.x.keys[string(k)]
	if !ok {
		return true
	}
	if ki.name >= 0 && ki.name < c.nameR {
		if s := textOf(f.Value, 3); strings.TrimSpace(s) != "" {
			c.name, c.nameR = s, ki.name
		}
	}
	return c.take(f, ki.role)
}

// take records what member f says about the entity in its role ro. It
// reports false when the object cannot be an entity.
func (c *candidate) take(f jsonx.Field, ro role) bool {
	switch ro.kind {
	case roleID:
		c.offerID(f.Value, ro.rank)
	case roleType:
		c.typeMember(f, ro.rank)
	case roleSlug:
		if ro.rank < c.slugR {
			c.offerSlug(textOf(f.Value, 2), ro.rank)
		}
	case roleSys:
		c.sys = f.Value
	case roleParentID:
		c.ent.Parent = f.Value.Scalar()
	case roleParent:
		if c.ent.Parent == "" {
			c.ent.Parent = parentRef(f.Value)
		}
	case roleRPC:
		return false
	case roleContainer:
		c.addContainer(f)
	case roleDeleted:
		c.ent.Deleted = f.Value.Kind == jsonx.KindBool && string(f.Value.Raw) == "true"
	}
	return true
}

// offerID takes v as the entity's ID when rank outranks the ID found so
// far and v is not empty. The value is decoded only then.
func (c *candidate) offerID(v jsonx.Value, rank int) {
	if rank >= c.idR {
		return
	}
	if id := v.Scalar(); id != "" {
		c.ent.ID, c.idR = id, rank
	}
}

// typeMember offers the text of a type member of rank rank; "_type"
// (Sanity) ranks before the plain "type" it folds to.
func (c *candidate) typeMember(f jsonx.Field, rank int) {
	if rank == rankType && len(f.Key) > 0 && f.Key[0] == '_' {
		rank = rankUnderscoreType
	}
	if f.Value.Kind == jsonx.KindString {
		c.offerType(NormalizeType(f.Value.Scalar()), rank)
	}
}

// addContainer keeps a container member (attributes, fields) that holds
// an object, while there is room.
func (c *candidate) addContainer(f jsonx.Field) {
	if f.Value.Kind == jsonx.KindObject && c.nconts < len(c.conts) {
		c.conts[c.nconts] = f
		c.nconts++
	}
}

// offerSlug takes s as the entity's slug; the caller has checked that
// rank outranks the slug found so far. A "key" member is remembered too:
// it becomes the ID when nothing else gives one (see settleID).
func (c *candidate) offerSlug(s string, rank int) {
	if s == "" {
		return
	}
	if rank == slugRank["key"] {
		c.keyVal = s
	}
	c.ent.Slug, c.slugR = s, rank
}

// offerType takes t as the entity's own type when it outranks the type
// found so far and is not a generic one ("object", "entity").
func (c *candidate) offerType(t string, rank int) {
	if rank < c.typR && t != "" && !genericTypes[t] {
		c.ent.Type, c.typR = t, rank
	}
}

// sysMembers reads Contentful's {sys: {id, type: "Entry"}, fields: {...}}:
// sys.id when the object had no ID, sys.type as a low-ranked type ("Entry"
// ranks as a plain "type").
func (e *extraction) sysMembers(c *candidate) {
	var fb [16]jsonx.Field
	for _, g := range c.sys.Fields(fb[:0]) {
		switch string(e.norm(g.Key)) {
		case "id":
			if c.ent.ID == "" {
				c.ent.ID = g.Value.Scalar()
			}
		case "type":
			t, r := NormalizeType(g.Value.Scalar()), rankSysType
			if t == "entry" {
				r = rankType
			}
			c.offerType(t, r)
		}
	}
}

// settleID falls back on the "key" member for keyed resources (S3
// objects, config entries: the key is the ID, not a slug), drops a
// parent of "0" (no parent), and reports whether there is an ID.
func (c *candidate) settleID() bool {
	if c.ent.ID == "" && c.keyVal != "" {
		c.ent.ID, c.ent.Slug = c.keyVal, ""
	}
	if c.ent.ID == "" {
		return false
	}
	if c.ent.Parent == "0" {
		c.ent.Parent = ""
	}
	return true
}

// entityType picks the type, by precedence: the key the result nests the
// entity under ({section: {...}}, {sections: [...]}: a section, whatever
// its "type" says, e.g. "hero"); own, the type the entity names itself
// (explicit type fields before the generic "type", see roles), of rank
// ownRank; the tool's type; a key that names only a generic type
// ({entity: {...}}); "item".
//
// A generic "type" field often names a sub-kind ("simple" product,
// "singleInstance" event, DNS record "A", ticket "Question"), so it gives
// way to the tool's type when the tool says what it acts on (a rule, or a
// verb and a noun: "create_product"), unless that type is a family whose
// members' "type" says what they are (media, asset, file: a media item of
// type "image" is an image).
func (e *extraction) entityType(own string, ownRank int, keyType string) string {
	switch {
	case keyType != "" && !genericTypes[keyType]:
		return keyType
	case own != "" && e.ownTypeWins(ownRank):
		return own
	case e.hint != "":
		return e.hint
	case keyType != "":
		return keyType
	default:
		return "item"
	}
}

// ownTypeWins reports whether a type the entity names itself, of rank
// ownRank, beats the tool's type: it is an explicit type field, or the
// tool does not say for sure what it acts on, or the tool's type is a
// family or a generic type (see entityType).
func (e *extraction) ownTypeWins(ownRank int) bool {
	return ownRank < rankType || !e.sureHint || e.hint == "" || familyTypes[e.hint] || genericTypes[e.hint]
}

// familyTypes name families of resources whose own generic "type" names
// what each one is.
var familyTypes = setOf("media", "asset", "file", "attachment", "content", "entry",
	"document", "upload", "block", "element", "component", "object", "item", "resource", "node")

// containerSlug finds a slug, handle or identifier (not a "key") inside
// an object's containers (Strapi v4 attributes, Contentful fields).
func (e *extraction) containerSlug(conts []jsonx.Field) string {
	for _, f := range conts {
		var fb [32]jsonx.Field
		if s := e.slugIn(f.Value.Fields(fb[:0]), slugRank["key"]); s != "" {
			return s
		}
	}
	return ""
}

// slugIn returns the best slug among an object's members (see slugRank)
// that ranks before limit, or "".
func (e *extraction) slugIn(fs []jsonx.Field, limit int) string {
	best := ""
	for _, f := range fs {
		if r, ok := slugRank[string(e.norm(f.Key))]; ok && r < limit {
			if s := textOf(f.Value, 2); s != "" {
				best, limit = s, r
			}
		}
	}
	return best
}

// nameIn returns the best name among an object's members (see
// Config.NameFields) that ranks before limit, and its rank; "" and limit
// when there is none.
func (e *extraction) nameIn(fs []jsonx.Field, limit int) (string, int) {
	best := ""
	for _, f := range fs {
		if r, ok := e.x.nameRank[string(e.norm(f.Key))]; ok && r < limit {
			if s := textOf(f.Value, 3); strings.TrimSpace(s) != "" {
				best, limit = s, r
			}
		}
	}
	return best, limit
}

// parentRef reads a parent member: a scalar, or an object naming the
// parent's ID ({type: "page_id", page_id: "..."} in Notion, {id: ...}).
func parentRef(v jsonx.Value) string {
	switch v.Kind {
	case jsonx.KindString, jsonx.KindNumber:
		return v.Scalar()
	case jsonx.KindObject:
		var fb [8]jsonx.Field
		return parentRefIn(v.Fields(fb[:0]))
	}
	return ""
}

// parentRefIn reads a parent object's members: the member its "type"
// names ({type: "page_id", page_id: "..."}), or its "id".
func parentRefIn(fs []jsonx.Field) string {
	var kb [32]byte
	want := ""
	for _, f := range fs {
		if string(normKey(kb[:0], f.Key)) == "type" {
			want = f.Value.Scalar()
		}
	}
	for _, f := range fs {
		k := string(normKey(kb[:0], f.Key))
		if want != "" && string(f.Key) == want || k == "id" {
			if s := f.Value.Scalar(); s != "" {
				return s
			}
		}
	}
	return ""
}

// name returns the best name: best (of rank bestRank, found among the
// object's own members) or a better one in its containers (attributes,
// fields, properties, snippet).
func (e *extraction) name(conts []jsonx.Field, best string, bestRank int) string {
	var props jsonx.Value
	for _, f := range conts {
		if string(e.norm(f.Key)) == "properties" {
			props = f.Value
		}
		if bestRank > 0 {
			var fb [32]jsonx.Field
			if s, r := e.nameIn(f.Value.Fields(fb[:0]), bestRank); s != "" {
				best, bestRank = s, r
			}
		}
	}
	if best == "" && props.Kind == jsonx.KindObject {
		return e.titleProperty(props)
	}
	return best
}

// titleProperty returns the text of a Notion page's title property,
// which may have any name: its type says "title".
func (e *extraction) titleProperty(props jsonx.Value) string {
	var fb [32]jsonx.Field
	for _, f := range props.Fields(fb[:0]) {
		if f.Value.Kind != jsonx.KindObject {
			continue
		}
		var gb [8]jsonx.Field
		for _, g := range f.Value.Fields(gb[:0]) {
			if string(e.norm(g.Key)) == "type" && g.Value.Scalar() == "title" {
				if s := textOf(f.Value, 3); s != "" {
					return s
				}
			}
		}
	}
	return ""
}

// textPrefs are the members tried, in order, when a name is an object:
// WordPress {rendered}, Notion rich text {plain_text}, {text}, {content},
// {value}, a Sanity slug {current}, a Notion title property {title: [...]}, localised {en-US}.
var textPrefs = []string{"rendered", "plaintext", "text", "content", "value", "current", "title", "name", "enus", "en"}

// textOf returns the text of a name value: a string, a number, the joined
// texts of an array (rich text runs), or the preferred member of an object.
func textOf(v jsonx.Value, depth int) string {
	switch {
	case scalar(v):
		return v.Scalar()
	case depth <= 0:
		return ""
	case v.Kind == jsonx.KindArray:
		return textOfRuns(v, depth)
	case v.Kind == jsonx.KindObject:
		return textOfObject(v, depth)
	}
	return ""
}

// textOfRuns joins the texts of up to eight elements of an array.
func textOfRuns(v jsonx.Value, depth int) string {
	var b strings.Builder
	n := 0
	v.Elems(func(el jsonx.Value) bool {
		b.WriteString(textOf(el, depth-1))
		n++
		return n < 8 && b.Len() < jsonx.MaxScalar
	})
	return b.String()
}

// textOfObject returns the text of an object's first preferred member
// (see textPrefs) that has one, else of its only member when that is a
// string.
func textOfObject(v jsonx.Value, depth int) string {
	var fb [16]jsonx.Field
	fs := v.Fields(fb[:0])
	var kb [32]byte
	for _, want := range textPrefs {
		for _, f := range fs {
			if string(normKey(kb[:0], f.Key)) == want {
				if s := textOf(f.Value, depth-1); s != "" {
					return s
				}
			}
		}
	}
	if len(fs) == 1 && fs[0].Value.Kind == jsonx.KindString {
		return fs[0].Value.Scalar()
	}
	return ""
}

// finish cleans an entity's text fields: one line, no control characters,
// capped lengths, the ID as name when there is none. An ID or parent that
// cannot be kept exactly (see [MaxIDLen]) becomes "", which drops the
// entity or its parent.
func finish(ent Entity) Entity {
	ent.ID = exactID(ent.ID)
	ent.Parent = exactID(ent.Parent)
	name := ent.Name
	if strings.IndexByte(name, '&') >= 0 && strings.IndexByte(name, ';') >= 0 {
		name = html.UnescapeString(name)
	}
	ent.Name = clip(name, MaxNameLen)
	ent.Slug = clip(ent.Slug, MaxNameLen)
	if ent.Slug == ent.Name || ent.Slug == ent.ID {
		ent.Slug = ""
	}
	if ent.Name == "" {
		ent.Name = clip(ent.ID, MaxNameLen)
	}
	return ent
}

// exactID returns id when it can be kept and shown exactly as it is: at
// most MaxIDLen bytes of valid UTF-8 without control, format or
// line-separator characters or white space other than ' ', and not only
// spaces. Otherwise it returns "": an ID is never altered.
func exactID(id string) string {
	if len(id) > MaxIDLen || strings.TrimLeft(id, " ") == "" {
		return ""
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x20 || c == 0x7f {
			return ""
		} else if c >= 0x80 {
			return exactIDText(id)
		}
	}
	return id
}

// exactIDText is exactID's test of an ID that is not all ASCII.
func exactIDText(id string) string {
	for _, r := range id {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.IsSpace(r) && r != ' ' {
			return ""
		}
	}
	return id
}

// clip makes s a single line: runs of white space, control and invisible
// format characters become one space, invalid UTF-8 becomes U+FFFD, the
// ends are trimmed, and text longer than max bytes is cut at a rune
// boundary and ends in "…".
func clip(s string, max int) string {
	if len(s) <= max && isOneLine(s) {
		return s
	}
	out := collapseSpace(s, max+8)
	if len(out) <= max {
		return out
	}
	cut := max - len("…")
	for cut > 0 && !utf8.RuneStart(out[cut]) {
		cut--
	}
	return strings.TrimRight(out[:cut], " ") + "…"
}

// isOneLine reports whether s is printable ASCII that clip leaves as it
// is: no leading, trailing or double space.
func isOneLine(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c >= 0x80 {
			return false
		}
	}
	return len(s) == 0 || s[0] != ' ' && s[len(s)-1] != ' ' && !strings.Contains(s, "  ")
}

// collapseSpace returns s with each run of white space, control and
// format characters made one space and the ends trimmed, stopping once
// limit bytes are written.
func collapseSpace(s string, limit int) string {
	var b strings.Builder
	b.Grow(min(len(s), limit-4))
	space := false
	for _, r := range s {
		if b.Len() >= limit {
			break
		}
		if isBlankRune(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// isBlankRune reports whether clip turns r into a space: white space, a
// control or format character, or a line or paragraph separator.
func isBlankRune(r rune) bool {
	return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

// args are the members of a tool call's arguments, which may say what
// entity the call acts on and its parent.
type args []jsonx.Field

func parseArgs(s string, buf []jsonx.Field) args {
	d := bytes.TrimSpace(unsafe.Slice(unsafe.StringData(s), len(s)))
	if len(d) == 0 || d[0] != '{' {
		return nil
	}
	v, _ := jsonx.ScanValue(d, 0)
	return v.Fields(buf)
}

// ownID returns the ID the arguments give for an entity of type typ:
// "<typ>Id" ("sectionId", "section_id"), with typed true, or "id".
func (a args) ownID(typ string) (id string, typed bool) {
	var kb [64]byte
	for _, f := range a {
		switch k := normKey(kb[:0], f.Key); {
		case isOwnIDKey(k, typ):
			if s := f.Value.Scalar(); s != "" {
				return s, true
			}
		case string(k) == "id" && id == "":
			id = f.Value.Scalar()
		}
	}
	return id, false
}

// name returns a name given in the arguments.
func (a args) name(x *Extractor) string {
	best, rank := "", len(x.nameFields)
	var kb [64]byte
	for _, f := range a {
		if r, ok := x.nameRank[string(normKey(kb[:0], f.Key))]; ok && r < rank {
			if s := f.Value.Scalar(); s != "" {
				best, rank = s, r
			}
		}
	}
	return best
}

// parentFor returns the ID the arguments give for ent's parent: a
// "parentId"/"parent" argument, else the first "<type>Id" argument whose
// type is not ent's own and whose value is not ent's ID. Only the values
// of keys that qualify are decoded.
func (a args) parentFor(ent Entity) string {
	var kb [64]byte
	cand := ""
	for _, f := range a {
		if !scalar(f.Value) {
			continue
		}
		k := normKey(kb[:0], f.Key)
		parent := parentKeys[string(k)]
		if !parent && (cand != "" || !relatedIDKey(k, ent.Type)) {
			continue
		}
		s := f.Value.Scalar()
		if s == "" || s == ent.ID || s == "0" {
			continue
		}
		if parent {
			return s
		}
		cand = s
	}
	return cand
}

// parentKeys are the folded argument keys that name a parent outright.
var parentKeys = setOf("parentid", "parent")

// relatedIDKey reports whether the folded key k is "<type>id" for a type
// other than typ, which may name a parent. The IDs of requests and users,
// and UUIDs, name none.
func relatedIDKey(k []byte, typ string) bool {
	if len(k) <= 2 || !bytes.HasSuffix(k, []byte("id")) || isOwnIDKey(k, typ) {
		return false
	}
	for _, suf := range unrelatedIDSuffixes {
		if bytes.HasSuffix(k, suf) {
			return false
		}
	}
	return true
}

// unrelatedIDSuffixes end the folded keys of IDs that name no parent.
var unrelatedIDSuffixes = [][]byte{[]byte("uuid"), []byte("requestid"), []byte("userid")}

// isOwnIDKey reports whether the folded key k is "<typ>id", typ without
// its '_' ("blog_post" → "blogpostid").
func isOwnIDKey(k []byte, typ string) bool {
	j := 0
	for i := 0; i < len(typ); i++ {
		if typ[i] == '_' {
			continue
		}
		if j >= len(k) || k[j] != typ[i] {
			return false
		}
		j++
	}
	return string(k[j:]) == "id"
}
