package plan

import (
	"fmt"
	"strings"
	"testing"
)

// schemaPlan is a plan with two diffs and two commands: the first of each
// satisfies the schemas below, the second does not, so a location that
// names the wrong item fails the test.
func schemaPlan() *Plan {
	return &Plan{
		Diffs: []Diff{
			{Path: "src/a.go", Checksum: emptySum, UnifiedDiff: "--- a/src/a.go\n"},
			{Path: "lib/b.go", Checksum: emptySum, UnifiedDiff: "+++ b/lib/b.go\n"},
		},
		Post: &Post{Commands: []Command{
			{Program: "go", Args: []string{"-v"}},
			{Program: "make", Args: []string{"-k", "all"}},
		}},
	}
}

func TestValidateLocations(t *testing.T) {
	tests := []struct {
		name, schema string
		want         string // the whole error
	}{
		{"items", `{"properties": {"diffs": {"items": {"properties": {"path": {"pattern": "^src/"}}}}}}`,
			`diffs[1].path: schema: 'lib/b.go' does not match pattern '^src/'`},
		{"ref", `{"$defs": {"diff": {"properties": {"path": {"pattern": "^src/"}}}},
			"properties": {"diffs": {"items": {"$ref": "#/$defs/diff"}}}}`,
			`diffs[1].path: schema: 'lib/b.go' does not match pattern '^src/'`},
		{"ref to a place under the referrer's parent", `{"properties": {
			"diffs": {"items": {"$ref": "#/properties/post/$defs/d"}},
			"post": {"$defs": {"d": {"properties": {"path": {"maxLength": 5}}}}}}}`,
			`diffs[0].path: schema: maxLength: got 8, want 5`},
		{"id", `{"properties": {"diffs": {"items": {"$id": "urn:ctxkit:diff", "properties": {"path": {"pattern": "^src/"}}}}}}`,
			`diffs[1].path: schema: 'lib/b.go' does not match pattern '^src/'`},
		{"additional properties", `{"properties": {"diffs": {"items": {"properties": {"path": {}}, "additionalProperties": false}}}}`,
			`diffs[0]: schema: additional properties 'checksum', 'unified_diff' not allowed`},
		{"additional properties by pattern", `{"properties": {"diffs": {"items": {"properties": {"path": {}}, "patternProperties": {"^check": {}}, "additionalProperties": false}}}}`,
			`diffs[0]: schema: additional properties 'unified_diff' not allowed`},
		{"additional properties schema", `{"properties": {"post": {"properties": {"commands": {"items": {"properties": {"program": {}}, "additionalProperties": {"type": "string"}}}}}}}`,
			`post.commands[0].args: schema: got array, want string`},
		{"pattern properties", `{"properties": {"post": {"properties": {"commands": {"items": {"patternProperties": {"^a": {"maxItems": 1}}}}}}}}`,
			`post.commands[1].args: schema: maxItems: got 2, want 1`},
		{"required", `{"properties": {"post": {"properties": {"commands": {"items": {"required": ["program", "timeout_ms"]}}}}}}`,
			`post.commands[0]: schema: missing property 'timeout_ms'`},
		{"required at the top", `{"required": ["post", "notes", "why"]}`,
			`plan: schema: missing properties 'notes', 'why'`},
		{"type", `{"properties": {"post": {"type": "array"}}}`,
			`post: schema: got object, want array`},
		{"types", `{"properties": {"post": {"type": ["array", "null"]}}}`,
			`post: schema: got object, want array or null`},
		{"enum", `{"properties": {"post": {"properties": {"commands": {"items": {"properties": {"program": {"enum": ["go", 1]}}}}}}}}`,
			`post.commands[1].program: schema: value must be one of 'go', 1`},
		{"const", `{"properties": {"diffs": {"items": {"properties": {"path": {"const": "src/a.go"}}}}}}`,
			`diffs[1].path: schema: value must be 'src/a.go'`},
		{"nested items", `{"properties": {"post": {"properties": {"commands": {"items": {"properties": {"args": {"items": {"pattern": "^-"}}}}}}}}}`,
			`post.commands[1].args[1]: schema: 'all' does not match pattern '^-'`},
		{"draft-07 tuple", `{"$schema": "http://json-schema.org/draft-07/schema#",
			"properties": {"diffs": {"items": [{}, {"properties": {"path": {"pattern": "^src/"}}}]}}}`,
			`diffs[1].path: schema: 'lib/b.go' does not match pattern '^src/'`},
		{"draft-07 additional items", `{"$schema": "http://json-schema.org/draft-07/schema#",
			"definitions": {"p": {"properties": {"path": {"pattern": "^src/"}}}},
			"properties": {"diffs": {"items": [{}], "additionalItems": {"$ref": "#/definitions/p"}}}}`,
			`diffs[1].path: schema: 'lib/b.go' does not match pattern '^src/'`},
		{"prefix items", `{"properties": {"post": {"properties": {"commands": {"prefixItems": [{}, {"properties": {"program": {"const": "go"}}}]}}}}}`,
			`post.commands[1].program: schema: value must be 'go'`},
		// commands[0] fails the const too, but prefixItems evaluated it.
		{"unevaluated items", `{"properties": {"post": {"properties": {"commands": {"prefixItems": [{}],
			"unevaluatedItems": {"properties": {"program": {"const": "zzz"}}}}}}}}`,
			`post.commands[1].program: schema: value must be 'zzz'`},
		// checksum fails the maxLength too, but properties evaluated it.
		{"unevaluated properties", `{"properties": {"diffs": {"items": {"properties": {"checksum": {}},
			"unevaluatedProperties": {"maxLength": 3}}}}}`,
			`diffs[0].path: schema: maxLength: got 8, want 3`},
		{"allOf", `{"properties": {"diffs": {"items": {"allOf": [{}, {"properties": {"path": {"maxLength": 5}}}]}}}}`,
			`diffs[0].path: schema: maxLength: got 8, want 5`},
		{"anyOf", `{"properties": {"diffs": {"items": {"anyOf": [
			{"properties": {"path": {"pattern": "^src/"}}}, {"properties": {"path": {"pattern": "^docs/"}}}]}}}}`,
			`diffs[1]: schema: anyOf: did not validate against any of`},
		{"not", `{"properties": {"post": {"properties": {"commands": {"items": {"not": {"required": ["args"], "properties": {"program": {"const": "make"}}}}}}}}}`,
			`post.commands[1]: schema: not: validated against`},
		{"if then", `{"properties": {"diffs": {"items": {"if": {"properties": {"path": {"pattern": "^lib/"}}},
			"then": {"properties": {"unified_diff": {"pattern": "^---"}}}}}}}`,
			`diffs[1].unified_diff: schema: '+++ b/lib/b.go\n' does not match pattern '^---'`},
		// diffs[0] fails the then-pattern too but is outside the condition.
		{"then applies only under its condition", `{"properties": {"diffs": {"items": {"if": {"properties": {"path": {"pattern": "^lib/"}}},
			"then": {"properties": {"unified_diff": {"pattern": "^@@"}}}}}}}`,
			`diffs[1].unified_diff: schema: '+++ b/lib/b.go\n' does not match pattern '^@@'`},
		{"else", `{"properties": {"diffs": {"items": {"if": {"properties": {"path": {"pattern": "^src/"}}},
			"else": {"properties": {"unified_diff": {"pattern": "^@@"}}}}}}}`,
			`diffs[1].unified_diff: schema: '+++ b/lib/b.go\n' does not match pattern '^@@'`},
		{"dependent schemas", `{"properties": {"post": {"properties": {"commands": {"items": {
			"dependentSchemas": {"args": {"properties": {"args": {"maxItems": 1}}}}}}}}}}`,
			`post.commands[1].args: schema: maxItems: got 2, want 1`},
		{"max items", `{"properties": {"diffs": {"maxItems": 1}}}`,
			`diffs: schema: maxItems: got 2, want 1`},
		{"property names", `{"properties": {"diffs": {"items": {"propertyNames": {"enum": ["path", "checksum"]}}}}}`,
			`diffs[0]: schema: property name 'unified_diff': value must be one of 'path', 'checksum'`},
		{"min length of a nested string", `{"properties": {"post": {"properties": {"commands": {"items": {"properties": {"args": {"items": {"minLength": 3}}}}}}}}}`,
			`post.commands[0].args[0]: schema: minLength: got 2, want 3`},
		// The anyOf's branches are references, so the branch cannot be
		// judged alone: the error names the array, never a guessed item.
		{"undecidable item", `{"$defs": {"src": {"properties": {"path": {"pattern": "^src/"}}},
			"d": {"anyOf": [{"$ref": "#/$defs/src"}]}},
			"properties": {"diffs": {"items": {"$ref": "#/$defs/d"}}}}`,
			`diffs: schema: anyOf: did not validate against any of`},
		{"false", `false`, `plan: schema: not: validated against`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := CompileSchema([]byte(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			err = Validate(schemaPlan(), s)
			if CodeOf(err) != CodeSchema {
				t.Fatalf("got %v, want a %s error", err, CodeSchema)
			}
			got := err.Error()
			if got != tt.want && !(strings.HasSuffix(tt.want, "any of") || strings.HasSuffix(tt.want, "validated against")) || !strings.HasPrefix(got, tt.want) {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
			if strings.Contains(got, "\n") {
				t.Fatalf("the message spans lines: %q", got)
			}
		})
	}
}

func TestValidatePasses(t *testing.T) {
	s, err := CompileSchema([]byte(`{"$defs": {"d": {"properties": {"path": {"pattern": "^(src|lib)/"}}, "required": ["path", "checksum"]}},
		"type": "object", "properties": {"diffs": {"minItems": 1, "items": {"$ref": "#/$defs/d"}},
		"post": {"properties": {"commands": {"items": {"properties": {"program": {"enum": ["go", "make"]}}}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(schemaPlan(), s); err != nil {
		t.Fatal(err)
	}
}

// A schema may refer to itself once it moves into the value: that
// recursion ends with the plan.
func TestValidateRecursiveSchema(t *testing.T) {
	s, err := CompileSchema([]byte(`{"$defs": {"v": {"anyOf": [{"type": ["string", "number", "boolean", "null"]},
		{"type": "array", "items": {"$ref": "#/$defs/v"}},
		{"type": "object", "additionalProperties": {"$ref": "#/$defs/v"}, "maxProperties": 3}]}},
		"$ref": "#/$defs/v"}`))
	if err != nil {
		t.Fatal(err)
	}
	err = Validate(schemaPlan(), s)
	// diffs[0] has three properties; the plan's top has two: all pass.
	if err != nil {
		t.Fatal(err)
	}
}

func TestValidateQuotesBounded(t *testing.T) {
	s, err := CompileSchema([]byte(`{"properties": {"diffs": {"items": {"properties": {"unified_diff": {"pattern": "^---"}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	p := schemaPlan()
	p.Diffs[1].UnifiedDiff = "+" + strings.Repeat("x'y", 1<<16)
	err = Validate(p, s)
	if CodeOf(err) != CodeSchema || len(err.Error()) > 400 {
		t.Fatalf("got %d bytes: %.400v", len(err.Error()), err)
	}
	if !strings.HasPrefix(err.Error(), `diffs[1].unified_diff: schema: '+x\'yx\'y`) || !strings.Contains(err.Error(), "…' does not match pattern '^---'") {
		t.Fatalf("got %v", err)
	}
}

func TestCompileSchemaRefuses(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"not json", `not json`, "the schema is not valid JSON"},
		{"bad type", `{"type": 12}`, "the schema is not a JSON Schema"},
		{"unknown type", `{"type": "strung"}`, "the schema does not compile"},
		{"bad pattern", `{"pattern": "("}`, "the schema does not compile"},
		{"remote ref", `{"$ref": "https://example.com/s.json"}`, "references outside the schema document are not loaded"},
		{"file ref", `{"$ref": "file:///etc/schema.json"}`, "references outside the schema document are not loaded"},
		{"dangling ref", `{"$ref": "#/$defs/nope"}`, "the schema does not compile"},
		{"draft-04", `{"$schema": "http://json-schema.org/draft-04/schema#"}`, `$schema "http://json-schema.org/draft-04/schema#" is not supported`},
		{"self reference", `{"$ref": "#"}`, "without end: root → root"},
		{"loop through anyOf", `{"$defs": {"d": {"anyOf": [{"$ref": "#/$defs/d"}]}}, "properties": {"diffs": {"items": {"$ref": "#/$defs/d"}}}}`,
			"without end: /$defs/d → /$defs/d/anyOf/0 → /$defs/d"},
		{"loop through an anchor", `{"$defs": {"a": {"$anchor": "x", "allOf": [{"not": {"$ref": "#x"}}]}}}`, "without end"},
		{"loop through an id", `{"$defs": {"a": {"$id": "urn:ctxkit:a", "if": {"$ref": "urn:ctxkit:a"}}}}`, "without end"},
		{"loop through dependent schemas", `{"dependentSchemas": {"diffs": {"$ref": "#"}}}`, "without end"},
		{"fan out", fanOutSchema(20), "applies more than 10000 schemas along one path"},
		// Each level fans out 2^7 times within the bound, but the levels
		// multiply along the plan's depth.
		{"fan out across levels", `{"$defs": {` + strings.Join(fanOutDefs("a", 7, `{"properties": {"diffs": {"$ref": "#/$defs/b0"}}}`), ",") + "," +
			strings.Join(fanOutDefs("b", 7, `{"type": "array"}`), ",") + `}, "$ref": "#/$defs/a0"}`, "applies more than 10000 schemas along one path"},
		{"too large", `{"description": "` + strings.Repeat("x", maxSchemaBytes) + `"}`, "more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CompileSchema([]byte(tt.doc))
			if CodeOf(err) != CodeSchema || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// fanOutDefs are n definitions named prefix0..prefixN-1, each applying
// the next twice, the last being leaf.
func fanOutDefs(prefix string, n int, leaf string) []string {
	var out []string
	for i := range n {
		if i == n-1 {
			out = append(out, fmt.Sprintf(`"%s%d": %s`, prefix, i, leaf))
			continue
		}
		out = append(out, fmt.Sprintf(`"%s%d": {"allOf": [{"$ref": "#/$defs/%s%d"}, {"$ref": "#/$defs/%s%d"}]}`, prefix, i, prefix, i+1, prefix, i+1))
	}
	return out
}

// fanOutSchema is n definitions, each applying the next twice: 2^n
// schemas for one value, without a loop.
func fanOutSchema(n int) string {
	var b strings.Builder
	b.WriteString(`{"$ref": "#/$defs/d0", "$defs": {`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		if i == n-1 {
			fmt.Fprintf(&b, `"d%d": {"type": "object"}`, i)
			continue
		}
		fmt.Fprintf(&b, `"d%d": {"allOf": [{"$ref": "#/$defs/d%d"}, {"$ref": "#/$defs/d%d"}]}`, i, i+1, i+1)
	}
	b.WriteString("}}")
	return b.String()
}

func TestCompileSchemaFanOutWithinBound(t *testing.T) {
	s, err := CompileSchema([]byte(fanOutSchema(10))) // 2^10 - 1 + ... ≈ 2,000 schemas
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(schemaPlan(), s); err != nil {
		t.Fatal(err)
	}
}

func FuzzValidateSchema(f *testing.F) {
	f.Add(`{"properties": {"diffs": {"items": {"properties": {"path": {"pattern": "^src/"}}}}}}`, "lib/a.go", "rm", "x")
	f.Add(`{"$defs": {"d": {"anyOf": [{"$ref": "#/$defs/d"}]}}, "properties": {"diffs": {"items": {"$ref": "#/$defs/d"}}}}`, "a", "go", "-v")
	f.Add(`{"properties": {"post": {"properties": {"commands": {"items": {"properties": {"args": {"items": {"pattern": "^-"}}}}}}}}}`, "a", "go", "v")
	f.Add(`{"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"diffs": {"items": [{"required": ["x"]}]}}}`, "a", "go", "")
	f.Add(`{"properties": {"diffs": {"items": {"additionalProperties": false, "propertyNames": {"maxLength": 4}}}}}`, "a", "go", "")
	f.Add(`{"unevaluatedProperties": false, "properties": {"diffs": {"unevaluatedItems": {"type": "string"}}}}`, "a", "go", "")
	f.Fuzz(func(t *testing.T, schema, path, program, arg string) {
		s, err := CompileSchema([]byte(schema))
		if err != nil {
			if CodeOf(err) != CodeSchema {
				t.Fatalf("compile: %v has no code", err)
			}
			return
		}
		p := &Plan{
			Diffs: []Diff{{Path: "src/a.go", Checksum: emptySum, UnifiedDiff: "x"}, {Path: path, Checksum: emptySum, UnifiedDiff: arg}},
			Post:  &Post{Commands: []Command{{Program: program, Args: []string{arg, path}}}},
		}
		err = Validate(p, s)
		if err == nil {
			return
		}
		if CodeOf(err) != CodeSchema {
			t.Fatalf("validate: %v has no code", err)
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || len(msg) > 2000 {
			t.Fatalf("message not one bounded line: %q", msg)
		}
	})
}
