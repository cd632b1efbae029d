package chat_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
)

func TestDecodeOutputFormat(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"hi"}]`
	for _, tc := range []struct {
		name, body string
		want       string // Format as JSON, "" for none
		extra      string // Extra["output_config"], "" for none
		errPath    string
	}{
		{name: "output_config.format", body: `{` + msgs + `,"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}}}`,
			want: `{"type":"json_schema","schema":{"type":"object"}}`},
		{name: "effort kept beside the format", body: `{` + msgs + `,"output_config":{"effort":"high","format":{"type":"json_schema","schema":{"type":"object"}}}}`,
			want: `{"type":"json_schema","schema":{"type":"object"}}`, extra: `{"effort":"high"}`},
		{name: "effort alone", body: `{` + msgs + `,"output_config":{"effort":"low"}}`, extra: `{"effort":"low"}`},
		{name: "legacy output_format", body: `{` + msgs + `,"output_format":{"type":"json_schema","schema":{"type":"object","properties":{"a":{"type":"string"}}}}}`,
			want: `{"type":"json_schema","schema":{"type":"object","properties":{"a":{"type":"string"}}}}`},
		{name: "json_object", body: `{` + msgs + `,"output_format":{"type":"json_object"}}`, want: `{"type":"json_object"}`},
		{name: "both forms", body: `{` + msgs + `,"output_format":{"type":"json_object"},"output_config":{"format":{"type":"json_object"}}}`, errPath: "output_format"},
		{name: "no schema", body: `{` + msgs + `,"output_config":{"format":{"type":"json_schema"}}}`, errPath: "output_config.format.schema"},
		{name: "schema not an object", body: `{` + msgs + `,"output_format":{"type":"json_schema","schema":[1]}}`, errPath: "output_format.schema"},
		{name: "bad type", body: `{` + msgs + `,"output_format":{"type":"xml"}}`, errPath: "output_format.type"},
		{name: "unknown member", body: `{` + msgs + `,"output_format":{"type":"json_object","mode":1}}`, errPath: "output_format.mode"},
		{name: "json_object with schema", body: `{` + msgs + `,"output_format":{"type":"json_object","schema":{}}}`, errPath: "output_format.schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := chat.DecodeRequest([]byte(tc.body))
			if tc.errPath != "" {
				var ce *chat.Error
				if !errors.As(err, &ce) || ce.Path != tc.errPath {
					t.Fatalf("err = %v, want one at %s", err, tc.errPath)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if req.Format != nil {
				b, _ := jsonMarshal(req.Format)
				got = b
			}
			if got != tc.want {
				t.Errorf("Format = %s, want %s", got, tc.want)
			}
			if string(req.Extra["output_config"]) != tc.extra {
				t.Errorf("Extra[output_config] = %s, want %s", req.Extra["output_config"], tc.extra)
			}
			// The canonical JSON writes the format back in output_config,
			// and reads back to the same request.
			out, err := req.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && !strings.Contains(string(out), `"format":`+tc.want) {
				t.Errorf("MarshalJSON = %s, want output_config.format %s", out, tc.want)
			}
			back, err := chat.DecodeRequest(out)
			if err != nil {
				t.Fatalf("%s: %v", out, err)
			}
			again, _ := back.MarshalJSON()
			if string(again) != string(out) {
				t.Errorf("round trip:\n%s\n%s", out, again)
			}
			c := req.Clone()
			if req.Format != nil && (c.Format == req.Format || string(c.Format.Schema) != string(req.Format.Schema)) {
				t.Errorf("Clone shares or changes the format")
			}
		})
	}
}

func jsonMarshal(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
