package wire_test

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/providers"
)

var update = flag.Bool("update", false, "rewrite testdata/fields.md")

// samples are values of the fields that ask for something (none is inert).
var samples = map[string]string{
	"n": `2`, "seed": `7`, "logprobs": `true`, "top_logprobs": `3`, "frequency_penalty": `0.5`, "presence_penalty": `-0.5`,
	"logit_bias": `{"50256":-100}`, "user": `"u-1"`, "safety_identifier": `"s-1"`, "prompt_cache_key": `"k"`,
	"prompt_cache_retention": `"24h"`, "metadata": `{"k":"v"}`, "store": `true`, "service_tier": `"flex"`,
	"prediction": `{"type":"content","content":"x"}`, "verbosity": `"low"`, "web_search_options": `{}`,
	"modalities": `["text","audio"]`, "audio": `{"voice":"alloy","format":"mp3"}`, "functions": `[{"name":"f"}]`,
	"function_call": `"auto"`, "top_k": `40`, "output_config": `{"effort":"low"}`, "cache_control": `{"type":"ephemeral"}`,
	"container": `"c-1"`, "mcp_servers": `[{"type":"url","url":"https://x","name":"x"}]`,
	"context_management": `{"edits":[]}`, "inference_geo": `"us"`, "truncation": `"auto"`, "background": `true`,
	"max_tool_calls": `3`, "include": `["message.output_text.logprobs"]`, "prompt": `{"id":"p"}`, "conversation": `"conv_1"`,
	"safetySettings": `[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}]`,
	"cachedContent":  `"cachedContents/1"`, "labels": `{"team":"a"}`, "serviceTier": `"flex"`,
	"reasoning": `{"effort":"none"}`, "text": `{"verbosity":"low"}`,
}

// inertSamples are values that ask for nothing beyond the default.
var inertSamples = map[string]string{
	"n": `1`, "logprobs": `false`, "top_logprobs": `0`, "modalities": `["text"]`, "truncation": `"disabled"`, "background": `false`,
	"text": `{"format":{"type":"json_object"}}`, "include": `["reasoning.encrypted_content"]`,
}

func baseRequest() chat.Request {
	return chat.Request{Model: "m", MaxTokens: 64, Messages: []chat.Message{{Role: chat.User, Content: chat.Str("hi")}}}
}

// TestFieldPolicyRows checks every row of the policy on every upstream:
// a refused field is a 400-worthy unsupported_field naming the field and
// the upstream; a dropped one is named in a warning and gone from the
// request; a carried or mapped one survives the check, and the upstream's
// encoder sends it (under its own name, or where the row says) without a
// warning about it.
func TestFieldPolicyRows(t *testing.T) {
	rows := wire.FieldRows()
	if len(rows) < 60 {
		t.Fatalf("%d rows: the table lost rows", len(rows))
	}
	for _, r := range rows {
		if r.Modelled {
			continue
		}
		sample, ok := samples[r.Field]
		if !ok {
			t.Errorf("%s.%s: no sample value", r.Dialect, r.Field)
			continue
		}
		for _, up := range wire.PolicyUpstreams {
			t.Run(r.Dialect+"/"+r.Field+"/"+up, func(t *testing.T) {
				req := baseRequest()
				req.Extra = map[string]json.RawMessage{r.Field: json.RawMessage(sample)}
				in := req.Extra
				h, _ := wire.FieldHandling(r.Dialect, r.Field, up)
				warns, err := wire.CheckFields(r.Dialect, &req, up)
				if _, ok := in[r.Field]; !ok {
					t.Fatal("CheckFields changed its input's Extra")
				}
				switch h.Action {
				case wire.Refused:
					var we *wire.Error
					if !errors.As(err, &we) || we.Code != wire.CodeUnsupportedField || we.Path != r.Field || !strings.Contains(we.Msg, up) {
						t.Fatalf("err %v, want unsupported_field at %s naming %s", err, r.Field, up)
					}
					return
				case wire.Dropped:
					if err != nil {
						t.Fatal(err)
					}
					if len(warns) != 1 || !strings.HasPrefix(warns[0], r.Field+": ") || !strings.Contains(warns[0], up) {
						t.Fatalf("warnings %q, want one naming %s and %s", warns, r.Field, up)
					}
					if _, ok := req.Extra[r.Field]; ok {
						t.Fatal("a dropped field is still in the request")
					}
					return
				}
				if err != nil || len(warns) > 0 {
					t.Fatalf("carried field: err %v, warnings %q", err, warns)
				}
				if r.Consumed && h.Action == wire.Mapped {
					if _, ok := req.Extra[r.Field]; ok {
						t.Fatal("a field the canonical request carries is still in Extra")
					}
					return
				}
				if _, ok := req.Extra[r.Field]; !ok {
					t.Fatal("a carried field is gone from the request")
				}
				p, ok := providers.Lookup(up)
				if !ok {
					t.Skipf("no %s row in the provider table", up)
				}
				body, _, encWarns, err := p.Encode(req, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, w := range encWarns {
					if w.Path == r.Field {
						t.Errorf("the encoder warns about a field the policy carries: %s", w)
					}
				}
				data, err := json.Marshal(body)
				if err != nil {
					t.Fatal(err)
				}
				name := r.Field
				if h.Action == wire.Mapped {
					name = h.How[strings.LastIndex(h.How, ".")+1:]
				}
				if !strings.Contains(string(data), `"`+name+`":`) {
					t.Errorf("%s is not sent as %s:\n%s", r.Field, name, data)
				}
			})
		}
		if v, ok := inertSamples[r.Field]; ok {
			for _, up := range wire.PolicyUpstreams {
				req := baseRequest()
				req.Extra = map[string]json.RawMessage{r.Field: json.RawMessage(v)}
				warns, err := wire.CheckFields(r.Dialect, &req, up)
				if err != nil || len(warns) > 0 || len(req.Extra) > 0 {
					t.Errorf("%s %s=%s to %s: err %v, warnings %q, extra %v; an inert value passes without a word", r.Dialect, r.Field, v, up, err, warns, req.Extra)
				}
			}
		}
	}
}

func TestUnknownFieldRefused(t *testing.T) {
	for _, tc := range []struct {
		dialect, upstream string
		refused           bool
	}{
		{"openai", "openai", true},
		{"openai", "anthropic", true},
		{"anthropic", "openai", true},
		{"anthropic", "gemini", true},
		{"anthropic", "anthropic", false}, // the Anthropic encoder sends Extra as it came
		{"gemini", "gemini", true},
	} {
		req := baseRequest()
		req.Extra = map[string]json.RawMessage{"frobnicate": json.RawMessage(`1`)}
		_, err := wire.CheckFields(tc.dialect, &req, tc.upstream)
		var we *wire.Error
		if got := errors.As(err, &we) && we.Path == "frobnicate"; got != tc.refused {
			t.Errorf("%s to %s: err %v, refused %v", tc.dialect, tc.upstream, err, tc.refused)
		}
	}
}

func TestAnthropicMetadataDropped(t *testing.T) {
	for _, up := range wire.PolicyUpstreams {
		req := baseRequest()
		req.Metadata = json.RawMessage(`{"user_id":"u"}`)
		warns, err := wire.CheckFields("anthropic", &req, up)
		if err != nil {
			t.Fatal(err)
		}
		if up == "anthropic" {
			if len(warns) != 0 || req.Metadata == nil {
				t.Errorf("anthropic: metadata not carried (%q)", warns)
			}
			continue
		}
		if len(warns) != 1 || !strings.HasPrefix(warns[0], "metadata: not sent to "+up) || req.Metadata != nil {
			t.Errorf("%s: warnings %q, metadata %s", up, warns, req.Metadata)
		}
	}
}

func TestFormatChecks(t *testing.T) {
	object := json.RawMessage(`{"type":"object"}`)
	array := json.RawMessage(`{"type":"array","items":{"type":"string"}}`)
	for _, tc := range []struct {
		dialect, upstream string
		format            chat.OutputFormat
		errPath           string
	}{
		{"openai", "deepseek", chat.OutputFormat{Type: "json_schema", Schema: object}, "response_format"},
		{"anthropic", "deepseek", chat.OutputFormat{Type: "json_schema", Schema: object}, "output_config.format"},
		{"openai", "deepseek", chat.OutputFormat{Type: "json_object"}, ""},
		{"openai", "bedrock", chat.OutputFormat{Type: "json_schema", Schema: array}, "response_format"},
		{"openai", "bedrock", chat.OutputFormat{Type: "json_schema", Schema: object}, ""},
		{"openai", "anthropic", chat.OutputFormat{Type: "json_schema", Schema: array}, ""}, // native: any schema
		{"openai", "gemini", chat.OutputFormat{Type: "json_schema", Schema: array}, ""},
		{"openai", "vscodelm", chat.OutputFormat{Type: "json_object"}, "response_format"},
	} {
		req := baseRequest()
		f := tc.format
		req.Format = &f
		_, err := wire.CheckFields(tc.dialect, &req, tc.upstream)
		var we *wire.Error
		switch {
		case tc.errPath == "" && err != nil:
			t.Errorf("%s to %s, %s: %v", tc.dialect, tc.upstream, f.Type, err)
		case tc.errPath != "" && (!errors.As(err, &we) || we.Code != wire.CodeUnsupportedField || we.Path != tc.errPath):
			t.Errorf("%s to %s, %s: err %v, want unsupported_field at %s", tc.dialect, tc.upstream, f.Type, err, tc.errPath)
		}
	}
}

func TestSplitCarried(t *testing.T) {
	extra := map[string]json.RawMessage{"seed": json.RawMessage(`1`), "top_k": json.RawMessage(`2`), "user": json.RawMessage(`"u"`)}
	carried, rest := wire.SplitCarried("openai", extra)
	if len(carried) != 2 || carried["seed"] == nil || carried["user"] == nil || len(rest) != 1 || rest["top_k"] == nil {
		t.Errorf("carried %v, rest %v", carried, rest)
	}
	if c, r := wire.SplitCarried("openai", nil); c != nil || r != nil {
		t.Errorf("nil Extra: %v %v", c, r)
	}
}

func TestAnthropicBetaHeaders(t *testing.T) {
	h := http.Header{}
	h.Set("anthropic-version", "2023-06-01")
	h.Add("anthropic-beta", "interleaved-thinking-2025-05-14, fine-grained-tool-streaming-2025-05-14")
	h.Add("anthropic-beta", "output-128k-2025-02-19")
	set, warns, err := wire.AnthropicBetaHeaders(h, "anthropic")
	if err != nil || len(warns) != 0 {
		t.Fatal(err, warns)
	}
	if got := set.Get("anthropic-beta"); got != "interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14,output-128k-2025-02-19" {
		t.Errorf("anthropic-beta %q", got)
	}
	if set.Get("anthropic-version") != "2023-06-01" {
		t.Errorf("anthropic-version %q", set.Get("anthropic-version"))
	}
	if set, _, _ := wire.AnthropicBetaHeaders(http.Header{}, "anthropic"); set != nil {
		t.Errorf("no client headers: %v", set)
	}

	set, warns, err = wire.AnthropicBetaHeaders(h, "openai")
	if err != nil || set != nil {
		t.Fatal(err, set)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "output-128k-2025-02-19") || !strings.Contains(warns[0], "openai") {
		t.Errorf("warnings %q, want one for output-128k naming openai", warns)
	}

	h.Set("anthropic-beta", "structured-outputs-2025-11-13,files-api-2025-04-14")
	_, _, err = wire.AnthropicBetaHeaders(h, "gemini")
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeUnsupportedField || we.Path != "anthropic-beta" || !strings.Contains(we.Msg, "files-api") {
		t.Errorf("files-api to gemini: %v", err)
	}
	h.Set("anthropic-beta", "structured-outputs-2025-11-13")
	if _, warns, err := wire.AnthropicBetaHeaders(h, "bedrock"); err != nil || len(warns) != 0 {
		t.Errorf("structured-outputs is handled: %v %q", err, warns)
	}
}

func TestWarningsHeader(t *testing.T) {
	got := wire.WarningsHeader([]string{"user: not sent to anthropic (advisory)", "x\r\ny: é"})
	if got != "user: not sent to anthropic (advisory); x??y: ?" {
		t.Errorf("%q", got)
	}
}

// TestWarningsHeaderBounded: a long conversation from another provider
// makes a warning per dropped block; the header stays small enough for
// any HTTP client (Node's refuses 16 KiB of headers), lists what fits and
// counts the rest.
func TestWarningsHeaderBounded(t *testing.T) {
	var warns []string
	for i := range 1000 {
		warns = append(warns, fmt.Sprintf("messages[%d].content[0]: openai cannot carry thinking blocks: dropped", i))
	}
	got := wire.WarningsHeader(warns)
	if len(got) > 4<<10 {
		t.Fatalf("%d bytes", len(got))
	}
	listed := strings.Count(got, "thinking blocks: dropped")
	if listed == 0 || !strings.HasSuffix(got, fmt.Sprintf("; and %d more", len(warns)-listed)) {
		t.Fatalf("listed %d, header ends %q", listed, got[max(0, len(got)-40):])
	}
	// One warning too long to list is counted.
	if got := wire.WarningsHeader([]string{strings.Repeat("x", 5000)}); got != "warnings: 1, too long to list" {
		t.Fatalf("%q", got)
	}
	// Every length up to the bound: never over it, never a count that
	// does not add up.
	for n := 1; n < 200; n++ {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = strings.Repeat("w", 10+i%90)
		}
		got := wire.WarningsHeader(ws)
		if len(got) > 4<<10 {
			t.Fatalf("%d warnings: %d bytes", n, len(got))
		}
		listed := 0
		if got != "" {
			listed = strings.Count(got, "; ") + 1
		}
		var more int
		if i := strings.LastIndex(got, "; and "); i >= 0 {
			fmt.Sscanf(got[i:], "; and %d more", &more)
			listed--
		}
		if listed+more != n {
			t.Fatalf("%d warnings: %d listed, %d counted", n, listed, more)
		}
	}
}

// TestFieldTable holds testdata/fields.md (-update rewrites it) and the
// README's table, between its field-policy markers, to the code's table.
func TestFieldTable(t *testing.T) {
	table := wire.FieldTable()
	for _, r := range wire.FieldRows() {
		if !strings.Contains(table, "| `"+r.Field+"` |") {
			t.Errorf("%s.%s is not in the table", r.Dialect, r.Field)
		}
	}
	if *update {
		if err := os.WriteFile("testdata/fields.md", []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile("testdata/fields.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(golden) != table {
		t.Errorf("testdata/fields.md is not the table: run go test ./wire/ -run FieldTable -update")
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- field-policy:begin -->\n", "<!-- field-policy:end -->"
	i, j := strings.Index(string(readme), begin), strings.Index(string(readme), end)
	if i < 0 || j < i {
		t.Skip("the README has no field-policy table yet")
	}
	if got := string(readme[i+len(begin) : j]); got != table {
		t.Errorf("the README's field-policy table is not wire.FieldTable(): paste testdata/fields.md between the markers")
	}
}

// A modelled field a decoder also keeps in Extra (stream_options, for the
// gateway's reply) never reaches an upstream, and the caller's map keeps it.
func TestModelledFieldInExtraRemoved(t *testing.T) {
	for _, up := range wire.PolicyUpstreams {
		req := baseRequest()
		req.Extra = map[string]json.RawMessage{"stream_options": json.RawMessage(`{"include_usage":true}`)}
		kept := req.Extra
		warns, err := wire.CheckFields("openai", &req, up)
		if err != nil || len(warns) > 0 || req.Extra != nil || kept["stream_options"] == nil {
			t.Errorf("%s: err %v, warnings %q, Extra %v", up, err, warns, req.Extra)
		}
	}
}
