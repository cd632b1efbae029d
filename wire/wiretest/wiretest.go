// Package wiretest is the suite every wire converter runs: the
// conformance checks (Run) on a built-in corpus, the data-driven cases of
// the converter's own case file (RunCases), stream fixtures
// (RunStreamFixtures), the checks of a stream decoder's bounds on tool
// calls (CheckToolCallBounds) and the checks of a provider-table row
// (RunProvider).
package wiretest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
)

// Encoder converts a canonical request to a wire request, with the
// converter's options given as JSON (null or absent: the defaults).
type Encoder func(req chat.Request, options json.RawMessage) (any, []chat.Warning, error)

// Adapt makes an Encoder of a converter's EncodeRequest: the options JSON
// is decoded strictly into O (an unknown field is an error), and null or
// absent options are O's zero value (the defaults).
func Adapt[O any, R any](enc func(chat.Request, O) (R, []chat.Warning, error)) Encoder {
	return func(req chat.Request, options json.RawMessage) (any, []chat.Warning, error) {
		var opts O
		if err := decodeOptions(options, &opts); err != nil {
			return nil, nil, err
		}
		out, warns, err := enc(req, opts)
		if err != nil {
			return nil, warns, err
		}
		return out, warns, nil
	}
}

// decodeOptions decodes options JSON strictly into opts (an unknown field
// is an error); null or absent options leave opts as it is.
func decodeOptions(options json.RawMessage, opts any) error {
	options = bytes.TrimSpace(options)
	if len(options) == 0 || string(options) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(options))
	dec.DisallowUnknownFields()
	return dec.Decode(opts)
}

// Case is one entry of a case file: a JSON array of cases.
type Case struct {
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	Options json.RawMessage `json:"options,omitempty"`
	// Expected is the wire request, compared as JSON values (key order
	// and spacing do not matter; numbers compare by their text).
	Expected json.RawMessage `json:"expected,omitempty"`
	// Warnings, when present, lists one substring per expected warning
	// (matched against "path: message"), in order; [] means none.
	Warnings *[]string `json:"warnings,omitempty"`
	// Error, when set, is a substring of the error the input must give.
	Error string `json:"error,omitempty"`
}

// MinCases is how many cases a converter's case file must hold.
const MinCases = 15

// RunCases runs every case in the file at path. Besides the case's own
// expectations, a case that encodes must leave its input unchanged, and
// encoding it twice must give equal bytes and equal warnings.
func RunCases(t *testing.T, path string, enc Encoder) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases []Case
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cases); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(cases) < MinCases {
		t.Errorf("%s: %d cases; a converter needs at least %d", path, len(cases), MinCases)
	}
	seen := map[string]bool{}
	for i, c := range cases {
		if c.Name == "" || seen[c.Name] {
			t.Fatalf("%s: case %d: missing or repeated name %q", path, i, c.Name)
		}
		seen[c.Name] = true
		t.Run(c.Name, func(t *testing.T) {
			req, err := chat.DecodeRequest(c.Input)
			if err == nil {
				before, _ := json.Marshal(req)
				var got any
				var warns []chat.Warning
				got, warns, err = enc(req, c.Options)
				if err == nil {
					if c.Error != "" {
						t.Fatalf("want an error containing %q, got none", c.Error)
					}
					gotJSON, merr := json.Marshal(got)
					if merr != nil {
						t.Fatalf("encoding the wire request: %v", merr)
					}
					if diff := Diff(c.Expected, gotJSON); diff != "" {
						t.Errorf("wire request differs: %s\n got: %s\nwant: %s", diff, gotJSON, compact(c.Expected))
					}
					checkWarnings(t, c.Warnings, warns)
					checkStable(t, enc, req, c.Options, before, gotJSON, warns)
					return
				}
			}
			if c.Error == "" {
				t.Fatalf("unexpected error: %v", err)
			}
			if !strings.Contains(err.Error(), c.Error) {
				t.Fatalf("error %q does not contain %q", err, c.Error)
			}
		})
	}
}

// checkStable checks that encoding req left it as it was (before is its
// JSON beforehand) and that encoding it again gives the same wire request
// and warnings.
func checkStable(t *testing.T, enc Encoder, req chat.Request, options json.RawMessage, before, first []byte, warns []chat.Warning) {
	t.Helper()
	if after, _ := json.Marshal(req); !bytes.Equal(before, after) {
		t.Errorf("the input changed:\nbefore %s\nafter  %s", before, after)
	}
	again, warns2, err := enc(req, options)
	if err != nil {
		t.Fatalf("a second encoding failed: %v", err)
	}
	second, _ := json.Marshal(again)
	if !bytes.Equal(first, second) || !reflect.DeepEqual(warns, warns2) {
		t.Errorf("two encodings differ:\n%s\n%s\n%v\n%v", first, second, warns, warns2)
	}
}

func checkWarnings(t *testing.T, want *[]string, got []chat.Warning) {
	t.Helper()
	if want == nil {
		return
	}
	if len(got) != len(*want) {
		t.Errorf("%d warnings, want %d: %v", len(got), len(*want), got)
		return
	}
	for i, w := range *want {
		if !strings.Contains(got[i].String(), w) {
			t.Errorf("warning %d %q does not contain %q", i, got[i].String(), w)
		}
	}
}

func compact(v json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}

// Diff compares two JSON documents as values and describes the first
// difference, or returns "" when they are equal.
func Diff(want, got []byte) string {
	var w, g any
	if err := decode(want, &w); err != nil {
		return "expected JSON: " + err.Error()
	}
	if err := decode(got, &g); err != nil {
		return "output JSON: " + err.Error()
	}
	return diff("$", w, g)
}

func decode(data []byte, v *any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

func diff(path string, w, g any) string {
	switch wv := w.(type) {
	case map[string]any:
		gv, ok := g.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: want an object, got %s", path, short(g))
		}
		for k := range wv {
			if _, ok := gv[k]; !ok {
				return fmt.Sprintf("%s.%s: missing", path, k)
			}
		}
		for k := range gv {
			if _, ok := wv[k]; !ok {
				return fmt.Sprintf("%s.%s: unexpected %s", path, k, short(gv[k]))
			}
		}
		for k := range wv {
			if d := diff(path+"."+k, wv[k], gv[k]); d != "" {
				return d
			}
		}
		return ""
	case []any:
		gv, ok := g.([]any)
		if !ok {
			return fmt.Sprintf("%s: want an array, got %s", path, short(g))
		}
		if len(wv) != len(gv) {
			return fmt.Sprintf("%s: %d elements, want %d", path, len(gv), len(wv))
		}
		for i := range wv {
			if d := diff(fmt.Sprintf("%s[%d]", path, i), wv[i], gv[i]); d != "" {
				return d
			}
		}
		return ""
	default:
		if !reflect.DeepEqual(w, g) {
			return fmt.Sprintf("%s: got %s, want %s", path, short(g), short(w))
		}
		return ""
	}
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}

// Run checks enc on a built-in corpus of requests that use every block
// type in every place it may appear: for every piece of content (each
// carries a unique marker) the wire request carries the marker, or a
// warning names the place it was (or a place enclosing it); encoding twice
// gives equal bytes; the input request is not changed.
func Run(t *testing.T, enc Encoder) {
	t.Helper()
	for _, c := range corpus() {
		t.Run(c.name, func(t *testing.T) {
			req, err := chat.DecodeRequest([]byte(c.json))
			if err != nil {
				t.Fatalf("corpus request: %v", err)
			}
			before, _ := json.Marshal(req)
			out, warns, err := enc(req, nil)
			if err != nil {
				t.Fatalf("a valid request was refused: %v", err)
			}
			after, _ := json.Marshal(req)
			if !bytes.Equal(before, after) {
				t.Fatalf("the converter changed its input:\nbefore %s\nafter  %s", before, after)
			}
			first, err := json.Marshal(out)
			if err != nil {
				t.Fatalf("encoding the wire request: %v", err)
			}
			out2, warns2, err := enc(req, nil)
			if err != nil {
				t.Fatal(err)
			}
			second, _ := json.Marshal(out2)
			if !bytes.Equal(first, second) || !reflect.DeepEqual(warns, warns2) {
				t.Fatalf("two encodings differ:\n%s\n%s\n%v\n%v", first, second, warns, warns2)
			}
			for _, m := range c.markers {
				if bytes.Contains(first, []byte(m.marker)) {
					continue
				}
				if !warned(warns, m.path) {
					t.Errorf("%s (%s) is not in the wire request and no warning names %s; warnings: %v\nwire: %s", m.marker, m.what, m.path, warns, first)
				}
			}
		})
	}
}

// warned reports whether a warning names path, a place enclosing it, or a
// place inside it (an image inside a tool result).
func warned(warns []chat.Warning, path string) bool {
	for _, w := range warns {
		if w.Path != "" && (within(path, w.Path) || within(w.Path, path)) {
			return true
		}
	}
	return false
}

// within reports whether path is inner or inside it.
func within(path, inner string) bool {
	return path == inner || (strings.HasPrefix(path, inner) && (path[len(inner)] == '.' || path[len(inner)] == '['))
}

type marker struct{ marker, path, what string }

type corpusCase struct {
	name    string
	json    string
	markers []marker
}

// b64 is the base64 of s: an image or document payload that is its own marker.
func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func corpus() []corpusCase {
	img1, img2, img3, doc1 := b64("mkimg1-bytes"), b64("mkimg2-bytes"), b64("mkimg3-bytes"), b64("mkdoc1-bytes")
	return []corpusCase{
		{
			name: "strings",
			json: `{"model":"m","system":"mksys1","max_tokens":100,"messages":[
				{"role":"user","content":"mkstr1"},
				{"role":"assistant","content":"mkstr2"},
				{"role":"user","content":"mkstr3"}]}`,
			markers: []marker{{"mksys1", "system", "system string"}, {"mkstr1", "messages[0]", "user string"},
				{"mkstr2", "messages[1]", "assistant string"}, {"mkstr3", "messages[2]", "user string"}},
		},
		{
			name: "blocks and media",
			json: `{"model":"m","system":[{"type":"text","text":"mksys2"},{"type":"text","text":"mksys3","cache_control":{"type":"ephemeral"}}],
				"messages":[
				{"role":"user","content":[{"type":"text","text":"mktxt1"},
					{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + img1 + `"}},
					{"type":"image","source":{"type":"url","url":"https://images.invalid/mkurl1.png"}},
					{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"` + doc1 + `"},"title":"mkdoctitle"},
					{"type":"document","source":{"type":"text","media_type":"text/plain","data":"mkdoctext1"}},
					{"type":"text","text":"mktxt2","cache_control":{"type":"ephemeral"}}]},
				{"role":"assistant","content":[{"type":"text","text":"mktxt3"}]}]}`,
			markers: []marker{{"mksys2", "system", "system block"}, {"mksys3", "system", "system block"},
				{"mktxt1", "messages[0].content[0]", "text"}, {img1, "messages[0].content[1]", "base64 image"},
				{"mkurl1", "messages[0].content[2]", "url image"}, {doc1, "messages[0].content[3]", "pdf document"},
				{"mkdoctext1", "messages[0].content[4]", "text document"}, {"mktxt2", "messages[0].content[5]", "text"},
				{"mktxt3", "messages[1].content[0]", "assistant text"}},
		},
		{
			name: "tools",
			json: `{"model":"m","max_tokens":2048,
				"tools":[{"name":"search","description":"mktooldesc1","input_schema":{"type":"object","properties":{"q":{"type":"string"}}}},
					{"name":"fetch","description":"mktooldesc2","input_schema":{"type":"object"}}],
				"tool_choice":{"type":"auto"},
				"messages":[
				{"role":"user","content":"mkq1"},
				{"role":"assistant","content":[{"type":"text","text":"mkpre1"},
					{"type":"tool_use","id":"toolu_01A","name":"search","input":{"q":"mkin1"}},
					{"type":"tool_use","id":"toolu_01B","name":"fetch","input":{"url":"mkin2"}}]},
				{"role":"user","content":[
					{"type":"tool_result","tool_use_id":"toolu_01A","content":"mkres1"},
					{"type":"tool_result","tool_use_id":"toolu_01B","content":[{"type":"text","text":"mkres2"},
						{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"` + img2 + `"}}]},
					{"type":"text","text":"mkafter1"}]},
				{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01C","name":"search","input":{"q":"mkin3"}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01C","content":"mkres3","is_error":true}]}]}`,
			markers: []marker{{"mktooldesc1", "tools[0]", "tool"}, {"mktooldesc2", "tools[1]", "tool"},
				{"mkq1", "messages[0]", "user"}, {"mkpre1", "messages[1].content[0]", "text"},
				{"mkin1", "messages[1].content[1]", "tool input"}, {"mkin2", "messages[1].content[2]", "tool input"},
				{"mkres1", "messages[2].content[0]", "tool result"}, {"mkres2", "messages[2].content[1]", "tool result text"},
				{img2, "messages[2].content[1]", "tool result image"}, {"mkafter1", "messages[2].content[2]", "text after results"},
				{"mkin3", "messages[3].content[0]", "tool input"}, {"mkres3", "messages[4].content[0]", "error result"}},
		},
		{
			name: "reasoning",
			json: `{"model":"m","max_tokens":4096,"thinking":{"type":"enabled","budget_tokens":2048},"messages":[
				{"role":"user","content":"mkq2"},
				{"role":"assistant","content":[{"type":"thinking","thinking":"mkth1","signature":"mksig1"},
					{"type":"redacted_thinking","data":"mkred1"},
					{"type":"reasoning","text":"mkrs1"},
					{"type":"thought_signature","signature":"mkts1"},
					{"type":"text","text":"mkans1"}],
				 "reasoning_details":[{"type":"reasoning.text","text":"mkrd1","format":"unknown","index":0}]},
				{"role":"user","content":[{"type":"text","text":"mkq3"},
					{"type":"image","source":{"type":"base64","media_type":"image/webp","data":"` + img3 + `"}}]},
				{"role":"assistant","content":[{"type":"thinking","thinking":"mkth2","signature":"mksig2"},
					{"type":"tool_use","id":"call_1","name":"search","input":{"q":"mkin4"}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":[{"type":"text","text":"mkres4"}]}]}]}`,
			markers: []marker{{"mkq2", "messages[0]", "user"}, {"mkth1", "messages[1].content[0]", "thinking"},
				{"mksig1", "messages[1].content[0]", "thinking signature"}, {"mkred1", "messages[1].content[1]", "redacted thinking"},
				{"mkrs1", "messages[1].content[2]", "reasoning"}, {"mkts1", "messages[1].content[3]", "thought signature"},
				{"mkans1", "messages[1].content[4]", "text"}, {"mkrd1", "messages[1].reasoning_details", "reasoning details"},
				{"mkq3", "messages[2].content[0]", "text"}, {img3, "messages[2].content[1]", "image"},
				{"mkth2", "messages[3].content[0]", "thinking"}, {"mkin4", "messages[3].content[1]", "tool input"},
				{"mkres4", "messages[4].content[0]", "tool result"}},
		},
		{
			name: "unknown and empty",
			json: `{"model":"m","messages":[
				{"role":"user","content":[{"type":"text","text":""},{"type":"text","text":"mkq4"}]},
				{"role":"assistant","content":[{"type":"server_tool_use","id":"srv_1","name":"web_search","input":{"query":"mkunk1"}},
					{"type":"text","text":"mkans2"}]},
				{"role":"user","content":[{"type":"search_result","source":"mkunk2","title":"t","content":[{"type":"text","text":"x"}]},
					{"type":"text","text":"mkq5"}]},
				{"role":"user","content":[]}]}`,
			markers: []marker{{"mkq4", "messages[0].content[1]", "text"}, {"mkunk1", "messages[1].content[0]", "unknown block"},
				{"mkans2", "messages[1].content[1]", "text"}, {"mkunk2", "messages[2].content[0]", "unknown block"},
				{"mkq5", "messages[2].content[1]", "text"}},
		},
	}
}
