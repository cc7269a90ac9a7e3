package entitymemory

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// ent is the comparable part of an Entity.
type ent struct{ Type, ID, Name, Slug, Parent string }

func ents(es []Entity) []ent {
	out := make([]ent, len(es))
	for i, e := range es {
		out[i] = ent{e.Type, e.ID, e.Name, e.Slug, e.Parent}
	}
	return out
}

func readFixture(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestExtractRealAPIs runs the extractor on responses shaped like the
// documented responses of real APIs (testdata/apis) and states what each
// must yield.
func TestExtractRealAPIs(t *testing.T) {
	const notionDB = "d9824bdc-8445-4327-be8b-5b47500af6ce"
	tests := []struct {
		file, tool, args string
		want             []ent
	}{
		{"wordpress-posts.json", "wp_list_posts", `{"per_page":10}`, []ent{
			{"post", "4821", "Spring Launch – Recap", "spring-launch-recap", ""},
			{"post", "4799", "Pricing update", "pricing-update", ""},
			{"post", "4750", "Hello world!", "hello-world", ""},
		}},
		{"wordpress-page.json", "wp_create_page", `{"title":"About Us","status":"draft"}`, []ent{
			{"page", "123", "About Us", "about-us", ""},
		}},
		{"strapi-v4-article.json", "strapi_create_article", `{"data":{"title":"Ten tips for faster pages"}}`, []ent{
			{"article", "17", "Ten tips for faster pages", "ten-tips-for-faster-pages", ""},
		}},
		{"strapi-v5-articles.json", "strapi_find_articles", ``, []ent{
			{"article", "hgv1vny5cebq2l3czil1rpb3", "What's inside a black hole", "what-s-inside-a-black-hole", ""},
			{"article", "znrlzntu9ei5onjvwfaalu2v", "A bug is becoming a meme on the internet", "a-bug-is-becoming-a-meme-on-the-internet", ""},
			{"article", "ljr3yrazd0p7hmzx2jdsdh2u", "Beautiful picture", "beautiful-picture", ""},
		}},
		{"contentful-entries.json", "contentful_get_entries", `{"content_type":"blogPost"}`, []ent{
			{"entry", "5KsDBWseXY6QegucYAoacS", "Hello, World!", "hello-world", ""},
			{"entry", "6ZtVM5Rv7mGi6cGe2KkEmY", "Static sites are great", "static-sites-are-great", ""},
		}},
		{"notion-query-database.json", "notion_query_database", `{"database_id":"` + notionDB + `"}`, []ent{
			{"page", "59833787-2cf9-4fdf-8782-e53db20768a5", "Fix login redirect", "", notionDB},
			{"page", "a1d8501e-1ac1-43e9-a6bd-ea9fe6c8822b", "Ship v2 onboarding", "", notionDB},
		}},
		{"notion-database.json", "notion_retrieve_database", `{"database_id":"` + notionDB + `"}`, []ent{
			{"database", notionDB, "Sprint tasks", "", "98ad959b-2b6a-4774-80ee-00246fb0ea9b"},
		}},
		{"github-issue.json", "github_create_issue", `{"owner":"octocat","repo":"Hello-World","title":"Found a bug"}`, []ent{
			{"issue", "1", "Found a bug", "", ""},
		}},
		{"github-pulls.json", "github_list_pull_requests", `{"owner":"octocat","repo":"Hello-World"}`, []ent{
			{"pull_request", "1296269", "Amazing new feature", "", ""},
			{"pull_request", "1296301", "Fix typo in README", "", ""},
		}},
		{"github-repo.json", "github_get_repository", `{"owner":"octocat","repo":"Hello-World"}`, []ent{
			{"repository", "1296269", "Hello-World", "", ""},
		}},
		{"shopify-product.json", "shopify_create_product", `{"product":{"title":"Burton Custom Freestyle 151"}}`, []ent{
			{"product", "1072481062", "Burton Custom Freestyle 151", "burton-custom-freestyle-151", ""},
		}},
		{"stripe-customer.json", "stripe_create_customer", `{"name":"Jenny Rosen","email":"jennyrosen@example.com"}`, []ent{
			{"customer", "cus_NffrFeUfNV2Hib", "Jenny Rosen", "", ""},
		}},
		{"stripe-invoices.json", "stripe_list_invoices", `{"customer":"cus_NeZwdNtLEOXuvB"}`, []ent{
			{"invoice", "in_1MtHbELkdIwHu7ixl4OzzPMv", "in_1MtHbELkdIwHu7ixl4OzzPMv", "", ""},
			{"invoice", "in_1MtGmCLkdIwHu7ix6PgS6g8S", "in_1MtGmCLkdIwHu7ix6PgS6g8S", "", ""},
		}},
		{"sanity-query.json", "sanity_query", `{"query":"*[_type == \"post\"]"}`, []ent{
			{"post", "2f6a8c8e-3b51-4f2e-9d8f-1a7b2c3d4e5f", "Structured content 101", "structured-content-101", ""},
			{"post", "drafts.9b1c7e2a-6f4d-4a3b-8c2d-0e1f2a3b4c5d", "GROQ by example", "groq-by-example", ""},
		}},
		{"linear-issue-create.json", "linear_create_issue", `{"teamId":"72b2a2dc-6f4f-4423-9d34-24b5bd10634a","title":"Checkout button unresponsive on Safari"}`, []ent{
			{"issue", "9cfb482a-81e3-4154-b5b9-2c805e70a02d", "Checkout button unresponsive on Safari", "ENG-1024", "72b2a2dc-6f4f-4423-9d34-24b5bd10634a"},
		}},
		{"jira-issue.json", "jira_get_issue", `{"issueIdOrKey":"ED-1"}`, []ent{
			{"issue", "10002", "Main order flow broken", "ED-1", ""},
		}},
		{"jira-search.json", "jira_search_issues", `{"jql":"project = ED"}`, []ent{
			{"issue", "10002", "Main order flow broken", "ED-1", ""},
			{"issue", "10005", "Add Apple Pay", "ED-4", ""},
		}},
		{"gdrive-files.json", "gdrive_list_files", `{"q":"trashed = false"}`, []ent{
			{"file", "1Jm4dI6NDrbrBqkXXjm3oG8pbKzZ0K9YdyYl4g0kE9Fw", "Q4 roadmap", "", ""},
			{"file", "1aBcD3fGhIjKlMnOpQrStUvWxYz012345", "hero-banner.png", "", ""},
			{"file", "1ZyXwVuTsRqPoNmLkJiHgFeDcBa98765", "Brand guidelines.pdf", "", ""},
		}},
		{"airtable-records.json", "airtable_list_records", `{"baseId":"appABC","tableIdOrName":"Places"}`, []ent{
			{"record", "rec560UJdUtocSouk", "Union Square", "", "appABC"},
			{"record", "recZXOZ5oRrUfgoNs", "Ferry Building", "", "appABC"},
		}},
	}
	x := NewExtractor(Config{})
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got := x.Extract(tt.tool, tt.args, readFixture(t, filepath.Join("testdata", "apis", tt.file)))
			if g := ents(got); !reflect.DeepEqual(g, tt.want) {
				t.Errorf("Extract(%s):\n got %+v\nwant %+v", tt.tool, g, tt.want)
			}
		})
	}
}

// TestExtractAPIErrors checks that the error bodies of real APIs
// (testdata/apierrors) yield no entity, even those that carry IDs.
func TestExtractAPIErrors(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "apierrors", "*.json"))
	if err != nil || len(files) < 10 {
		t.Fatalf("want at least 10 error fixtures, got %d (%v)", len(files), err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			body := readFixture(t, f)
			for _, tool := range []string{"cms_getPage", "get_issue", "search"} {
				if got := Extract(tool, `{"pageId":"page-1","id":"x-1"}`, body); len(got) != 0 {
					t.Errorf("Extract(%s) on an error body = %+v, want nothing", tool, got)
				}
			}
		})
	}
}
