package entitymemory

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// TestFit09_DeletedPayloadIsForgotten checks that an object the result
// flags as deleted is forgotten by the layer, even when the tool's name
// does not say it deletes, and stays forgotten after a reload.
func TestFit09_DeletedPayloadIsForgotten(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemoryStore()
	env := layer.Env{ThreadID: "t1", Store: st}
	tmpl := mustNew(t, Config{})
	run, err := tmpl.Init(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	l := run.(*Layer)
	store := func(tool, args, file string) {
		t.Helper()
		err := l.Store(ctx, layer.Turn{Results: []layer.ToolResult{{ToolCall: layer.ToolCall{Name: tool, Arguments: args}, Content: readFixture(t, filepath.Join("testdata", "apis", file))}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	store("stripe_create_customer", `{"name":"Jenny Rosen"}`, "stripe-customer.json")
	l.Add(Entity{Type: "customer", ID: "cus_QXg1o8vcGmoR32", Name: "Old customer"},
		Entity{Type: "contact", ID: "667d60aa8a68186f43bafdba", Name: "Joe"})
	store("stripe_request", `{"method":"DELETE","path":"/v1/customers/cus_QXg1o8vcGmoR32"}`, "stripe-customer-deleted.json")
	store("intercom_request", `{"method":"DELETE","path":"/contacts/667d60aa8a68186f43bafdba"}`, "intercom-contact-deleted.json")
	if ids := idsOf(l.Entities()); !reflect.DeepEqual(ids, []string{"cus_NffrFeUfNV2Hib"}) {
		t.Errorf("after the deletions: %v, want only the live customer", ids)
	}
	again, err := tmpl.Init(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if ids := idsOf(again.(*Layer).Entities()); !reflect.DeepEqual(ids, []string{"cus_NffrFeUfNV2Hib"}) {
		t.Errorf("after a reload: %v, want only the live customer", ids)
	}
	// Add with the flag forgets too; a false flag records.
	l.Add(Entity{Type: "customer", ID: "cus_NffrFeUfNV2Hib", Deleted: true}, Entity{Type: "page", ID: "p1"})
	if ids := idsOf(l.Entities()); !reflect.DeepEqual(ids, []string{"p1"}) {
		t.Errorf("Add with Deleted: %v, want [p1]", ids)
	}
}

// TestFit10_RuleShapes states each new rule on a small payload.
func TestFit10_RuleShapes(t *testing.T) {
	tests := []struct {
		name, tool, args, result string
		want                     []ent
		deleted                  bool
	}{
		{"id under <type>Id", "get_video", ``, `{"videoId":"v1","playerId":"p1","title":"Intro"}`,
			[]ent{{"video", "v1", "Intro", "", ""}}, false},
		{"id under <key type>_id", "run", ``, `{"recording":{"recording_id":"r1","name":"Call"}}`,
			[]ent{{"recording", "r1", "Call", "", ""}}, false},
		{"another type's id is no id", "get_video", ``, `{"userId":"u1","title":"Intro"}`, []ent{}, false},
		{"sub-kind gives way to the tool's type", "create_product", ``, `{"id":1,"type":"simple","name":"Mug"}`,
			[]ent{{"product", "1", "Mug", "", ""}}, false},
		{"sub-kind under an envelope", "get_ticket", ``, `{"data":{"id":7,"type":"Question","subject":"Help"}}`,
			[]ent{{"ticket", "7", "Help", "", ""}}, false},
		{"a family's member keeps its type", "upload_media", ``, `{"id":"m1","type":"video","filename":"a.mp4"}`,
			[]ent{{"video", "m1", "a.mp4", "", ""}}, false},
		{"a tool name without a verb is no sure type", "crm_request", ``, `{"id":"c1","type":"contact","email":"a@b.c"}`,
			[]ent{{"contact", "c1", "a@b.c", "", ""}}, false},
		{"qualified label", "get_asset", ``, `{"id":"a1","originalFileName":"logo.svg"}`,
			[]ent{{"asset", "a1", "logo.svg", "", ""}}, false},
		{"another noun's name is no label", "get_invoice", ``, `{"invoice":{"id":"in_1","account_name":"Acme","customer_name":"Jo"}}`,
			[]ent{{"invoice", "in_1", "in_1", "", ""}}, false},
		{"person name", "create_contact", ``, `{"id":"c1","first_name":"Ada","last_name":"Lovelace","email":""}`,
			[]ent{{"contact", "c1", "Ada Lovelace", "", ""}}, false},
		{"label in a nested object without id", "create_item", ``, `{"id":"i1","fieldData":{"name":"Towel","slug":"towel"},"author":{"id":"u1","name":"Zaphod"}}`,
			[]ent{{"item", "i1", "Towel", "towel", ""}}, false},
		{"a nested object with an id is another entity", "create_ticket", ``, `{"ticket":{"id":"t1","ticket_type":{"id":"106","name":"Bug"}}}`,
			[]ent{{"ticket", "t1", "t1", "", ""}}, false},
		{"warnings beside the resource", "run", ``, `{"success":true,"warnings":[{"code":409,"message":"duplicate tag ignored"}],"candidate":{"id":"c1","name":"Ada"}}`,
			[]ent{{"candidate", "c1", "Ada", "", ""}}, false},
		{"deleted flag", "api_call", ``, `{"id":"cus_1","object":"customer","deleted":true}`,
			[]ent{{"customer", "cus_1", "cus_1", "", ""}}, true},
		{"is_deleted false is live", "get_item", ``, `{"id":"i1","is_deleted":false,"name":"Tea"}`,
			[]ent{{"item", "i1", "Tea", "", ""}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Extract(tt.tool, tt.args, tt.result)
			if g := ents(got); !reflect.DeepEqual(g, tt.want) {
				t.Errorf("Extract(%s, %s):\n got %+v\nwant %+v", tt.tool, tt.result, g, tt.want)
			}
			for _, e := range got {
				if e.Deleted != tt.deleted {
					t.Errorf("Deleted = %v, want %v", e.Deleted, tt.deleted)
				}
			}
		})
	}
	for name, want := range map[string]string{
		"cloudflare_create_dns_record":   "dns_record",
		"square_upsert_catalog_object":   "catalog_object",
		"webflow_create_collection_item": "collection_item",
		"airtable_list_records":          "record",
		"list_objects":                   "object",
	} {
		if got := TypeFromToolName(name); got != want {
			t.Errorf("TypeFromToolName(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestFit11_RulesNameNoVendor checks that no string in the rule tables
// names a vendor of the fixtures or a key only one vendor uses.
func TestFit11_RulesNameNoVendor(t *testing.T) {
	banned := []string{"apivideo", "bigcommerce", "cloudflare", "digitalocean", "freshdesk", "intercom",
		"msgraph", "outlook", "square", "stripe", "webflow", "woocommerce",
		"fielddata", "itemdata", "ticketattributes", "videoid", "schemaid", "sysid", "defaulttitle", "originalfilename"}
	for _, file := range []string{"extract.go", "naming.go"} {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			low := strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
			for _, b := range banned {
				if strings.Contains(low, b) {
					t.Errorf("%s: string %q names %q", file, s, b)
				}
			}
			return true
		})
	}
}
