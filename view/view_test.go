package view_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/view"
)

// The two cases of the original design, verbatim.
func TestOriginalDesignCases(t *testing.T) {
	t.Run("template length", func(t *testing.T) {
		v, err := view.Compile([]byte(`{"transform":{"summary":{"type":"template","template":"{{context.items.length}} users"}},"mode":"replace"}`))
		if err != nil {
			t.Fatal(err)
		}
		got, res, err := v.ApplyJSON(context.Background(), []byte(`{"items":[{"name":"a"},{"name":"b"}]}`), view.Record{})
		if err != nil || res.Status != view.StatusOK {
			t.Fatalf("err=%v res=%+v", err, res)
		}
		if string(got) != `{"summary":"2 users"}` {
			t.Fatalf("got %s", got)
		}
	})
	t.Run("extract names", func(t *testing.T) {
		v, err := view.Compile([]byte(`{"transform":{"tools":{"type":"extract","value":"$.tools[*].name"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		got, res, err := v.ApplyJSON(context.Background(), []byte(`{"tools":[{"name":"openrouter"},{"name":"file-storage"}]}`), view.Record{})
		if err != nil || res.Status != view.StatusOK {
			t.Fatalf("err=%v res=%+v", err, res)
		}
		if string(got) != `{"tools":["openrouter","file-storage"]}` {
			t.Fatalf("got %s", got)
		}
	})
}

// tableCase is one row of testdata/cases.json.
type tableCase struct {
	Name        string          `json:"name"`
	Hints       json.RawMessage `json:"hints"`      // a hints object, or a string holding raw hints text
	Context     json.RawMessage `json:"context"`    // the input context
	Record      *recordFields   `json:"record"`     // optional record fields
	Want        json.RawMessage `json:"want"`       // the expected view (compared as JSON)
	Status      string          `json:"status"`     // expected status; default OK
	ErrorCode   view.Code       `json:"error_code"` // expected run-time or compile-time error code
	ErrorPath   string          `json:"error_path"` // expected error path
	Error       string          `json:"error"`      // substring of the expected error message
	CompileFail bool            `json:"compile_fail"`
}

type recordFields struct {
	ID          string   `json:"id"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	SchemaName  string   `json:"schema_name"`
	Version     int64    `json:"version"`
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

func hintsBytes(raw json.RawMessage) []byte {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []byte(s)
	}
	return raw
}

func TestCases(t *testing.T) {
	cases := loadCases(t)
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.Name] {
			t.Fatalf("duplicate case name %q", c.Name)
		}
		seen[c.Name] = true
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			// A generous deadline: these cases test results, not timing, and
			// must not flake on a loaded machine. Runaway rules still stop.
			v, err := view.CompileWith(hintsBytes(c.Hints), view.Options{RuleTimeout: time.Second})
			if c.CompileFail {
				if err == nil {
					t.Fatalf("compiled; want an error containing %q", c.Error)
				}
				checkErr(t, err, c)
				return
			}
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			rec := view.Record{}
			if c.Record != nil {
				rec = view.Record{ID: c.Record.ID, Title: c.Record.Title, Description: c.Record.Description,
					Tags: c.Record.Tags, SchemaName: c.Record.SchemaName, Version: c.Record.Version}
			}
			in := c.Context
			if in == nil {
				in = json.RawMessage(`{}`)
			}
			got, res, err := v.ApplyJSON(context.Background(), in, rec)
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			wantStatus := view.Status(c.Status)
			if wantStatus == "" {
				wantStatus = view.StatusOK
			}
			if res.Status != wantStatus {
				t.Fatalf("status %s (err %v), want %s", res.Status, res.Err, wantStatus)
			}
			if wantStatus == view.StatusFallback {
				if res.Err == nil {
					t.Fatal("FALLBACK without an error")
				}
				checkErr(t, res.Err, c)
			} else if res.Err != nil {
				t.Fatalf("OK with an error: %v", res.Err)
			}
			if !jsonEqual(t, got, c.Want) {
				t.Fatalf("view\n got %s\nwant %s", got, c.Want)
			}
		})
	}
}

func checkErr(t *testing.T, err error, c tableCase) {
	t.Helper()
	var ve *view.Error
	if !errors.As(err, &ve) {
		t.Fatalf("error %v (%T) is not a *view.Error", err, err)
	}
	if c.ErrorCode != "" && ve.Code != c.ErrorCode {
		t.Errorf("code %q, want %q (%v)", ve.Code, c.ErrorCode, err)
	}
	if c.ErrorPath != "" && ve.Path != c.ErrorPath {
		t.Errorf("path %q, want %q (%v)", ve.Path, c.ErrorPath, err)
	}
	if !strings.Contains(err.Error(), c.Error) {
		t.Errorf("error %q does not contain %q", err, c.Error)
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	x, err := view.DecodeJSON(a)
	if err != nil {
		t.Fatalf("got invalid JSON %s: %v", a, err)
	}
	y, err := view.DecodeJSON(b)
	if err != nil {
		t.Fatalf("want invalid JSON %s: %v", b, err)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
