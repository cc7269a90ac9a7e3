package semanticmemory_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/schema"
	"github.com/tmc/langchaingo/vectorstores"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
)

// TestMemory08_HybridRetrieval: with an embedder, a query that shares no
// token with its fact still finds it (dense), each fact version is
// embedded once, and a fact found by both rankers outranks one found by
// one.
func TestMemory08_HybridRetrieval(t *testing.T) {
	emb := &ngramEmbedder{}
	l := bind(t, semanticmemory.Config{Embedder: emb}, storage.NewMemoryStore(), "t1")
	ctx := context.Background()
	remember(t, l, "fact", "The user is vegetarian.")
	remember(t, l, "fact", "The user plays the violin.")
	remember(t, l, "fact", "Deploys happen on Tuesdays.")
	if emb.calls != 3 {
		t.Errorf("embedder called for %d texts, want 3 (once per version)", emb.calls)
	}
	hits, err := l.Search(ctx, "vegetables", 1)
	if err != nil || len(hits) != 1 || !strings.Contains(hits[0].Text, "vegetarian") {
		t.Fatalf("dense search for a paraphrase = %+v, %v", hits, err)
	}
	sparse := bind(t, semanticmemory.Config{}, storeOf(t, l), "t2")
	if hits, _ := sparse.Search(ctx, "vegetables", 1); len(hits) != 0 {
		t.Errorf("sparse alone found %+v for a query sharing no token", hits)
	}
	// Found by both rankers: top, with similarity 1.
	hits, _ = l.Search(ctx, "violin", 0)
	if len(hits) == 0 || !strings.Contains(hits[0].Text, "violin") || hits[0].Score != 1 {
		t.Fatalf("hybrid search = %+v", hits)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Score > hits[i-1].Score || hits[i].Score <= 0 || hits[i].Score > 1 {
			t.Errorf("scores not in (0,1] descending: %+v", hits)
		}
	}
	// Restored facts keep their embeddings: nothing is embedded again.
	before := emb.calls
	bind(t, semanticmemory.Config{Embedder: emb}, storeOf(t, l), "t3")
	if emb.calls != before {
		t.Errorf("loading facts embedded %d texts again", emb.calls-before)
	}
}

// TestMemory09_Candidates: Candidates score facts for prompt.Assemble:
// key = ID, similarity in [0,1] best first, time = Updated, importance
// and source carried.
func TestMemory09_Candidates(t *testing.T) {
	l := bind(t, semanticmemory.Config{}, storage.NewMemoryStore(), "t1")
	ctx := context.Background()
	f, err := l.Remember(ctx, semanticmemory.Memo{Text: "The user's dog is called Rex.", Kind: "profile", Importance: 0.9, Source: semanticmemory.Source{By: "user"}})
	if err != nil {
		t.Fatal(err)
	}
	remember(t, l, "fact", "Rex needs a walk at noon and the dog park opens at nine.")
	remember(t, l, "fact", "Unrelated: invoices are due monthly.")
	cands, err := l.Candidates(ctx, layer.Query{Text: "what is the dog called"})
	if err != nil || len(cands) != 2 {
		t.Fatalf("Candidates = %+v, %v", cands, err)
	}
	c := cands[0]
	if c.Key != f.ID || c.Layer != semanticmemory.DefaultID || c.Similarity != 1 || !c.Time.Equal(f.Updated) || c.Importance != 0.9 ||
		c.Source != "by=user thread=t1" || c.Text != "["+f.ID+" profile] The user's dog is called Rex." || c.Tokens != (layer.Query{}).Count(c.Text) {
		t.Errorf("first candidate = %+v", c)
	}
	if s := cands[1].Similarity; !(s > 0 && s < 1) {
		t.Errorf("second similarity %v, want in (0,1)", s)
	}
	// The budget caps Recall's block.
	items, _ := l.Recall(ctx, layer.Query{Text: "dog Rex", Budget: 24})
	if len(items) != 1 || items[0].Tokens > 24 || strings.Count(items[0].Text, "\n") != 2 {
		t.Errorf("Recall within 24 tokens = %+v", items)
	}
	if items, _ := l.Recall(ctx, layer.Query{Text: "dog Rex", Budget: 3}); len(items) != 0 {
		t.Errorf("Recall within 3 tokens = %+v, want nothing", items)
	}
	// TopK caps the candidates as it caps Recall, so scored assembly
	// never shows more facts than Recall would.
	one := bind(t, semanticmemory.Config{TopK: 1}, storage.NewMemoryStore(), "t1")
	remember(t, one, "fact", "Rex needs a walk at noon and the dog park opens at nine.")
	remember(t, one, "fact", "The dog sleeps in the kitchen.")
	if cands, err := one.Candidates(ctx, layer.Query{Text: "dog"}); err != nil || len(cands) != 1 {
		t.Errorf("Candidates with TopK 1 = %+v, %v; want one", cands, err)
	}
}

// memVectorStore is an in-process vectorstores.VectorStore: cosine over
// an embedder's vectors.
type memVectorStore struct {
	mu   sync.Mutex
	emb  *ngramEmbedder
	docs []schema.Document
	vecs [][]float32
	fail bool
}

func (s *memVectorStore) AddDocuments(ctx context.Context, docs []schema.Document, _ ...vectorstores.Option) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for _, d := range docs {
		v, _ := s.emb.EmbedQuery(ctx, d.PageContent)
		s.docs, s.vecs = append(s.docs, d), append(s.vecs, v)
		ids = append(ids, fmt.Sprint(len(s.docs)))
	}
	return ids, nil
}

func (s *memVectorStore) SimilaritySearch(ctx context.Context, q string, n int, _ ...vectorstores.Option) ([]schema.Document, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return nil, fmt.Errorf("vector store down")
	}
	qv, _ := s.emb.EmbedQuery(ctx, q)
	type hit struct {
		d schema.Document
		c float64
	}
	var hits []hit
	for i, v := range s.vecs {
		var dot float64
		for j := range v {
			dot += float64(v[j] * qv[j])
		}
		hits = append(hits, hit{s.docs[i], dot})
	}
	for i := 1; i < len(hits); i++ { // insertion sort, stable
		for j := i; j > 0 && hits[j].c > hits[j-1].c; j-- {
			hits[j], hits[j-1] = hits[j-1], hits[j]
		}
	}
	var out []schema.Document
	for i := 0; i < len(hits) && i < n; i++ {
		d := hits[i].d
		d.Score = float32(hits[i].c)
		// Backends give numbers back as float64.
		md := map[string]any{}
		for k, v := range d.Metadata {
			if n, ok := v.(int); ok {
				md[k] = float64(n)
			} else {
				md[k] = v
			}
		}
		d.Metadata = md
		out = append(out, d)
	}
	return out, nil
}

// TestMemory10_VectorStoreAdapter: facts are mirrored into a
// vectorstores.VectorStore, whose search is the dense ranker;
// superseded, forgotten and other scopes' documents are ignored; a
// failing store falls back to sparse.
func TestMemory10_VectorStoreAdapter(t *testing.T) {
	vs := &memVectorStore{emb: &ngramEmbedder{}}
	cfg := semanticmemory.Config{VectorStore: &semanticmemory.VectorStore{Store: vs}}
	ctx := context.Background()
	l := bind(t, cfg, storage.NewMemoryStore(), "t1")
	veg := remember(t, l, "fact", "The user is vegetarian.")
	remember(t, l, "fact", "The user's favourite colour is blue.")
	col := remember(t, l, "fact", "The user's favourite colour is green.")
	gone := remember(t, l, "fact", "The user is moving to vegetarian Berlin.")
	if err := l.Forget(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	// Another resource's facts in the same vector store.
	other, _ := semanticmemory.New(cfg)
	ol, err := other.Init(ctx, layer.Env{ThreadID: "x", ResourceID: "user-2", Store: storage.NewMemoryStore()})
	if err != nil {
		t.Fatal(err)
	}
	remember(t, ol.(*semanticmemory.Layer), "fact", "Vegetarians eat vegetables.")
	if len(vs.docs) != 5 { // four facts, one of them in two versions
		t.Fatalf("mirrored %d documents, want 5", len(vs.docs))
	}
	hits, err := l.Search(ctx, "vegetarians", 0)
	if err != nil || len(hits) != 2 || hits[0].ID != veg.ID {
		t.Fatalf("search through the vector store = %+v, %v", hits, err)
	}
	for _, h := range hits {
		if h.ID == gone.ID || strings.Contains(h.Text, "Vegetables") || strings.Contains(h.Text, "blue") {
			t.Errorf("stale or foreign document returned: %+v", h)
		}
	}
	if hits[1].ID != col.ID {
		t.Errorf("second hit %s, want the live colour fact %s", hits[1].ID, col.ID)
	}
	vs.fail = true
	hits, err = l.Search(ctx, "vegetarian", 0)
	if err != nil || len(hits) != 1 || hits[0].ID != veg.ID {
		t.Errorf("search with the vector store down = %+v, %v; want sparse", hits, err)
	}
}

// TestMemory11_RecallReadsOnlyWhatIsNew: a Recall with nothing new does
// one Get (the head); after another process's write, one more per new
// record; never a List, whatever the number of facts.
func TestMemory11_RecallReadsOnlyWhatIsNew(t *testing.T) {
	cs := &countingStore{Store: storage.NewMemoryStore()}
	w := bind(t, semanticmemory.Config{}, cs.Store, "w")
	for i := range 50 {
		remember(t, w, "fact", fmt.Sprintf("Fact number %d about item%d.", i, i))
	}
	r := bind(t, semanticmemory.Config{}, cs, "r")
	cs.gets, cs.lists = 0, 0
	recall(t, r, "item7")
	if cs.gets != 1 || cs.lists != 0 {
		t.Errorf("Recall with nothing new: %d gets, %d lists; want 1, 0", cs.gets, cs.lists)
	}
	remember(t, w, "fact", "A fresh fact about item99.")
	cs.gets = 0
	if got := recall(t, r, "item99"); !strings.Contains(got, "item99") {
		t.Fatalf("new fact not recalled: %q", got)
	}
	if cs.gets != 2 || cs.lists != 0 {
		t.Errorf("Recall after one write: %d gets, %d lists; want 2, 0", cs.gets, cs.lists)
	}
}

// TestMemory12_SnapshotRestoreSpawnClear: a snapshot carries every
// version and restores into another store; a refused snapshot changes
// nothing; a child of a resource-scoped layer shares its facts; Clear
// empties the store for every process.
func TestMemory12_SnapshotRestoreSpawnClear(t *testing.T) {
	ctx := context.Background()
	store := storage.NewMemoryStore()
	l := bind(t, semanticmemory.Config{}, store, "t1")
	a := remember(t, l, "preference", "The user's favourite colour is blue.")
	remember(t, l, "preference", "The user's favourite colour is green.")
	b := remember(t, l, "fact", "The user works remotely.")
	snap, err := l.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := bind(t, semanticmemory.Config{}, storage.NewMemoryStore(), "t2")
	if err := r.Restore(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if vs, _ := r.Versions(ctx, a.ID); len(vs) != 2 {
		t.Errorf("restored versions of %s = %d, want 2", a.ID, len(vs))
	}
	c := remember(t, r, "fact", "The user has two cats.")
	if c.ID == a.ID || c.ID == b.ID {
		t.Errorf("a fact written after Restore reused ID %s", c.ID)
	}
	for _, bad := range []string{`{"version":2,"facts":[]}`, `{"version":1,"facts":[{"id":"f1","text":"x","kind":"fact","version":2}]}`, `{"version":1,"facts":[{"id":"f1","text":"","kind":"fact","version":1}]}`} {
		if err := r.Restore(ctx, []byte(bad)); err == nil {
			t.Errorf("Restore(%s) = nil", bad)
		}
	}
	if st := int(r.Metrics()["entries"]); st != 3 {
		t.Errorf("%d facts after refused restores, want 3", st)
	}
	// Restore over a store another process reads: it sees the snapshot's
	// facts and nothing of what was there.
	watcher := bind(t, semanticmemory.Config{}, store, "watch")
	if err := r.Restore(ctx, snap); err != nil {
		t.Fatal(err)
	}
	rsnap, _ := r.Snapshot(ctx)
	if string(rsnap) != string(snap) {
		t.Errorf("Restore did not replace the facts:\n%s\n%s", rsnap, snap)
	}
	remember(t, l, "fact", "A temporary fact the restore replaces.")
	if err := watcher.Restore(ctx, rsnap); err != nil {
		t.Fatal(err)
	}
	if wsnap, _ := l.Snapshot(ctx); string(wsnap) != string(snap) {
		t.Errorf("another process on the store does not see the restored facts:\n%s", wsnap)
	}
	child, err := l.OnSpawn(ctx, layer.Env{ThreadID: "child", ResourceID: "user-1", Store: store})
	if err != nil {
		t.Fatal(err)
	}
	remember(t, child.(*semanticmemory.Layer), "fact", "The child found the user's timezone: UTC+1.")
	if got := recall(t, l, "timezone"); !strings.Contains(got, "UTC+1") {
		t.Errorf("parent does not see the child's fact: %q", got)
	}
	other := bind(t, semanticmemory.Config{}, store, "t3")
	if err := l.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if facts, err := other.Facts(ctx); err != nil || len(facts) != 0 {
		t.Errorf("another process still has %d facts after Clear (%v)", len(facts), err)
	}
	keys, _ := store.List(ctx, storage.LayerPrefix("semantic", storage.ResourceScope("user-1")))
	if len(keys) != 2 || !strings.HasSuffix(keys[1], "/r-6") {
		t.Errorf("keys after Clear = %v, want the head and the empty reset record r-6", keys)
	}
	d := remember(t, other, "fact", "After the clear.")
	if d.ID == a.ID || d.ID == b.ID {
		t.Errorf("a fact written after Clear reused ID %s", d.ID)
	}
}

// TestMemory91_CandidateSimilarityIsTheMatch: a candidate's similarity
// says how well the fact matches the input (BM25 over the query's top
// score), not its fused rank: a fact that shares only a common word with
// the input scores far below the one it is about, so scored assembly,
// which weighs similarity against recency and importance, does not take
// it for a match.
func TestMemory91_CandidateSimilarityIsTheMatch(t *testing.T) {
	l := bind(t, semanticmemory.Config{}, storage.NewMemoryStore(), "t1")
	ctx := context.Background()
	remember(t, l, "preference", "The user's kayak paddle is carbon fibre.")
	remember(t, l, "preference", "The user does not like crowded trains.")
	remember(t, l, "preference", "The user likes quiet mornings.")
	remember(t, l, "preference", "The user likes green tea.")
	cands, err := l.Candidates(ctx, layer.Query{Text: "What do I like about my kayak paddle?"})
	if err != nil || len(cands) != 4 {
		t.Fatalf("Candidates = %+v, %v", cands, err)
	}
	sim := map[string]float64{}
	for _, c := range cands {
		sim[c.Text[strings.Index(c.Text, "] ")+2:]] = c.Similarity
	}
	paddle, trains := sim["The user's kayak paddle is carbon fibre."], sim["The user does not like crowded trains."]
	if paddle != 1 || trains <= 0 || trains > 0.5 {
		t.Errorf("similarities: paddle %v (want 1), trains %v (want in (0, 0.5])", paddle, trains)
	}
}

// TestMemory_RenderBlock: RenderBlock shows the facts scored assembly
// packed as Recall shows its own: all the candidates give Recall's block,
// byte for byte (pinned facts first, then the matches); some keep the
// fence and their order; none show nothing.
func TestMemory_RenderBlock(t *testing.T) {
	l := bind(t, semanticmemory.Config{}, storage.NewMemoryStore(), "t1")
	ctx := context.Background()
	remember(t, l, "profile", "The user lives in Lisbon.")
	remember(t, l, "fact", "Rex needs a walk at noon and the dog park opens at nine.")
	remember(t, l, "fact", "The dog sleeps in the kitchen.")
	remember(t, l, "fact", "Invoices are due monthly.")
	q := layer.Query{Text: "where does the dog sleep"}
	cands, err := l.Candidates(ctx, q)
	if err != nil || len(cands) < 3 {
		t.Fatalf("Candidates = %+v, %v", cands, err)
	}
	items, err := l.Recall(ctx, q)
	if err != nil || len(items) != 1 {
		t.Fatalf("Recall = %+v, %v", items, err)
	}
	if got := l.RenderBlock(cands); got != items[0].Text {
		t.Errorf("the block of every candidate:\n%s\nRecall's:\n%s", got, items[0].Text)
	}
	if got, want := l.RenderBlock([]layer.Candidate{cands[0], cands[2]}), "<semantic_memory>\n"+cands[0].Text+"\n"+cands[2].Text+"\n</semantic_memory>"; got != want {
		t.Errorf("the block of two candidates:\n%s\nwant:\n%s", got, want)
	}
	if b := l.RenderBlock(nil); b != "" {
		t.Errorf("the block of none is %q", b)
	}
}
