package workingmemory

import (
	"testing"
)

// TestFastValidatorAgrees checks the fast validator against jsonschema on
// every keyword it implements: both must give the same verdict.
func TestFastValidatorAgrees(t *testing.T) {
	schemas := map[string]string{
		"type":          `{"type":["string","null"]}`,
		"integer":       `{"type":"integer"}`,
		"number":        `{"type":"number"}`,
		"bounds":        `{"minimum":1,"maximum":5,"exclusiveMaximum":5}`,
		"exclusiveMin":  `{"exclusiveMinimum":0}`,
		"strings":       `{"type":"string","minLength":2,"maxLength":3,"pattern":"^a"}`,
		"enum":          `{"enum":["x",1,null,{"a":[1]}]}`,
		"const":         `{"const":{"a":1.0}}`,
		"object":        `{"type":"object","required":["id"],"properties":{"id":{"type":"string"},"n":{"type":"integer"}},"additionalProperties":{"type":"boolean"},"minProperties":1,"maxProperties":3}`,
		"noAdditional":  `{"type":"object","properties":{"a":true,"b":false},"additionalProperties":false}`,
		"array":         `{"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3,"uniqueItems":true}`,
		"nested":        `{"type":"object","properties":{"p":{"type":"object","properties":{"q":{"type":"array","items":{"enum":["a","b"]}}}}}}`,
		"false":         `false`,
		"true":          `true`,
		"annotations":   `{"title":"t","description":"d","default":1,"examples":[1],"$comment":"c","type":"integer"}`,
		"draft7 schema": `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"x":{"type":"integer","minimum":0}}}`,
	}
	instances := []string{
		`null`, `true`, `false`, `0`, `1`, `1.0`, `1.5`, `5`, `-3`, `1e2`, `"a"`, `"ab"`, `"abc"`, `"abcd"`, `"ba"`, `"x"`, `"é"`,
		`[]`, `[1]`, `[1,2,3]`, `[1,1]`, `[1,2,3,4]`, `["a","b"]`, `[1.0,1]`,
		`{}`, `{"id":"x"}`, `{"id":1}`, `{"id":"x","n":2,"z":true}`, `{"id":"x","z":"no"}`, `{"id":"x","a":1,"b":2,"c":3}`,
		`{"a":1}`, `{"b":1}`, `{"c":1}`, `{"a":1.0}`, `{"a":[1]}`, `{"p":{"q":["a","c"]}}`, `{"p":{"q":["a","b"]}}`, `{"x":-1}`, `{"x":2}`,
	}
	for name, src := range schemas {
		sch, err := compileSchema(Config{Schema: src})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if sch.fast == nil {
			t.Errorf("%s: the fast validator does not take this schema", name)
			continue
		}
		for _, in := range instances {
			v, err := decodeJSON([]byte(in), 64)
			if err != nil {
				t.Fatal(err)
			}
			fast := sch.fast.valid(v)
			full := sch.full.Validate(toGo(v)) == nil
			if fast != full {
				t.Errorf("%s on %s: fast validator says %v, jsonschema %v", name, in, fast, full)
			}
		}
	}
}

// Keywords the fast validator does not implement send every check to
// jsonschema.
func TestFastValidatorFallsBack(t *testing.T) {
	for _, src := range []string{
		`{"$ref":"#/$defs/a","$defs":{"a":{"type":"string"}}}`,
		`{"allOf":[{"type":"string"}]}`,
		`{"type":"string","format":"email"}`,
		`{"multipleOf":0.1}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","type":"integer"}`,
		`{"properties":{"a":{"patternProperties":{"x":true}}}}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}]}`,
	} {
		sch, err := compileSchema(Config{Schema: src})
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if sch.fast != nil {
			t.Errorf("%s: compiled by the fast validator", src)
		}
	}
	// And validation still works through jsonschema.
	// (jsonschema asserts formats for drafts before 2019-09.)
	l := newLayer(t, Config{Schema: `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"email":{"type":"string","format":"email"}}}`})
	if err := l.Update(t.Context(), []byte(`{"email":"not an email"}`)); err == nil {
		t.Error("format not enforced")
	}
	if err := l.Update(t.Context(), []byte(`{"email":"a@b.example"}`)); err != nil {
		t.Error(err)
	}
}

// TestValidChangedAgrees checks the update path's validator, which skips
// the members an update left as they were, against jsonschema: for every
// valid old state and every object, the verdicts agree.
func TestValidChangedAgrees(t *testing.T) {
	schemas := []string{
		`{"type":"object","required":["id"],"properties":{"id":{"type":"string"},"n":{"type":"integer"}},"additionalProperties":{"type":"boolean"},"minProperties":1,"maxProperties":3}`,
		`{"type":"object","properties":{"a":true,"b":false},"additionalProperties":false}`,
		`{"type":"object","properties":{"p":{"type":"object","properties":{"q":{"type":"array","items":{"enum":["a","b"]}}}}}}`,
		`{"type":"object","enum":[{"id":"x"},{"id":"y","n":1}]}`,
	}
	objects := []string{
		`{}`, `{"id":"x"}`, `{"id":"y","n":1}`, `{"id":1}`, `{"id":"x","n":2,"z":true}`, `{"id":"x","n":"2"}`,
		`{"id":"x","z":"no"}`, `{"id":"x","a":true,"b":true,"c":true}`, `{"a":1}`, `{"b":1}`, `{"a":1,"c":1}`,
		`{"p":{"q":["a","c"]}}`, `{"p":{"q":["a","b"]}}`, `{"p":{"q":["a","b"]},"id":"x"}`,
	}
	for _, src := range schemas {
		sch, err := compileSchema(Config{Schema: src})
		if err != nil || sch.fast == nil {
			t.Fatalf("%s: %v (fast validator: %v)", src, err, sch != nil && sch.fast != nil)
		}
		for _, before := range objects {
			old, _ := decodeJSON([]byte(before), 64)
			if sch.full.Validate(toGo(old)) != nil {
				continue // validChanged assumes a valid old state
			}
			for _, after := range objects {
				v, _ := decodeJSON([]byte(after), 64)
				got := sch.fast.validChanged(old.(*object), v)
				want := sch.full.Validate(toGo(v)) == nil
				if got != want {
					t.Errorf("%s: %s after %s: validChanged says %v, jsonschema %v", src, after, before, got, want)
				}
			}
		}
	}
}
