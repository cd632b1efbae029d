package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
)

// mockGateway starts a gateway, behind a real server on loopback, whose
// configuration (YAML) is yml.
func mockGateway(t testing.TB, yml string) *httptest.Server {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := gateway.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	g := gateway.New(cfg, gateway.Options{})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", g.Messages)
	mux.HandleFunc("POST /v1/chat/completions", g.ChatCompletions)
	mux.HandleFunc("POST /v1beta/models/{call}", g.GenerateContent)
	mux.HandleFunc("GET /v1/models", g.Models)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

const mockYAML = `providers:
  - name: demo
    type: mock
    models: [demo-model]
`

// TestMockAnswersEveryDialect: a mock provider answers a client of each
// dialect, streaming and not, with its text and a usage estimated from
// the request, through the gateway's whole decode and encode path.
func TestMockAnswersEveryDialect(t *testing.T) {
	srv := mockGateway(t, mockYAML)
	for _, c := range []struct {
		name, path, body string
		stream           bool
		usage            []string // keys of the usage the answer must carry
	}{
		{"openai", "/v1/chat/completions", `{"model":"demo-model","messages":[{"role":"user","content":"Hi there"}]}`, false, []string{`"prompt_tokens":`, `"completion_tokens":`}},
		{"openai stream", "/v1/chat/completions", `{"model":"demo-model","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hi there"}]}`, true, []string{`"prompt_tokens":`, `"completion_tokens":`}},
		{"anthropic", "/v1/messages", `{"model":"demo-model","max_tokens":100,"messages":[{"role":"user","content":"Hi there"}]}`, false, []string{`"input_tokens":`, `"output_tokens":`}},
		{"anthropic stream", "/v1/messages", `{"model":"demo-model","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"Hi there"}]}`, true, []string{`"input_tokens":`, `"output_tokens":`}},
		{"gemini", "/v1beta/models/demo-model:generateContent", `{"contents":[{"role":"user","parts":[{"text":"Hi there"}]}]}`, false, []string{`"promptTokenCount":`, `"candidatesTokenCount":`}},
		{"gemini stream", "/v1beta/models/demo-model:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"Hi there"}]}]}`, true, []string{`"promptTokenCount":`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := post(t, srv.URL+c.path, c.body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			text := string(body)
			if c.stream {
				if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
					t.Fatalf("Content-Type %q", ct)
				}
				text = streamedText(t, body)
			}
			if !strings.Contains(text, gateway.DefaultMockText) {
				t.Fatalf("the answer lacks the mock's text:\n%s", body)
			}
			for _, k := range c.usage {
				i := strings.LastIndex(string(body), k)
				if i < 0 || strings.HasPrefix(string(body[i+len(k):]), "0") {
					t.Fatalf("no usage %s above zero:\n%s", k, body)
				}
			}
		})
	}
}

// streamedText is the text of every text delta of an SSE body of any
// dialect, put together.
func streamedText(t *testing.T, body []byte) string {
	t.Helper()
	var b strings.Builder
	for _, d := range sseData(body) {
		var ev struct {
			Choices []struct {
				Delta struct{ Content string }
			}
			Delta struct {
				Type, Text string
			}
			Candidates []struct {
				Content struct{ Parts []struct{ Text string } }
			}
		}
		if json.Unmarshal([]byte(d), &ev) != nil {
			continue
		}
		for _, c := range ev.Choices {
			b.WriteString(c.Delta.Content)
		}
		if ev.Delta.Type == "text_delta" {
			b.WriteString(ev.Delta.Text)
		}
		for _, c := range ev.Candidates {
			for _, p := range c.Content.Parts {
				b.WriteString(p.Text)
			}
		}
	}
	return b.String()
}

// TestMockStreamsInChunks: a stream carries chunk_words words an event,
// the events chunk_delay apart, each reaching the client as it is sent.
func TestMockStreamsInChunks(t *testing.T) {
	srv := mockGateway(t, mockYAML+`    mock:
      text: "one two three four five six seven"
      chunk_words: 2
      chunk_delay: 100ms
`)
	const chunkDelay = 100 * time.Millisecond
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"demo-model","stream":true,"messages":[{"role":"user","content":"count"}]}`))
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var pieces []string
	var at []time.Duration
	rd := bufio.NewReader(resp.Body)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			break
		}
		d, ok := strings.CutPrefix(strings.TrimSpace(line), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Choices []struct{ Delta struct{ Content string } }
		}
		if json.Unmarshal([]byte(d), &ev) == nil && len(ev.Choices) > 0 && ev.Choices[0].Delta.Content != "" {
			pieces = append(pieces, ev.Choices[0].Delta.Content)
			at = append(at, time.Since(start))
		}
	}
	want := []string{"one two ", "three four ", "five six ", "seven"}
	if strings.Join(pieces, "|") != strings.Join(want, "|") {
		t.Fatalf("pieces %q, want %q", pieces, want)
	}
	// The delays are the mock's: no event can arrive before its time.
	// That they reach the client as sent, not held to the end, shows in
	// the first arriving a delay before the last; a reader descheduled
	// on a busy machine may see two events together, so no gap between
	// neighbours is asked for.
	for i := range at {
		if at[i] < time.Duration(i)*chunkDelay {
			t.Fatalf("event %d arrived after %v, before its delay (chunk_delay %v): %v", i, at[i], chunkDelay, at)
		}
	}
	if spread := at[len(at)-1] - at[0]; spread < chunkDelay {
		t.Fatalf("the first event arrived only %v before the last (chunk_delay %v): held back? %v", spread, chunkDelay, at)
	}
}

const weatherTools = `"tools":[{"name":"get_weather","description":"the weather","input_schema":{"type":"object",
  "properties":{"city":{"type":"string"},"unit":{"enum":["celsius","fahrenheit"]},"days":{"type":"integer","minimum":1},
    "where":{"type":"object","properties":{"lat":{"type":"number"},"lon":{"type":"number"}},"required":["lat"]},"note":{"type":"string"}},
  "required":["city","unit","days","where"]}},{"name":"other","input_schema":{"type":"object"}}]`

// TestMockToolCall: a request that offers tools is answered with a call of
// the first tool (or the one tool_choice names), whose arguments hold the
// schema's required properties; a request whose last message holds the
// tool's result, or that says tool_choice none, gets text.
func TestMockToolCall(t *testing.T) {
	srv := mockGateway(t, mockYAML)
	ask := `"messages":[{"role":"user","content":"weather in Oslo?"}]`
	for _, c := range []struct {
		name, body string
		tool       string // the tool called; "": text
		input      string
	}{
		{"first tool", `{"model":"demo-model","max_tokens":100,` + weatherTools + `,` + ask + `}`,
			"get_weather", `{"city":"mock","days":1,"unit":"celsius","where":{"lat":0}}`},
		{"stream", `{"model":"demo-model","max_tokens":100,"stream":true,` + weatherTools + `,` + ask + `}`,
			"get_weather", `{"city":"mock","days":1,"unit":"celsius","where":{"lat":0}}`},
		{"named tool", `{"model":"demo-model","max_tokens":100,` + weatherTools + `,"tool_choice":{"type":"tool","name":"other"},` + ask + `}`,
			"other", `{}`},
		{"tool_choice none", `{"model":"demo-model","max_tokens":100,` + weatherTools + `,"tool_choice":{"type":"none"},` + ask + `}`, "", ""},
		{"after the result", `{"model":"demo-model","max_tokens":100,` + weatherTools + `,"messages":[{"role":"user","content":"weather?"},
			{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Oslo"}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny"}]}]}`, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := post(t, srv.URL+"/v1/messages", c.body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			name, input, stop := anthropicToolUse(t, body)
			if c.tool == "" {
				if name != "" || stop != "end_turn" {
					t.Fatalf("a tool call (%s, stop %s), want text:\n%s", name, stop, body)
				}
				return
			}
			if name != c.tool || stop != "tool_use" {
				t.Fatalf("called %q (stop %s), want %q:\n%s", name, stop, c.tool, body)
			}
			var got, want any
			json.Unmarshal([]byte(input), &got)
			json.Unmarshal([]byte(c.input), &want)
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if string(g) != string(w) {
				t.Fatalf("input %s, want %s", g, w)
			}
		})
	}
}

// anthropicToolUse reads the tool call, its input and the stop reason of
// an Anthropic-dialect answer, streamed or not.
func anthropicToolUse(t *testing.T, body []byte) (name, input, stop string) {
	t.Helper()
	if data := sseData(body); len(data) > 0 {
		var args strings.Builder
		for _, d := range data {
			var ev struct {
				Type         string
				ContentBlock struct{ Type, Name string } `json:"content_block"`
				Delta        struct {
					Type        string
					PartialJSON string `json:"partial_json"`
					StopReason  string `json:"stop_reason"`
				}
			}
			json.Unmarshal([]byte(d), &ev)
			switch {
			case ev.Type == "content_block_start" && ev.ContentBlock.Type == "tool_use":
				name = ev.ContentBlock.Name
			case ev.Delta.Type == "input_json_delta":
				args.WriteString(ev.Delta.PartialJSON)
			case ev.Type == "message_delta":
				stop = ev.Delta.StopReason
			}
		}
		return name, args.String(), stop
	}
	var m struct {
		Content []struct {
			Type, Name string
			Input      json.RawMessage
		}
		StopReason string `json:"stop_reason"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	for _, b := range m.Content {
		if b.Type == "tool_use" {
			return b.Name, string(b.Input), m.StopReason
		}
	}
	return "", "", m.StopReason
}

// TestMockErrors: the configured requests fail with their status, in the
// client's dialect; a 429 carries a Retry-After; the others are answered.
func TestMockErrors(t *testing.T) {
	srv := mockGateway(t, mockYAML+`    mock:
      errors:
        - {status: 429, on: 2}
        - {status: 500, every: 3, message: "the mock is down"}
`)
	body := `{"model":"demo-model","messages":[{"role":"user","content":"Hi"}]}`
	for n, want := range []int{200, 429, 502, 200, 200, 502, 200} {
		resp, data := post(t, srv.URL+"/v1/chat/completions", body)
		if resp.StatusCode != want {
			t.Fatalf("request %d: %d %s, want %d", n+1, resp.StatusCode, data, want)
		}
		switch want {
		case 429:
			if resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(data), `"rate_limit_error"`) ||
				!strings.Contains(string(data), "request 2 fails with 429, as configured for the 2nd request") {
				t.Fatalf("request %d: Retry-After %q %s", n+1, resp.Header.Get("Retry-After"), data)
			}
		case 502:
			if !strings.Contains(string(data), "the mock is down") {
				t.Fatalf("request %d: %s", n+1, data)
			}
		}
	}
	// An Anthropic client gets the failure in its own shape.
	resp, data := post(t, srv.URL+"/v1/messages", `{"model":"demo-model","max_tokens":10,"messages":[{"role":"user","content":"Hi"}]}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("request 8: %d %s", resp.StatusCode, data)
	}
	resp, data = post(t, srv.URL+"/v1/messages", `{"model":"demo-model","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"Hi"}]}`)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(data), `"type":"error"`) {
		t.Fatalf("request 9: %d %s", resp.StatusCode, data)
	}
}

// TestMockLatency: the answer begins after the configured latency, and a
// client that goes away during it ends the request at once.
func TestMockLatency(t *testing.T) {
	srv := mockGateway(t, mockYAML+`    mock: {latency: 150ms}
`)
	body := `{"model":"demo-model","messages":[{"role":"user","content":"Hi"}]}`
	start := time.Now()
	if resp, data := post(t, srv.URL+"/v1/chat/completions", body); resp.StatusCode != 200 || time.Since(start) < 150*time.Millisecond {
		t.Fatalf("%d after %v: %s", resp.StatusCode, time.Since(start), data)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("answered %d before the latency", resp.StatusCode)
	}
}

// TestMockStructuredOutput: a request for JSON of a schema gets JSON of
// that schema, built as tool arguments are.
func TestMockStructuredOutput(t *testing.T) {
	srv := mockGateway(t, mockYAML)
	resp, data := post(t, srv.URL+"/v1/chat/completions", `{"model":"demo-model","messages":[{"role":"user","content":"a person"}],
		"response_format":{"type":"json_schema","json_schema":{"name":"p","schema":{"type":"object","properties":{"name":{"type":"string"},"tags":{"type":"array","items":{"type":"string"},"minItems":2}},"required":["name","tags"]}}}}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
	var m struct {
		Choices []struct{ Message struct{ Content string } }
	}
	json.Unmarshal(data, &m)
	if len(m.Choices) != 1 || m.Choices[0].Message.Content != `{"name":"mock","tags":["mock","mock"]}` {
		t.Fatalf("%s", data)
	}
}

// TestMockEcho: echo answers with the last user message.
func TestMockEcho(t *testing.T) {
	srv := mockGateway(t, mockYAML+"    mock: {echo: true}\n")
	resp, data := post(t, srv.URL+"/v1/messages", `{"model":"demo-model","max_tokens":10,"messages":[{"role":"user","content":"first"},{"role":"assistant","content":"ok"},{"role":"user","content":"say this back"}]}`)
	if resp.StatusCode != 200 || !strings.Contains(string(data), `"text":"say this back"`) {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
}

// TestMockConfigErrors: every bad mock setting is refused, naming its
// field.
func TestMockConfigErrors(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CTXKIT_TEST_KEY", "k")
	for _, c := range []struct{ provider, want string }{
		{`{"name":"m","type":"mock","base_url":"http://x","models":["a"]}`, "providers[0].base_url: a mock provider takes none"},
		{`{"name":"m","type":"mock","api_key_env":"CTXKIT_TEST_KEY","models":["a"]}`, "providers[0].api_key_env: a mock provider takes none"},
		{`{"name":"m","type":"mock","keys":[{"env":"CTXKIT_TEST_KEY"}],"models":["a"]}`, "providers[0].keys: a mock provider takes none"},
		{`{"name":"m","type":"mock","key_cooldown":"5s","models":["a"]}`, "providers[0].key_cooldown: a mock provider takes none"},
		{`{"name":"m","type":"mock","api":"responses","models":["a"]}`, "providers[0].api: a mock provider speaks the Chat Completions API only"},
		{`{"name":"m","type":"mock","models":[]}`, "providers[0].models: at least one model"},
		{`{"name":"m","type":"openai","base_url":"http://x","api_key_env":"CTXKIT_TEST_KEY","models":["a"],"mock":{}}`, "providers[0].mock: only a provider of type mock"},
		{`{"name":"m","type":"mock","models":["a"],"mock":{"chunk_words":-1}}`, "providers[0].mock.chunk_words: -1 is not between 1 and 10000"},
		{`{"name":"m","type":"mock","models":["a"],"mock":{"chunk_delay":"11m"}}`, "providers[0].mock.chunk_delay: 11m0s is longer than 10m0s"},
		{`{"name":"m","type":"mock","models":["a"],"mock":{"latency":"1h"}}`, "providers[0].mock.latency: 1h0m0s is longer than 10m0s"},
		{`{"name":"m","type":"mock","models":["a"],"mock":{"tools":"sometimes"}}`, `providers[0].mock.tools: "sometimes" is not one of call, never`},
		{`{"name":"m","type":"mock","models":["a"],"mock":{"text":"` + strings.Repeat("x", 70000) + `"}}`, "providers[0].mock.text: 70000 bytes, more than 65536"},
		{`{"name":"m","type":"mock","models":["a"],"mock":{"errors":[{"status":200,"on":1}]}}`, "providers[0].mock.errors[0].status: 200 is not an HTTP error status"},
		{`{"name":"m","type":"mock","models":["a"],"mock":{"errors":[{"status":429}]}}`, "providers[0].mock.errors[0]: exactly one of on (the Nth request) and every"},
		{`{"name":"m","type":"mock","models":["a"],"mock":{"errors":[{"on":1}]}}`, "providers[0].mock.errors[0]: exactly one of status (an HTTP error) and cut"},
		{`{"name":"m","type":"mock","models":["a"],"mock":{"errors":[{"status":500,"cut":1,"on":1}]}}`, "providers[0].mock.errors[0]: exactly one of status"},
		{`{"name":"m","type":"mock","models":["a"],"mock":{"errors":[{"cut":-1,"on":1}]}}`, "providers[0].mock.errors[0].cut: -1 is not a number of events"},
		{`{"name":"m","type":"mock","models":["a"],"mock":{"errors":[{"status":429,"on":1,"every":2}]}}`, "providers[0].mock.errors[0]: exactly one of on"},
		{`{"name":"m","type":"mock","models":["a"],"mock":{"errors":[{"status":429,"on":-1}]}}`, "providers[0].mock.errors[0].on: -1 is not a request number"},
		{`{"name":"m","type":"mock","models":["a"],"mock":{"errors":[{"status":429,"every":-2}]}}`, "providers[0].mock.errors[0].every: -2 is not a positive number"},
		{`{"name":"m","type":"mock","models":["a"],"mock":{"errors":[{"status":429,"on":1,"retry_after":"25h"}]}}`, "providers[0].mock.errors[0].retry_after: 25h0m0s is longer than 24h0m0s"},
		{`{"name":"m","type":"mock","models":["a"],"mock":{"errors":[` + strings.Repeat(`{"status":500,"on":1},`, 64) + `{"status":500,"on":1}]}}`, "providers[0].mock.errors: 65 rules, more than 64"},
		{`{"name":"m","type":"cohere","models":["a"]}`, `providers[0].type: "cohere" is not one of openai, responses, anthropic, gemini, bedrock, mistral, deepseek, mock`},
	} {
		path := filepath.Join(dir, "c.json")
		os.WriteFile(path, []byte(`{"providers":[`+c.provider+`]}`), 0o600)
		_, err := gateway.LoadConfig(path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.120s: %v, want %q", c.provider, err, c.want)
		}
	}
}

// TestMockCut: a cut answer begins and stops part-way: a streaming client
// gets the events sent before the cut and then an error in the stream,
// never a clean end; a client that does not stream gets a 502.
func TestMockCut(t *testing.T) {
	srv := mockGateway(t, mockYAML+`    mock:
      text: "one two three four five"
      errors: [{cut: 2, every: 1}]
`)
	resp, body := post(t, srv.URL+"/v1/chat/completions", `{"model":"demo-model","stream":true,"messages":[{"role":"user","content":"Hi"}]}`)
	data := sseData(body)
	if resp.StatusCode != http.StatusOK || streamedText(t, body) != "one two " || len(data) == 0 ||
		!strings.Contains(data[len(data)-1], `"error"`) || strings.Contains(string(body), "[DONE]") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	resp, body = post(t, srv.URL+"/v1/messages", `{"model":"demo-model","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"Hi"}]}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "event: error") || strings.Contains(string(body), "message_stop") {
		t.Fatalf("anthropic: %d %s", resp.StatusCode, body)
	}
	resp, body = post(t, srv.URL+"/v1/chat/completions", `{"model":"demo-model","messages":[{"role":"user","content":"Hi"}]}`)
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("not streamed: %d %s", resp.StatusCode, body)
	}
}
