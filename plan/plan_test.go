package plan

import (
	"errors"
	"strings"
	"testing"
)

const emptySum = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

func TestParse(t *testing.T) {
	ok := `{"diffs":[{"path":"src/main.go","checksum":"` + emptySum + `","unified_diff":"@@ -0,0 +1 @@\n+x\n"}],
		"post":{"commands":[{"program":"go","args":["vet","./..."],"timeout_ms":60000}]}}`
	p, err := Parse([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if p.Diffs[0].Path != "src/main.go" || len(p.Commands()) != 1 || p.Commands()[0].Args[1] != "./..." || p.Commands()[0].TimeoutMS != 60000 {
		t.Fatalf("%+v", p)
	}
	diff := func(path, sum string) string {
		return `{"diffs":[{"path":` + path + `,"checksum":"` + sum + `","unified_diff":"@@ -1 +1 @@\n-a\n+b\n"}]}`
	}
	tests := []struct {
		name, in string
		code     Code
		msg      string
	}{
		{"not JSON", `{"diffs":`, CodeSyntax, "the JSON ends early"},
		{"not an object", `[1]`, CodeSyntax, "must be a JSON object, not an array"},
		{"two values", `{"diffs":[]} {}`, CodeSyntax, "one JSON object"},
		{"unknown top field", `{"diffs":[],"extra":1}`, CodeField, `extra: unknown field "extra"`},
		{"unknown diff field", `{"diffs":[{"path":"a","patch":"x"}]}`, CodeField, `diffs[0].patch: unknown field "patch"`},
		{"unknown command field", `{"diffs":[],"post":{"commands":[{"program":"go","shell":true}]}}`, CodeField, `post.commands[0].shell: unknown field "shell"`},
		{"repeated field", `{"diffs":[],"diffs":[]}`, CodeField, `diffs: repeated field`},
		{"missing diffs", `{}`, CodeField, "diffs: is required"},
		{"missing checksum", `{"diffs":[{"path":"a","unified_diff":"x"}]}`, CodeField, "diffs[0].checksum: is required"},
		{"wrong kind", `{"diffs":[{"path":1}]}`, CodeField, "diffs[0].path: must be a string, not a number"},
		{"no diffs", `{"diffs":[]}`, CodeField, "at least one diff"},
		{"args not strings", `{"diffs":[],"post":{"commands":[{"program":"go","args":[1]}]}}`, CodeField, "post.commands[0].args[0]: must be a string"},
		{"fractional timeout", `{"diffs":[],"post":{"commands":[{"program":"go","timeout_ms":1.5}]}}`, CodeField, "timeout_ms: must be a whole number"},
		{"parent path", diff(`"../etc/passwd"`, emptySum), CodePathRejected, `diffs[0].path (../etc/passwd): must stay inside the root`},
		{"inner parent path", diff(`"a/../../b"`, emptySum), CodePathRejected, "must stay inside the root"},
		{"absolute path", diff(`"/etc/passwd"`, emptySum), CodePathRejected, "not absolute"},
		{"git dir", diff(`".git/hooks/pre-commit"`, emptySum), CodePathRejected, "inside .git"},
		{"nested git dir", diff(`"sub/.GIT/config"`, emptySum), CodePathRejected, "inside .git"},
		{"unclean path", diff(`"./a.go"`, emptySum), CodePathRejected, "clean form"},
		{"backslash", diff(`"a\\b.go"`, emptySum), CodePathRejected, "forward slashes"},
		{"short checksum", diff(`"a.go"`, "abc"), CodeField, "diffs[0].checksum: must be the 64 lowercase hex digits"},
		{"upper checksum", diff(`"a.go"`, strings.ToUpper(emptySum)), CodeField, "checksum"},
		{"NUL in diff", `{"diffs":[{"path":"a","checksum":"` + emptySum + `","unified_diff":"@@\n-a\u0000\n"}]}`, CodeNotText, "NUL"},
		{"same file twice", `{"diffs":[{"path":"a","checksum":"` + emptySum + `","unified_diff":"x"},{"path":"a","checksum":"` + emptySum + `","unified_diff":"y"}]}`, CodePathRejected, "diffs[1].path (a): the same file as diffs[0]"},
		{"timeout too long", `{"diffs":[{"path":"a","checksum":"` + emptySum + `","unified_diff":"x"}],"post":{"commands":[{"program":"go","timeout_ms":999999999}]}}`, CodeField, "post.commands[0].timeout_ms"},
		{"empty program", `{"diffs":[{"path":"a","checksum":"` + emptySum + `","unified_diff":"x"}],"post":{"commands":[{"program":" "}]}}`, CodeField, "post.commands[0].program: is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in))
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, want a *Error", err)
			}
			if pe.Code != tt.code || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("got %s %q, want %s containing %q", pe.Code, err, tt.code, tt.msg)
			}
		})
	}
}

func TestParseBounds(t *testing.T) {
	big := make([]byte, MaxPlanBytes+1)
	if _, err := Parse(big); CodeOf(err) != CodeTooLarge {
		t.Fatalf("got %v", err)
	}
	many := `{"diffs":[` + strings.Repeat(`{"path":"a","checksum":"x","unified_diff":"x"},`, MaxDiffs) + `{}]}`
	if _, err := Parse([]byte(many)); CodeOf(err) != CodeTooLarge {
		t.Fatalf("got %v", err)
	}
}

func TestExtract(t *testing.T) {
	plan := `{"diffs":[{"path":"a","checksum":"x","unified_diff":"y"}]}`
	tests := []struct{ name, reply, want string }{
		{"bare", plan, plan},
		{"json fence", "Here is the plan:\n```json\n" + plan + "\n```\nApply it.", plan},
		{"plain fence", "```\n" + plan + "\n```", plan},
		{"json fence wins", "```\n{\"other\":1}\n```\n```json\n" + plan + "\n```", plan},
		{"prose", "Sure! The plan is " + plan + " — tell me if it fails.", plan},
		{"brace in prose first", "Use {braces} carefully: " + plan, plan},
		{"tilde fence", "~~~json\n" + plan + "\n~~~", plan},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Extract(tt.reply)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("got %s", got)
			}
		})
	}
	if _, err := Extract("I cannot do that."); CodeOf(err) != CodeNoPlan {
		t.Fatalf("got %v", err)
	}
}

func TestValidate(t *testing.T) {
	schema := `{
		"type": "object",
		"properties": {
			"diffs": {"type": "array", "maxItems": 1, "items": {"properties": {"path": {"pattern": "^src/"}}}},
			"post": {"properties": {"commands": {"items": {"properties": {"program": {"enum": ["go", "make"]}}}}}}
		}
	}`
	s, err := CompileSchema([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	good := &Plan{Diffs: []Diff{{Path: "src/a.go", Checksum: emptySum, UnifiedDiff: "x"}}, Post: &Post{Commands: []Command{{Program: "go"}}}}
	if err := Validate(good, s); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		p    *Plan
		msg  string
	}{
		{"path", &Plan{Diffs: []Diff{{Path: "lib/a.go", Checksum: emptySum, UnifiedDiff: "x"}}}, "diffs[0].path: schema: "},
		{"program", &Plan{Diffs: good.Diffs, Post: &Post{Commands: []Command{{Program: "go"}, {Program: "rm"}}}}, "post.commands[1].program: schema: "},
		{"count", &Plan{Diffs: append(append([]Diff{}, good.Diffs...), good.Diffs...)}, "diffs: schema: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.p, s)
			if CodeOf(err) != CodeSchema || !strings.HasPrefix(err.Error(), tt.msg) {
				t.Fatalf("got %v, want %q", err, tt.msg)
			}
			t.Log(err)
		})
	}
	for _, bad := range []string{`{"type": 12}`, `not json`, `{"$ref": "https://example.com/s.json"}`, `{"$ref": "file:///etc/schema.json"}`} {
		if _, err := CompileSchema([]byte(bad)); CodeOf(err) != CodeSchema {
			t.Errorf("CompileSchema(%s): got %v", bad, err)
		}
	}
}
