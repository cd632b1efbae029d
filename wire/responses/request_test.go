package responses_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/responses"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

type requestCase struct {
	Name     string          `json:"name"`
	Body     json.RawMessage `json:"body"`
	BodyText string          `json:"body_text"` // a body that is not a JSON value of its own
	Error    string          `json:"error"`
}

func readRequestCases(t testing.TB) []requestCase {
	data, err := os.ReadFile("testdata/requests.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []requestCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

func (c requestCase) body() []byte {
	if c.BodyText != "" {
		return []byte(c.BodyText)
	}
	return c.Body
}

// TestDecodeRequest runs the cases of testdata/requests.json: a request
// that decodes is compared with its canonical form in
// testdata/requests.golden.json; one that must fail gives a *chat.Error
// whose text (path: message) holds the case's error.
func TestDecodeRequest(t *testing.T) {
	goldenFile := "testdata/requests.golden.json"
	want := map[string]json.RawMessage{}
	if !*update {
		data, err := os.ReadFile(goldenFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]json.RawMessage{}
	for _, c := range readRequestCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			req, err := responses.DecodeRequest(c.body())
			if c.Error != "" {
				var ce *chat.Error
				if !errors.As(err, &ce) {
					t.Fatalf("got %v, want a *chat.Error with %q", err, c.Error)
				}
				if !strings.Contains(err.Error(), c.Error) {
					t.Fatalf("error %q does not contain %q", err, c.Error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// The canonical JSON has no place for Format: it is beside it.
			out, err := json.Marshal(struct {
				Request chat.Request       `json:"request"`
				Format  *chat.OutputFormat `json:"format,omitempty"`
			}{req, req.Format})
			if err != nil {
				t.Fatal(err)
			}
			got[c.Name] = out
			if !*update {
				if d := wiretest.Diff(want[c.Name], out); d != "" {
					t.Errorf("canonical request differs: %s\n got: %s", d, out)
				}
			}
		})
	}
	if *update {
		data, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(goldenFile, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
