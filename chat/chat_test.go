package chat_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

const full = `{"model":"claude","max_tokens":1024,
 "system":[{"type":"text","text":"be brief","cache_control":{"type":"ephemeral"}}],
 "messages":[
  {"role":"user","content":"hi"},
  {"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"redacted_thinking","data":"xx"},
    {"type":"reasoning","text":"plain"},{"type":"thought_signature","signature":"ts"},
    {"type":"tool_use","id":"t1","name":"f","input":{"n":12345678901234567890,"f":1.10}}],
   "reasoning_details":[{"type":"reasoning.text","text":"r"}],"x_vendor":{"a":1}},
  {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"ok"},
    {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}],"is_error":true},
    {"type":"document","source":{"type":"url","url":"https://x.invalid/a.pdf"},"title":"A","context":"c","citations":{"enabled":true}},
    {"type":"image","source":{"type":"file","file_id":"f_1"}},
    {"type":"server_tool_use","id":"s1","name":"web_search","input":{"q":"x"},"cache_control":{"type":"ephemeral"}},
    {"type":"text","text":"line\nbreak \"quoted\" \u2028 <&>","citations":[{"type":"char_location"}]}]}],
 "tools":[{"name":"f","description":"d","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}},
   {"type":"web_search_20250305","name":"web_search","max_uses":5}],
 "tool_choice":{"type":"tool","name":"f","disable_parallel_tool_use":true},
 "temperature":0.5,"top_p":0.9,"stop_sequences":["END"],"thinking":{"type":"enabled","budget_tokens":2048},
 "reasoning_effort":"high","stream":true,"metadata":{"user_id":"u"},"service_tier":"auto"}`

// TestRoundTrip: decoding and encoding keeps every field, known or not.
func TestRoundTrip(t *testing.T) {
	req, err := chat.DecodeRequest([]byte(full))
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if d := wiretest.Diff([]byte(full), out); d != "" {
		t.Fatalf("round trip changed the request: %s\n%s", d, out)
	}
	again, _ := chat.DecodeRequest(out)
	out2, _ := json.Marshal(again)
	if string(out) != string(out2) {
		t.Fatalf("second round trip differs:\n%s\n%s", out, out2)
	}
	// A clone is equal and independent.
	c := req.Clone()
	c.Messages[1].Content.Blocks[4].Input[2] = 'X'
	c.Messages[0].Content.Text = "changed"
	if o, _ := json.Marshal(req); string(o) != string(out) {
		t.Fatal("changing a clone changed the original")
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`[]`, "must be a JSON object"},
		{`{}`, "messages: required"},
		{`{"messages":[{"role":"system","content":"x"}]}`, `messages[0].role: "system" is not user or assistant`},
		{`{"messages":[{"role":"user"}]}`, "messages[0].content: required"},
		{`{"messages":[{"role":"user","content":5}]}`, "messages[0].content: must be a string or an array of blocks"},
		{`{"messages":[{"role":"user","content":[{"text":"x"}]}]}`, "messages[0].content[0].type: required"},
		{`{"messages":[{"role":"assistant","content":[{"type":"tool_use","name":"f","input":{}}]}]}`, "messages[0].content[0].id: a tool_use needs an id"},
		{`{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":[1]}]}]}`, "messages[0].content[0].input: must be a JSON object"},
		{`{"messages":[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]}`, "messages[0].content[0].tool_use_id"},
		{`{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","data":"x"}}]}]}`, "messages[0].content[0].source: a base64 image needs media_type and data"},
		{`{"messages":[{"role":"user","content":[{"type":"text","text":1}]}]}`, "messages[0].content[0].text: must be a string"},
		{`{"messages":[],"system":[{"type":"image","source":{"type":"url","url":"u"}}]}`, "system[0]"},
		{`{"messages":[],"max_tokens":-1}`, "max_tokens: must be between"},
		{`{"messages":[],"max_tokens":1.5}`, "max_tokens: must be an integer"},
		{`{"messages":[],"tool_choice":{"type":"tool"}}`, "tool_choice.name: required"},
		{`{"messages":[],"thinking":{"type":"on"}}`, "thinking.type"},
		{`{"messages":[],"tools":[{"name":"f"}]}`, "tools[0].input_schema: required"},
		{`{"messages":[],"messages":[]}`, "messages: given twice"},
		{`{"messages":[]} {}`, "more than one JSON value"},
		{`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"tool_result","tool_use_id":"b","content":[{"type":"tool_result","tool_use_id":"c","content":[{"type":"tool_result","tool_use_id":"d","content":"x"}]}]}]}]}]}`, "nested more than"},
	} {
		_, err := chat.DecodeRequest([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.in, err, c.want)
		}
	}
}

func TestImages(t *testing.T) {
	img := `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}`
	req, err := chat.DecodeRequest([]byte(`{"messages":[{"role":"user","content":[` + img + `,` + img + `]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[` + img + `]},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"BBBB"}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := json.Marshal(req)
	d, warns := chat.DedupImages(req)
	if len(warns) != 2 || warns[0].Path != "messages[0].content[1]" || warns[1].Path != "messages[1].content[0].content[0]" {
		t.Fatalf("dedup warnings: %v", warns)
	}
	if got := d.Messages[0].Content.Blocks[1]; got.Type != "text" || got.Text != "[Image: same as messages[0].content[0]]" {
		t.Fatalf("dedup: %+v", got)
	}
	if d.Messages[1].Content.Blocks[1].Type != "image" {
		t.Fatal("a different image was replaced")
	}
	s, warns := chat.StripImages(req)
	if len(warns) != 4 || s.Messages[1].Content.Blocks[1].Text != "[Image: image/png]" {
		t.Fatalf("strip: %v %+v", warns, s.Messages[1].Content.Blocks[1])
	}
	if after, _ := json.Marshal(req); string(after) != string(before) {
		t.Fatal("the input was changed")
	}
}

func TestDocumentStub(t *testing.T) {
	for _, c := range []struct {
		b    chat.Block
		want string
	}{
		{chat.Block{Title: "Spec", Source: &chat.Source{Type: "url", URL: "https://x.invalid/a.pdf", MediaType: "application/pdf"}}, "[Document: Spec]"},
		{chat.Block{Source: &chat.Source{Type: "url", URL: "https://x.invalid/a.pdf", MediaType: "application/pdf"}}, "[Document: https://x.invalid/a.pdf]"},
		{chat.Block{Source: &chat.Source{Type: "base64", MediaType: "application/pdf"}}, "[Document: application/pdf]"},
		{chat.Block{Source: &chat.Source{Type: "file"}}, "[Document: file]"},
		{chat.Block{}, "[Document: document]"},
	} {
		if got := chat.DocumentStub(&c.b); got != c.want {
			t.Errorf("DocumentStub(%+v) = %q, want %q", c.b, got, c.want)
		}
	}
}

func TestResolveParams(t *testing.T) {
	f := 0.7
	for _, c := range []struct {
		name   string
		req    chat.Request
		format chat.Format
		max    int
		budget int
		effort string
		temp   bool
		warns  int
	}{
		{"anthropic default max", chat.Request{}, chat.FormatAnthropic, 8192, 0, "", false, 0},
		{"openai no max", chat.Request{Temperature: &f}, chat.FormatOpenAI, 0, 0, "", true, 0},
		{"budget clamped to 80%", chat.Request{MaxTokens: 4000, Thinking: &chat.Thinking{Type: "enabled", BudgetTokens: 4000}}, chat.FormatAnthropic, 4000, 3200, "high", false, 1},
		{"budget raised to 1024", chat.Request{MaxTokens: 8000, Thinking: &chat.Thinking{Type: "enabled", BudgetTokens: 100}}, chat.FormatGemini, 8000, 1024, "low", false, 1},
		{"max raised", chat.Request{MaxTokens: 1000, Thinking: &chat.Thinking{Type: "enabled", BudgetTokens: 1024}}, chat.FormatAnthropic, 1280, 1024, "high", false, 1},
		{"effort to budget", chat.Request{MaxTokens: 10000, ReasoningEffort: "low"}, chat.FormatGemini, 10000, 2000, "low", false, 0},
		{"budget to effort", chat.Request{MaxTokens: 10000, Thinking: &chat.Thinking{Type: "enabled", BudgetTokens: 5000}}, chat.FormatOpenAI, 10000, 5000, "medium", false, 0},
		{"temperature dropped with reasoning", chat.Request{Temperature: &f, ReasoningEffort: "high"}, chat.FormatOpenAI, 0, 6553, "high", false, 1},
		{"disabled", chat.Request{Thinking: &chat.Thinking{Type: "disabled"}}, chat.FormatAnthropic, 8192, 0, "", false, 0},
	} {
		p, warns := chat.ResolveParams(c.req, c.format)
		if p.MaxTokens != c.max || p.ReasoningBudget != c.budget || p.ReasoningEffort != c.effort || (p.Temperature != nil) != c.temp || len(warns) != c.warns {
			t.Errorf("%s: %+v %v", c.name, p, warns)
		}
	}
}
