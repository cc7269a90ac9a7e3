package entitymemory

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// moreRealAPIs are real example responses of APIs (testdata/apis, sources
// in testdata/apis/SOURCES.md) whose shapes the first rules missed: an
// identifier only under a "<noun>Id" key, a label under a key outside the
// usual names or in a nested object, a sub-kind in a generic "type" field
// that hid the tool's better type, a success envelope that also carries
// warnings, and deleted objects flagged as such. deleted says that every
// entity of the fixture must come out flagged Deleted.
var moreRealAPIs = []struct {
	file, tool, args string
	want             []ent
	deleted          bool
}{
	{"apivideo-video-get.json", "apivideo_get_video", ``, []ent{
		{"video", "vi4k0jvEUuaTdRAEjQ4Jfagz", "Maths video", "", ""},
	}, false},
	{"bigcommerce-product-get.json", "bigcommerce_get_product", `{"product_id":174}`, []ent{
		{"product", "174", "1L Le Parfait Jar", "", ""},
	}, false},
	{"cloudflare-access-application-get.json", "cloudflare_get_access_application", ``, []ent{
		{"application", "480f4f69-1a28-4fdd-9240-1ed29f0ac1db", "Admin Site", "", ""},
	}, false},
	{"cloudflare-api-shield-schema-create.json", "cloudflare_create_api_shield_schema", `{"name":"petstore.json","kind":"openapi_v3"}`, []ent{
		{"schema", "0f05e4fc-1c36-4bd2-a5e7-b29d32d3dc8e", "petstore.json", "", ""},
	}, false},
	{"cloudflare-dns-record-create.json", "cloudflare_create_dns_record", `{"zone_id":"023e105f4ecef8ad9ca31a8372d0c353","type":"A","name":"xn--138h.example.com"}`, []ent{
		{"dns_record", "372e67954025e0ba6aaa6d586b9e0b59", "xn--138h.example.com", "", "023e105f4ecef8ad9ca31a8372d0c353"},
	}, false},
	{"digitalocean-domain-records.json", "digitalocean_list_domain_records", `{"domain_name":"example.com"}`, []ent{
		{"domain_record", "28448429", "@", "", ""},
		{"domain_record", "28448430", "@", "", ""},
		{"domain_record", "28448431", "@", "", ""},
	}, false},
	{"freshdesk-ticket-get.json", "freshdesk_get_ticket", `{"id":1}`, []ent{
		{"ticket", "1", "This is a sample ticket", "", ""},
	}, false},
	{"intercom-article-create.json", "intercom_create_article", `{"title":"Thanks for everything","author_id":991267407}`, []ent{
		{"article", "42", "Thanks for everything", "", "145"},
	}, false},
	{"intercom-company-create.json", "intercom_create_company", `{"name":"my company","company_id":"company_remote_id"}`, []ent{
		{"company", "667d607c8a68186f43bafd1e", "my company", "", ""},
	}, false},
	{"intercom-company-deleted.json", "intercom_request", `{"method":"DELETE","path":"/companies/667d60848a68186f43bafd45"}`, []ent{
		{"company", "667d60848a68186f43bafd45", "667d60848a68186f43bafd45", "", ""},
	}, true},
	{"intercom-contact-deleted.json", "intercom_request", `{"method":"DELETE","path":"/contacts/667d60aa8a68186f43bafdba"}`, []ent{
		{"contact", "667d60aa8a68186f43bafdba", "667d60aa8a68186f43bafdba", "", ""},
	}, true},
	{"intercom-ticket-create.json", "intercom_create_ticket", `{"ticket_type_id":"106"}`, []ent{
		{"ticket", "489", "example", "", "106"},
	}, false},
	{"msgraph-event-create.json", "outlook_create_event", `{"subject":"Let's go brunch"}`, []ent{
		{"event", "AAMkAGI1AAAt9AHjAAA=", "Let's go brunch", "", ""},
	}, false},
	{"square-booking-create.json", "square_create_booking", ``, []ent{
		{"booking", "zkras0xv0xwswx", "zkras0xv0xwswx", "", ""},
	}, false},
	{"square-catalog-object-get.json", "square_retrieve_catalog_object", `{"object_id":"W62UWFY35CWMYGVWK6TWJDNI"}`, []ent{
		{"catalog_object", "W62UWFY35CWMYGVWK6TWJDNI", "Tea", "", ""},
	}, false},
	{"square-catalog-object-upsert.json", "square_upsert_catalog_object", ``, []ent{
		{"catalog_object", "R2TA2FOBUGCJZNIWJSOSNAI4", "Cocoa", "", ""},
	}, false},
	{"square-customer-create.json", "square_create_customer", `{"given_name":"Amelia","family_name":"Earhart"}`, []ent{
		{"customer", "JDKYHBWT1D4F8MFH63DBMEN8Y4", "Amelia Earhart", "", ""},
	}, false},
	{"stripe-customer-deleted.json", "stripe_request", `{"method":"DELETE","path":"/v1/customers/cus_QXg1o8vcGmoR32"}`, []ent{
		{"customer", "cus_QXg1o8vcGmoR32", "cus_QXg1o8vcGmoR32", "", ""},
	}, true},
	{"webflow-asset-create.json", "webflow_create_asset", `{"site_id":"580e63e98c9a982ac9b8b741","fileName":"file.png"}`, []ent{
		{"asset", "64358b9544249dc43d37d2b7", "file.png", "", "580e63e98c9a982ac9b8b741"},
	}, false},
	{"webflow-asset-get.json", "webflow_get_asset", `{"asset_id":"63e5889e7fe4eafa7384cea4"}`, []ent{
		{"asset", "63e5889e7fe4eafa7384cea4", "63e5889e7fe4eafa7384cea4_Candy-Wrapper.png", "", ""},
	}, false},
	{"webflow-cms-item-create.json", "webflow_create_collection_item", `{"collection_id":"580e63fc8c9a982ac9b8b745"}`, []ent{
		{"collection_item", "42b720ef280c7a7a3be8cabe", "The Hitchhiker's Guide to the Galaxy", "hitchhikers-guide-to-the-galaxy", "580e63fc8c9a982ac9b8b745"},
	}, false},
	{"woocommerce-product-create.json", "woocommerce_create_product", `{"name":"Premium Quality","type":"simple"}`, []ent{
		{"product", "794", "Premium Quality", "premium-quality-19", ""},
	}, false},
}

// TestFit08_ExtractMoreRealAPIs runs the extractor on moreRealAPIs.
func TestFit08_ExtractMoreRealAPIs(t *testing.T) {
	x := NewExtractor(Config{})
	for _, tt := range moreRealAPIs {
		t.Run(tt.file, func(t *testing.T) {
			got := x.Extract(tt.tool, tt.args, readFixture(t, filepath.Join("testdata", "apis", tt.file)))
			if g := ents(got); !reflect.DeepEqual(g, tt.want) {
				t.Errorf("Extract(%s):\n got %+v\nwant %+v", tt.tool, g, tt.want)
			}
			for _, e := range got {
				if e.Deleted != tt.deleted {
					t.Errorf("Extract(%s): %s %s Deleted = %v, want %v", tt.tool, e.Type, e.ID, e.Deleted, tt.deleted)
				}
			}
		})
	}
}

// TestFit08_FixturesCiteSources checks that there are at least 20 new
// fixtures and that each is listed with its source in SOURCES.md.
func TestFit08_FixturesCiteSources(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "apis", "SOURCES.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(moreRealAPIs) < 20 {
		t.Errorf("%d new fixtures, want at least 20", len(moreRealAPIs))
	}
	for _, tt := range moreRealAPIs {
		if !strings.Contains(string(b), "| "+tt.file+" | ") {
			t.Errorf("SOURCES.md does not cite %s", tt.file)
		}
	}
}
