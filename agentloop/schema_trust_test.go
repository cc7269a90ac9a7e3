package agentloop_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/agentloop"
)

// TestTrust16_ToolSchemaLoadsNoExternalReference: a tool's parameter
// schema with a "$ref" to a local file made the validator read the file
// and quote it in the error the model reads; a self-referencing schema
// failed every call; a megabyte pattern cost seconds. Tool schemas now
// compile like the scratchpad's (internal/safeschema).
func TestTrust16_ToolSchemaLoadsNoExternalReference(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(secret, []byte(`{"description":"TOP-SECRET","type":"string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	schema := json.RawMessage(`{"type":"object","properties":{"x":{"$ref":"file://` + secret + `"}}}`)
	err := agentloop.ValidateArgs(schema, []byte(`{"x":1}`))
	if err == nil {
		t.Fatal("ValidateArgs with an external $ref: nil error, want the schema refused")
	}
	if strings.Contains(err.Error(), "TOP-SECRET") || strings.Contains(err.Error(), "want string") {
		t.Errorf("the file was loaded: %v", err)
	}
	for name, s := range map[string]string{
		"self reference": `{"$ref":"#"}`,
		"long pattern":   `{"type":"object","properties":{"x":{"type":"string","pattern":"` + strings.Repeat("a", 1<<20) + `"}}}`,
	} {
		err := agentloop.ValidateArgs(json.RawMessage(s), []byte(`{"x":"a"}`))
		if err == nil || !strings.Contains(err.Error(), "schema") {
			t.Errorf("%s: err = %v, want the schema refused", name, err)
		} else if len(err.Error()) > 1200 {
			t.Errorf("%s: error of %d bytes quotes the schema", name, len(err.Error()))
		}
	}
}
