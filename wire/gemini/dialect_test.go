package gemini_test

import (
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/gemini"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

// requestCase is a case of testdata/dialect/requests.json: a request body
// (body, or raw bytes) on a path naming model, and either the canonical
// request it reads as (and its structured-output format) or the error.
type requestCase struct {
	Name      string          `json:"name"`
	Model     string          `json:"model"`
	Stream    bool            `json:"stream"`
	Query     string          `json:"query"`
	Body      json.RawMessage `json:"body"`
	Raw       string          `json:"raw"`
	Canonical json.RawMessage `json:"canonical"`
	Format    json.RawMessage `json:"format"`
	Error     *struct {
		Path string `json:"path"`
		Code string `json:"code"`
	} `json:"error"`
}

func loadRequestCases(t testing.TB) []requestCase {
	data, err := os.ReadFile("testdata/dialect/requests.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []requestCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

func (c *requestCase) body() []byte {
	if c.Raw != "" {
		return []byte(c.Raw)
	}
	return c.Body
}

func (c *requestCase) incoming(t testing.TB) wire.Incoming {
	q, err := url.ParseQuery(c.Query)
	if err != nil {
		t.Fatal(err)
	}
	return wire.Incoming{Model: c.Model, Stream: c.Stream, Query: q}
}

func TestDialectDecode(t *testing.T) {
	d := gemini.Dialect()
	for _, c := range loadRequestCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			req, err := d.Decode(c.body(), c.incoming(t))
			if c.Error != nil {
				var ce *chat.Error
				if !errors.As(err, &ce) {
					t.Fatalf("got %v (%T), want a *chat.Error at %s", err, err, c.Error.Path)
				}
				if ce.Path != c.Error.Path || string(ce.Code) != c.Error.Code {
					t.Fatalf("got %s (code %s), want path %q code %s", ce, ce.Code, c.Error.Path, c.Error.Code)
				}
				if ce.Msg == "" {
					t.Fatal("the error says nothing")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			if d := wiretest.Diff(c.Canonical, got); d != "" {
				t.Fatalf("%s\n got: %s", d, got)
			}
			var format []byte
			if req.Format != nil {
				format, _ = json.Marshal(req.Format)
			}
			switch {
			case c.Format == nil && format != nil:
				t.Fatalf("unexpected format %s", format)
			case c.Format != nil:
				if d := wiretest.Diff(c.Format, format); d != "" {
					t.Fatalf("format: %s\n got: %s", d, format)
				}
			}
			// What the dialect reads, the Gemini encoder can send.
			if _, _, err := gemini.EncodeRequest(req, gemini.Options{}); err != nil {
				t.Fatalf("EncodeRequest: %v", err)
			}
		})
	}
}

// TestDialectIDsAreStable: the same history read twice gives the same ids,
// so a conversation's ids do not change from turn to turn, and every
// tool_result names a tool_use of the request.
func TestDialectIDsAreStable(t *testing.T) {
	body := []byte(`{"contents":[
		{"role":"user","parts":[{"text":"go"}]},
		{"role":"model","parts":[{"functionCall":{"name":"a","args":{"x":1}}},{"functionCall":{"name":"a","args":{"x":2}}}]},
		{"role":"user","parts":[{"functionResponse":{"name":"a","response":{"output":"1"}}},{"functionResponse":{"name":"a","response":{"output":"2"}}}]},
		{"role":"model","parts":[{"functionCall":{"name":"a","args":{"x":1}}}]},
		{"role":"user","parts":[{"functionResponse":{"name":"a","response":{"output":"again"}}}]}]}`)
	d := gemini.Dialect()
	first, err := d.Decode(body, wire.Incoming{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	second, _ := d.Decode(body, wire.Incoming{Model: "m"})
	a, _ := json.Marshal(first)
	b, _ := json.Marshal(second)
	if string(a) != string(b) {
		t.Fatalf("two reads differ:\n%s\n%s", a, b)
	}
	uses := map[string]bool{}
	var results []string
	for _, m := range first.Messages {
		for _, bl := range m.Content.Blocks {
			switch bl.Type {
			case chat.TypeToolUse:
				if uses[bl.ID] || bl.ID == "" {
					t.Fatalf("id %q empty or given twice", bl.ID)
				}
				uses[bl.ID] = true
			case chat.TypeToolResult:
				results = append(results, bl.ToolUseID)
			}
		}
	}
	if len(uses) != 3 || len(results) != 3 {
		t.Fatalf("uses %v results %v", uses, results)
	}
	for _, r := range results {
		if !uses[r] {
			t.Fatalf("result for %q, which no call has", r)
		}
	}
	// The second call of the same function and arguments is another call.
	if results[0] == results[2] {
		t.Fatalf("the third result was paired with the first call: %v", results)
	}
}

// TestDialectClientIDCollision: a generated id never takes an id the
// client gave another call.
func TestDialectClientIDCollision(t *testing.T) {
	d := gemini.Dialect()
	probe, err := d.Decode([]byte(`{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f"}}]}]}`), wire.Incoming{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	generated := probe.Messages[0].Content.Blocks[0].ID
	body := `{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f"}},{"functionCall":{"name":"g","id":"` + generated + `"}}]}]}`
	req, err := d.Decode([]byte(body), wire.Incoming{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	a, b := req.Messages[0].Content.Blocks[0].ID, req.Messages[0].Content.Blocks[1].ID
	if a == b {
		t.Fatalf("both calls have id %q", a)
	}
}

func TestDialectLimits(t *testing.T) {
	d := gemini.Dialect()
	in := wire.Incoming{Model: "m"}
	many := func(n int, item string) string { return strings.TrimSuffix(strings.Repeat(item+",", n), ",") }
	deep := `{"type":"OBJECT","properties":{"a":` + strings.Repeat(`{"type":"OBJECT","properties":{"a":`, 70) + `{"type":"STRING"}` + strings.Repeat(`}}`, 70) + `}}`
	for _, c := range []struct {
		name, body, path string
	}{
		{"contents", `{"contents":[` + many(chat.MaxMessages+1, `{"parts":[{"text":"x"}]}`) + `]}`, "contents"},
		{"parts", `{"contents":[{"parts":[` + many(chat.MaxBlocks+1, `{"text":"x"}`) + `]}]}`, "contents[0].parts"},
		{"parts across contents", `{"contents":[{"parts":[` + many(chat.MaxBlocks, `{"text":"x"}`) + `]},{"parts":[{"text":"y"}]}]}`, "contents[1].parts"},
		{"declarations", `{"contents":[{"parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[` + many(chat.MaxTools+1, `{"name":"f"}`) + `]}]}`, "tools[0].functionDeclarations"},
		{"stop sequences", `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"stopSequences":[` + many(chat.MaxStopSequences+1, `"s"`) + `]}}`, "generationConfig.stopSequences"},
		{"fields", `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{` + fieldsN(65) + `}}`, "generationConfig"},
		{"schema depth", `{"contents":[{"parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"f","parameters":` + deep + `}]}]}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := d.Decode([]byte(c.body), in)
			var ce *chat.Error
			if !errors.As(err, &ce) || ce.Code != chat.CodeTooLarge {
				t.Fatalf("got %v, want a too_large error", err)
			}
			if strings.Contains(ce.Msg, "more than 0 ") {
				t.Fatalf("the message names no bound: %s", ce)
			}
			if c.path != "" && ce.Path != c.path {
				t.Fatalf("got path %q, want %q", ce.Path, c.path)
			}
		})
	}
}

func fieldsN(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"f` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `":1`)
	}
	return b.String()
}

func TestErrorBody(t *testing.T) {
	for _, c := range []struct {
		reply wire.ErrorReply
		want  string
	}{
		{wire.ErrorReply{Status: 400, Type: "invalid_request_error", Message: "contents: required"}, `{"error":{"code":400,"message":"contents: required","status":"INVALID_ARGUMENT"}}`},
		{wire.ErrorReply{Status: 401, Type: "authentication_error", Message: "no key"}, `{"error":{"code":401,"message":"no key","status":"UNAUTHENTICATED"}}`},
		{wire.ErrorReply{Status: 404, Type: "not_found_error", Message: "no such model"}, `{"error":{"code":404,"message":"no such model","status":"NOT_FOUND"}}`},
		{wire.ErrorReply{Status: 429, Type: "rate_limit_error", Message: "slow down"}, `{"error":{"code":429,"message":"slow down","status":"RESOURCE_EXHAUSTED"}}`},
		{wire.ErrorReply{Status: 529, Type: "overloaded_error", Message: "busy"}, `{"error":{"code":529,"message":"busy","status":"UNAVAILABLE"}}`},
		{wire.ErrorReply{Status: 502, Type: "api_error", Message: "bad gateway"}, `{"error":{"code":502,"message":"bad gateway","status":"INTERNAL"}}`},
		{wire.ErrorReply{Type: "api_error", Message: "?"}, `{"error":{"code":500,"message":"?","status":"INTERNAL"}}`},
		{wire.ErrorReply{Type: "rate_limit_error", Message: "later"}, `{"error":{"code":429,"message":"later","status":"RESOURCE_EXHAUSTED"}}`},
		{wire.ErrorReply{Status: 422, Message: "x"}, `{"error":{"code":422,"message":"x","status":"FAILED_PRECONDITION"}}`},
	} {
		if got := strings.TrimSpace(string(gemini.Dialect().Error(c.reply))); got != c.want {
			t.Errorf("%+v:\n got %s\nwant %s", c.reply, got, c.want)
		}
	}
}

func TestStreamType(t *testing.T) {
	d := gemini.Dialect()
	if got := d.StreamType(wire.Incoming{Stream: true, Query: url.Values{"alt": {"sse"}}}); got != "text/event-stream" {
		t.Errorf("alt=sse: %q", got)
	}
	if got := d.StreamType(wire.Incoming{Stream: true}); !strings.HasPrefix(got, "application/json") {
		t.Errorf("no alt: %q", got)
	}
	if d.Name != "gemini" || d.IDPrefix != "" {
		t.Errorf("row %q %q", d.Name, d.IDPrefix)
	}
}

// BenchmarkDialectDecode reads an agent's conversation (long strings,
// images, tool calls) as a Gemini client sends it.
func BenchmarkDialectDecode(b *testing.B) {
	out, _, err := gemini.EncodeRequest(wiretest.Conversation(12), gemini.Options{})
	if err != nil {
		b.Fatal(err)
	}
	body, err := json.Marshal(out)
	if err != nil {
		b.Fatal(err)
	}
	d := gemini.Dialect()
	in := wire.Incoming{Model: "gemini-3-pro-preview"}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Decode(body, in); err != nil {
			b.Fatal(err)
		}
	}
}
