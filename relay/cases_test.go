package relay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/canonjson"
	"github.com/ctxkit/ctxkit/relay"
)

// tableCase is one row of testdata/cases.json: a pipeline run on a relay
// context, and what must come out.
type tableCase struct {
	Name     string          `json:"name"`
	Pipeline json.RawMessage `json:"pipeline"` // an object, or a string holding the file's text (JSON or YAML)
	Context  json.RawMessage `json:"context"`  // an object, or a string holding the raw text

	WantIDs     []string          `json:"want_ids"`     // the relayed prompts' IDs, in order
	WantPrompts json.RawMessage   `json:"want_prompts"` // the relayed prompts (compared as JSON)
	WantContent map[string]string `json:"want_content"` // content by ID
	WantNotes   []string          `json:"want_notes"`   // the last step's notes
	WantSystem  *string           `json:"want_system"`  // the assembled system prompt ("" for none)
	WantUser    *string           `json:"want_user"`    // the assembled user message ("" for none)
	ErrorCode   relay.Code        `json:"error_code"`   // the expected *relay.Error's code
	Error       string            `json:"error"`        // a substring of the expected error
}

func loadCases(t testing.TB) []tableCase {
	data, err := os.ReadFile("testdata/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []tableCase
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cases); err != nil {
		t.Fatalf("testdata/cases.json: %v", err)
	}
	return cases
}

// text is a case's raw field: the string's content when it is a string.
func text(raw json.RawMessage) []byte {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []byte(s)
	}
	return raw
}

func TestCases(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range loadCases(t) {
		if seen[c.Name] {
			t.Fatalf("duplicate case name %q", c.Name)
		}
		seen[c.Name] = true
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			prompts, trace, err := run(c)
			if c.Error != "" || c.ErrorCode != "" {
				if err == nil {
					t.Fatalf("no error; want %s %q", c.ErrorCode, c.Error)
				}
				var re *relay.Error
				if !errors.As(err, &re) {
					t.Fatalf("error %v is %T, not *relay.Error", err, err)
				}
				if re.Code != c.ErrorCode || !strings.Contains(err.Error(), c.Error) {
					t.Fatalf("error %s %q; want %s containing %q", re.Code, err, c.ErrorCode, c.Error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.WantIDs != nil {
				ids := []string{}
				for _, p := range prompts {
					ids = append(ids, p.ID)
				}
				if strings.Join(ids, " ") != strings.Join(c.WantIDs, " ") {
					t.Errorf("ids %q, want %q", ids, c.WantIDs)
				}
			}
			if c.WantPrompts != nil {
				got, _ := canonjson.Marshal(prompts)
				var a, b any
				json.Unmarshal(got, &a)
				json.Unmarshal(c.WantPrompts, &b)
				ga, _ := json.Marshal(a)
				gb, _ := json.Marshal(b)
				if !bytes.Equal(ga, gb) {
					t.Errorf("prompts\n%s\nwant\n%s", ga, gb)
				}
			}
			for id, want := range c.WantContent {
				found := false
				for _, p := range prompts {
					if p.ID == id {
						found = true
						if p.Content != want {
							t.Errorf("%s: content %q, want %q", id, p.Content, want)
						}
					}
				}
				if !found {
					t.Errorf("no prompt %s", id)
				}
			}
			if c.WantNotes != nil {
				last := trace.Steps[len(trace.Steps)-1]
				if strings.Join(last.Notes, "\n") != strings.Join(c.WantNotes, "\n") {
					t.Errorf("notes %q, want %q", last.Notes, c.WantNotes)
				}
			}
			req := relay.Assemble(prompts)
			if c.WantSystem != nil {
				got := ""
				if req.System != nil {
					got = req.System.PlainText("")
				}
				if got != *c.WantSystem {
					t.Errorf("system\n%q\nwant\n%q", got, *c.WantSystem)
				}
			}
			if c.WantUser != nil {
				got := ""
				if len(req.Messages) > 0 {
					got = req.Messages[0].Content.PlainText("")
				}
				if got != *c.WantUser {
					t.Errorf("user\n%q\nwant\n%q", got, *c.WantUser)
				}
				if len(req.Messages) > 1 {
					t.Errorf("%d messages, want at most one", len(req.Messages))
				}
			}
		})
	}
}

func run(c tableCase) ([]relay.Prompt, *relay.Trace, error) {
	p, err := relay.ParsePipeline(bytes.NewReader(text(c.Pipeline)))
	if err != nil {
		return nil, nil, err
	}
	rc, err := relay.DecodeContext(text(c.Context), relay.Limits{})
	if err != nil {
		return nil, nil, err
	}
	return p.Run(context.Background(), rc)
}

// The tour files (shown in the README) stay valid and do what it says.
func TestTourFiles(t *testing.T) {
	pf, err := os.Open("../examples/relay/pipeline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	p, err := relay.ParsePipeline(pf)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("../examples/relay/delegation.json")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := relay.DecodeContext(data, relay.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := p.Run(context.Background(), rc)
	if err != nil {
		t.Fatal(err)
	}
	req := relay.Assemble(out)
	sys := req.System.PlainText("")
	if !strings.HasPrefix(sys, "Delegated by: Orchestrator\n") || strings.Contains(sys, "House style") ||
		strings.Contains(sys, "sk-test") || !strings.Contains(sys, "[REDACTED:api_key]") ||
		req.Messages[0].Content.Text != "Check login.go for security bugs." {
		t.Fatalf("request %+v", req)
	}
}
