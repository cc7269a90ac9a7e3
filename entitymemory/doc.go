// Package entitymemory is the entity memory layer (ID "entity_memory",
// its data stored under "entities", [DefaultStorageID]): it extracts the
// entities an agent works on (pages, sections, issues, files, customers)
// from its tool results, without calling a model, keeps the most recent
// ones, and puts them into the prompt so that "now add a hero section to
// it" resolves to page-123 — after many tool calls, after a finished task,
// and after a process restart.
//
//	<entity_memory>
//	[RECENT ENTITIES]
//	pages:
//	  - "About Us" (page-123)
//	sections:
//	  - "Hero" (sec-456, parent: page-123)
//
//	To resolve references such as "it", ... If none matches, look it up
//	with a tool (a list or search call) or ask the user; never make up an ID.
//	</entities>
//
// # Extraction
//
// [Extract] (and [Extractor]) read one tool result. The type comes from,
// in order of precedence:
//
//  1. the key the result nests the entity under: {section: {...}},
//     {sections: [...]}, {issueCreate: {issue: ...}} (envelopes such as
//     data, results and items name no type, nor do generic words such
//     as "entity");
//  2. a type field the entity carries that names its kind of resource:
//     "object" as in Stripe and Notion, "__typename" in GraphQL, "_type"
//     in Sanity, "kind" as in Google's "drive#file", Contentful's sys.type
//     (except "Entry", which says less than the entry's content type);
//  3. a generic "type" field (and sys.type "Entry"), unless the tool
//     says what it acts on (see below);
//  4. the tool name, through [Rules] and then the built-in guess
//     [TypeFromToolName]; a key that names only a generic type; else
//     "item".
//
// A generic "type" often says which kind of thing within its type an
// entity is rather than what it is: the section that tool addSection
// returns as {"section": {"id": "sec_1", "type": "hero"}} is recorded
// as a section, not a "hero"; the product that create_product returns
// as {"id": 794, "type": "simple"} is a product, the event of
// create_event of type "singleInstance" an event, the DNS record of type
// "A" from create_dns_record a dns_record. The tool's type wins when a
// rule gives it or the tool name pairs a verb with it; a name without a
// verb ("crm_request") may name the tool rather than a resource, and
// then the entity's "type" wins. So does the "type" of a member of a
// family of resources (media, asset, file, ...): {"type": "image", "id":
// ...} from cms_getMedia is an image. A word that only says what sort of
// thing something is (object, item, record, entity, resource, node) keeps
// the noun before it: list_dns_records gives dns_record,
// upsert_catalog_object catalog_object.
//
// An object is an entity when it has an ID (and, for a tool no rule
// types, plainly is a resource: see Unknown tools): documentId (Strapi v5), id,
// _id (Sanity), uuid, gid, guid, uid, sys.id (Contentful), key when
// nothing else (keyed resources), or, when it has no plain ID, "<type>Id"
// or "<type>_id" for its own type, the type of the key it is nested under
// or the tool's type ({"videoId": ...} from get_video; a "<type>Id" of
// another type names a related entity). Numbers become decimal text. Keys match
// without regard to case, '_' or '-'. The walk looks, in order, at the
// top-level value, the member named after the tool's type, envelopes
// (data, result, results, items, matches, nodes, edges, hits, value, ...),
// then any other member holding objects, skipping members that describe
// the response or a related party (meta, links, owner, author, user, ...).
// A list yields at most MaxPerList entities, in its order. The name comes
// from the first of the name fields ([DefaultNameFields]) found on the
// object or its containers (attributes, fields, properties, snippet);
// rich values are read too (WordPress {rendered}, Notion rich text, a
// Notion title property of any name, Contentful locales), HTML entities
// are decoded. An object without any of these is named, in order, by a
// person's first and last name (given_name, family_name), by the name
// fields of a member object that has no ID of its own and so describes
// it ({"id": ..., "fieldData": {"name": ..., "slug": ...}}, whose slug it
// takes too), by a qualified name field ("originalFileName", "full_name",
// "display_title"; not another noun's, as "account_name"), or by one in
// such a member object; else the ID stands in. Parents come
// from the arguments (parentId, or pageId on a section call) or from the
// result's parentId/parent.
//
// JSON held in a string is read too: a result encoded twice, and MCP tool
// results ({"content": [{"type": "text", "text": "{...}"}]}).
//
// Error payloads — {"error": ...}, {"errors": [...]} (GraphQL),
// {"errorMessages": [...]} (Jira), {"success": false}, {"ok": false},
// {"isError": true} (MCP), {"object": "error"} (Notion), sys.type "Error"
// (Contentful), a status or code from 400 to 599, text starting with
// "Error", "404", "not found" — and failed tool calls yield nothing. When a
// successful result names no entity (plain text, {"content": ...}) but
// the arguments carry the ID ("get-section-content" with sectionId), that
// ID is recorded. A list of warnings beside the resource ({"success":
// true, "warnings": [...]}) is not an error and is not read for entities.
// The entities of a delete-like tool ("cms_deletePage",
// "remove_section"), and objects the result flags as deleted
// ({"id": "cus_1", "deleted": true}, "is_deleted": true; see
// [Entity.Deleted]), are forgotten by the layer rather than recorded.
//
// The extractor never decodes the whole result.
// It reads at most MaxResultBytes, visits a bounded number
// of objects and depth, never recurses while skipping, and treats
// truncated input as its end. When an object holds a key twice, the last
// member wins, as in encoding/json. Names and slugs are made single-line (runs of white
// space, control and invisible format characters become one space) and
// cut to [MaxNameLen] bytes. IDs are never altered: an entity whose ID is
// longer than [MaxIDLen] bytes or holds a character that cannot be shown
// as it is (control, format, line separators, white space other than a
// space) is skipped, and such a parent left out, so two IDs never become
// one and the model is never shown an ID that does not exist.
//
// # Unknown tools
//
// A tool no rule types is unknown: its name is only a guess of what it
// returns (weather_lookup gives "weather", which is no resource). Its
// result yields an object only when the object plainly is a resource:
//
//   - the result types it: it sits under a key that names a type
//     ({"forecast": {"id": ...}}, {"readings": [...]}), it has a type
//     member (object, __typename, _type, kind, type, sys.type), or its ID
//     comes from a "<type>Id" member; or
//   - it has a name or a slug besides its ID (the name fields, a slug,
//     handle or identifier, or a looser name, as above).
//
// An object with an ID alone ({"id": "w1", "temperature": 21}) is passed
// over, and so is everything inside it. Results without an object with
// an ID (numbers, text, {"temperature": 21, "city": "Paris"}) yield
// nothing, as do errors. The arguments give the entity the call acted on
// when they name its type ("sectionId") or give an "id" with a name. A
// destructive tool's entities, and objects flagged deleted, need only an
// ID: the layer forgets them, which never adds one. A tool a rule types
// is known, and its results are read without this test, so a rule
// restores the ID-only entities of a tool ([Rules]).
//
// # Configuring extraction
//
// The extraction fields of [Config] are Rules (tool name to type, ahead
// of the built-in guess), NameFields (the order of name fields, default
// [DefaultNameFields]), MaxPerList (entities taken from one list, default
// [DefaultMaxPerList]) and MaxResultBytes (how much of a result is read,
// default [DefaultMaxResultBytes]). [NewExtractor] builds an [Extractor]
// from them alone, for use outside the layer; [Extract] uses the
// defaults.
//
// # The list
//
// The layer keeps the Capacity (10) most recently seen entities,
// identified by type and ID together (WordPress post 5 and page 5 are two
// entities). The entities of one result go to the front in the
// result's order; a re-seen entity moves to the front and takes the
// new name (unless the new name is only its ID). With a TTL, entities not
// seen for that long drop out.
//
// The order is logical, not by wall clock: the state carries a Lamport
// clock and every recording takes the next value (see [StateVersion]),
// so processes whose clocks disagree still agree on what is newest.
// Config.Now (which tests may replace, and which is clamped to years
// 0-9999) only stamps SeenAt for the TTL and the "entities" data; a
// SeenAt in the future, written while a clock was ahead, counts as no
// later than now, nor than the SeenAt of entities recorded after it,
// from the first time the layer reads it (and is saved so), so such an
// entity ages out a TTL after the clock reads right. The TTL is the one thing wall clocks decide:
// a process whose clock is ahead by more than the TTL ages the others'
// entities out early, so keep the TTL well above the clock skew of the
// processes sharing a scope.
//
// # The archive
//
// Entities are never forgotten, only ranked. Beside the recent list,
// the layer keeps every entity its scope (the thread, or the resource
// when so scoped) has seen: type, ID, name, slug, parent and when it was
// last seen. Each entity is one small record of its own, under
// storage.LayerKey(id, scope key, "archive/<type>/<id>"), written only
// when the entity is new to the run, changed, or last written a day ago
// or more; a head record ("archive-head") counts them. So the bytes a
// step writes follow what the step saw, never what the archive holds,
// and Init reads nothing of the archive.
//
// The records are the source of truth. Each is mirrored as a document
// in a search collection, storage.IndexName(id, scope key, "archive"),
// indexed after its record is written. On a store that is a
// storage.Searcher (see layer.IndexOf) the collection lives in the
// store; on any other store the layer keeps an in-process
// storage.MemoryIndex of the entities the run has seen, and a later run
// recalls only what it sees itself. State stored before the archive
// existed joins it on first use: the first step of a run in a scope that
// has no archive yet (no head record) archives the recent list.
//
// A document's text is the entity's name, its slug and its ID with
// everything but letters and digits left out ("page123"): kept as one
// token, an ID does not make every entity of its kind match a query
// that names the kind ("the page"). Recall queries with the text and the
// same form of each of its compounds.
//
// Recall shows the recent list exactly as before, then, when the input
// or the earlier user messages of the run name archived entities that
// are not in it, up to MaxRecalled (5) of them under [RecalledHeader]
// ("Named in the conversation (seen earlier):"), grouped by type the
// same way, before the same instructions. With no such entity the block
// is byte for byte the one without an archive. The index is queried
// with the text, and a hit counts only when the text names it: every
// content word of its name (any case, punctuation or order; stop words
// aside, words stemmed), or its slug, or an ID of 4 bytes or more.
// Reference resolution thus needs no other layer. When the block is over
// budget, the oldest recent entities go first, then the block.
//
// Retention: ArchiveCapacity (DefaultArchiveCapacity, 10,000 entities
// per scope: far more than one conversation names, small enough that
// an eviction pass stays short) and ArchiveTTL (DefaultArchiveTTL, 365
// days: "the page from last spring" still resolves, and a scope left
// alone for a year keeps nothing). Past the capacity, the entities
// indexed longest ago are deleted; an entity older than the TTL is
// deleted when a recall comes across it, and each step that indexes
// something checks the 8 entities indexed longest ago. A delete-like
// tool removes the entity from the archive too. ArchiveCapacity below
// zero turns the archive off.
//
// A child agent ([Layer.OnSpawn]) recalls from its parent's archive
// read-only: it adds, forgets and expires nothing there. Snapshot and
// Restore carry the recent list only; the archive stays in the store,
// where export and erase see it (its records under the scope's
// LayerPrefix, its collection dropped with storage.DropIndexes on that
// prefix). [Layer.Clear] deletes the scope's archive, records and
// collection.
//
// # Rendering
//
// Recall renders the header — [Header], "[RECENT ENTITIES]", so that the
// block is not mistaken for the scratchpad's <working_memory>; Config.Header
// replaces it, and [LegacyHeader] keeps the original "[WORKING MEMORY]"
// format — then one group per type — in order of each
// type's most recent entity, newest first within the type — then the
// instructions, all fenced with fence.Wrap in a block named after the
// layer ID ([Layer.Tag]: <entity_memory>), like every layer's block, so the
// prompt compiler can defang a fake entity block that another layer's
// text prints. Names are quoted; '"' and '\' are escaped and '<' becomes
// "&lt;", so a name holding "\n[RECENT ENTITIES]\n" or "</entities>" stays
// inert on its line. A Config.Header that holds a line break or '<' is
// refused by New. The block is cached and rendered again only after a
// change. Nothing is rendered when the list is empty, unless RenderEmpty.
//
// # Persistence, spawn and snapshots
//
// Init loads the list stored under storage.LayerKey(id, scope key,
// "state"); Store saves it with compare-and-swap. When another process
// wrote first, the layer reads the stored list and applies its own
// changes since its last save to it again — the entities it recorded,
// after everything stored, and the ones a delete-like tool forgot — then
// writes, up to Config.MaxRetries times (16 by default). After a lost
// race it first waits (storage.WaitRetryAfter: jittered, growing, scaled
// to the time an attempt takes) and then reads, so that the list it
// writes next is as fresh as it can be; 8 writers saving at once all get
// through (TestTrust320_SavesUnderContention). So no update is lost, a deleted entity never comes back
// from another process's older copy, and the entity just recorded is
// kept. (The alternative, tombstones kept in the stored state for a
// while, was not needed: re-applying adds nothing to the stored state
// and no time or count after which a deletion could be undone.) The
// execution scope never persists. Stored state that cannot be read is
// moved to a quarantine key, reported, and the run starts empty; state
// from a newer version fails Init and is left alone. A child agent starts
// with a copy of the parent's list and keeps its changes to itself.
// Snapshot and Restore use the versioned format of [StateVersion]; older
// versions migrate, newer ones are refused.
//
// # Switching it off
//
// Config.Disabled makes the layer a no-op that still satisfies every
// interface. The examples read MEMLAYER_ENTITY_MEMORY=off and set it; the
// library reads no environment variables.
//
// # Concurrency
//
// A Layer is safe for concurrent use; its state is guarded by a mutex,
// which a save holds while it talks to the store. An [Extractor] is safe
// for concurrent use.
package entitymemory
