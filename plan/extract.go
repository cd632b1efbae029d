package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Extract pulls the plan's JSON text out of a model's reply: the body of
// the first markdown code fence that holds a JSON object (a "json" fence
// first), else the first JSON object in the prose. It only finds the
// text; Parse decodes it.
func Extract(reply string) ([]byte, error) {
	if len(reply) > MaxPlanBytes {
		return nil, &Error{Code: CodeTooLarge, Msg: fmt.Sprintf("the reply is %d bytes, more than %d", len(reply), MaxPlanBytes)}
	}
	fences := fencedBlocks(reply)
	for _, jsonOnly := range []bool{true, false} {
		for _, f := range fences {
			if jsonOnly != (f.lang == "json") {
				continue
			}
			body := strings.TrimSpace(f.body)
			if strings.HasPrefix(body, "{") && json.Valid([]byte(body)) {
				return []byte(body), nil
			}
		}
	}
	tries := 0
	for i := 0; i < len(reply) && tries < maxExtractTries; i++ {
		if reply[i] != '{' {
			continue
		}
		tries++
		dec := json.NewDecoder(strings.NewReader(reply[i:]))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == nil {
			return bytes.TrimSpace(raw), nil
		}
	}
	return nil, &Error{Code: CodeNoPlan, Msg: "the reply holds no JSON object: answer with the plan as one JSON object"}
}

type fence struct{ lang, body string }

// fencedBlocks finds the ``` (or ~~~) blocks of a markdown text.
func fencedBlocks(s string) []fence {
	var out []fence
	lines := strings.SplitAfter(s, "\n")
	for i := 0; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		marker := ""
		switch {
		case strings.HasPrefix(t, "```"):
			marker = "```"
		case strings.HasPrefix(t, "~~~"):
			marker = "~~~"
		default:
			continue
		}
		lang := strings.ToLower(strings.TrimSpace(strings.TrimLeft(t, marker[:1])))
		var body strings.Builder
		j := i + 1
		for ; j < len(lines); j++ {
			if strings.TrimSpace(lines[j]) == marker {
				break
			}
			body.WriteString(lines[j])
		}
		out = append(out, fence{lang: lang, body: body.String()})
		i = j
	}
	return out
}

// Schema is a compiled JSON Schema a plan must satisfy.
type Schema struct{ s *jsonschema.Schema }

// noLoader refuses every reference to a document outside the schema.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("the schema refers to %s: references outside the schema document are not loaded", url)
}

// CompileSchema compiles a JSON Schema document (draft 2020-12 unless it
// says otherwise). It loads nothing from the network or the file system:
// references must stay inside the document.
func CompileSchema(doc []byte) (*Schema, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, &Error{Code: CodeSchema, Msg: "the schema is not valid JSON", Err: err}
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	const url = "ctxkit:plan-schema.json"
	if err := c.AddResource(url, v); err != nil {
		return nil, &Error{Code: CodeSchema, Msg: "the schema", Err: err}
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, &Error{Code: CodeSchema, Msg: "the schema does not compile", Err: err}
	}
	return &Schema{s: s}, nil
}

// Validate checks p against s. The error names the plan's field at fault
// ("diffs[0].path: ...") and the schema's complaint.
func Validate(p *Plan, s *Schema) error {
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	err = s.s.Validate(v)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	// The first leaf of the basic output says what is wrong where.
	out := ve.BasicOutput()
	field, msg := "plan", "does not satisfy the schema"
	for _, u := range out.Errors {
		if u.Error == nil {
			continue
		}
		msg = u.Error.String()
		if loc := strings.Trim(u.InstanceLocation, "/"); loc != "" {
			field = location(strings.Split(loc, "/"))
		}
	}
	return &Error{Code: CodeSchema, Path: field, Msg: "schema: " + msg}
}

// location writes ["diffs","0","path"] as diffs[0].path.
func location(parts []string) string {
	var b strings.Builder
	for _, p := range parts {
		if p != "" && strings.Trim(p, "0123456789") == "" && b.Len() > 0 {
			fmt.Fprintf(&b, "[%s]", p)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}
