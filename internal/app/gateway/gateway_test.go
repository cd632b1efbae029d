package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
)

// Streams a fake upstream of each type replays: "Hello, world" with usage
// of 100 prompt tokens, 80 of them read from the cache, and 7 output tokens.
var streams = map[string]struct {
	contentType string
	body        string
}{
	gateway.TypeAnthropic: {"text/event-stream", "" +
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_up\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":20,\"cache_read_input_tokens\":80,\"cache_creation_input_tokens\":0,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: ping\ndata: {\"type\":\"ping\"}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\", world\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":7}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"},
	gateway.TypeOpenAI:   {"text/event-stream", openAIStream},
	gateway.TypeDeepSeek: {"text/event-stream", openAIStream},
	gateway.TypeMistral: {"text/event-stream", "" +
		"data: {\"id\":\"m1\",\"object\":\"chat.completion.chunk\",\"model\":\"mistral-x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hello\"},\"finish_reason\":null}]}\n\n" +
		"data: {\"id\":\"m1\",\"object\":\"chat.completion.chunk\",\"model\":\"mistral-x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\", world\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":7,\"total_tokens\":107}}\n\n" +
		"data: [DONE]\n\n"},
	gateway.TypeGemini: {"text/event-stream", "" +
		"data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hello\"}]},\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":100,\"cachedContentTokenCount\":80,\"candidatesTokenCount\":1,\"totalTokenCount\":101}}\n\n" +
		"data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\", world\"}]},\"finishReason\":\"STOP\",\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":100,\"cachedContentTokenCount\":80,\"candidatesTokenCount\":7,\"totalTokenCount\":107}}\n\n"},
}

// bedrockStream is the same response as ConverseStream event-stream frames.
func bedrockStream() string {
	var b bytes.Buffer
	for _, f := range []struct{ typ, payload string }{
		{"messageStart", `{"role":"assistant"}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hello"}}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":", world"}}`},
		{"contentBlockStop", `{"contentBlockIndex":0}`},
		{"messageStop", `{"stopReason":"end_turn"}`},
		{"metadata", `{"usage":{"inputTokens":20,"outputTokens":7,"totalTokens":107,"cacheReadInputTokens":80,"cacheWriteInputTokens":0},"metrics":{"latencyMs":12}}`},
	} {
		var hs eventstream.Headers
		hs.Set(":event-type", eventstream.StringValue(f.typ))
		hs.Set(":content-type", eventstream.StringValue("application/json"))
		hs.Set(":message-type", eventstream.StringValue("event"))
		if err := eventstream.NewEncoder().Encode(&b, eventstream.Message{Headers: hs, Payload: []byte(f.payload)}); err != nil {
			panic(err)
		}
	}
	return b.String()
}

func init() {
	streams[gateway.TypeBedrock] = struct {
		contentType string
		body        string
	}{"application/vnd.amazon.eventstream", bedrockStream()}
}

const openAIStream = "" +
	"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hello\"},\"finish_reason\":null}]}\n\n" +
	": keep-alive\n\n" +
	"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\", world\"},\"finish_reason\":\"stop\"}]}\n\n" +
	"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":7,\"total_tokens\":107,\"prompt_tokens_details\":{\"cached_tokens\":80}}}\n\n" +
	"data: [DONE]\n\n"

// wholes are the same response as streams, as each type's answer to a
// request that is not streamed.
var wholes = map[string]string{
	gateway.TypeAnthropic: `{"id":"msg_up","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Hello, world"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":20,"cache_read_input_tokens":80,"cache_creation_input_tokens":0,"output_tokens":7}}`,
	gateway.TypeOpenAI:    openAIWhole,
	gateway.TypeDeepSeek:  openAIWhole,
	gateway.TypeMistral:   `{"id":"m1","object":"chat.completion","model":"mistral-x","choices":[{"index":0,"message":{"role":"assistant","content":"Hello, world"},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":7,"total_tokens":107}}`,
	gateway.TypeGemini:    `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hello, world"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":100,"cachedContentTokenCount":80,"candidatesTokenCount":7,"totalTokenCount":107}}`,
	gateway.TypeBedrock:   `{"output":{"message":{"role":"assistant","content":[{"text":"Hello, world"}]}},"stopReason":"end_turn","usage":{"inputTokens":20,"outputTokens":7,"totalTokens":107,"cacheReadInputTokens":80,"cacheWriteInputTokens":0},"metrics":{"latencyMs":12}}`,
}

const openAIWhole = `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"Hello, world"},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":7,"total_tokens":107,"prompt_tokens_details":{"cached_tokens":80}}}`

// upstream is a fake provider on loopback that records what it was sent.
type upstream struct {
	srv      *httptest.Server
	mu       sync.Mutex
	requests []*http.Request
	bodies   [][]byte
	status   int    // when not 0, answer with this status and errBody
	errBody  string // the error body
	stall    bool   // stream the first event, then wait for the client to go
	gone     chan struct{}
}

func newUpstream(t *testing.T, typ string) *upstream {
	u := &upstream{gone: make(chan struct{}, 1)}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.requests = append(u.requests, r)
		u.bodies = append(u.bodies, body)
		status, errBody, stall := u.status, u.errBody, u.stall
		u.mu.Unlock()
		if status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			io.WriteString(w, errBody)
			return
		}
		s := streams[typ]
		if r.Header.Get("Accept") == "application/json" && !stall {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, wholes[typ])
			return
		}
		w.Header().Set("Content-Type", s.contentType)
		if stall {
			first := s.body[:strings.Index(s.body, "\n\n")+2]
			io.WriteString(w, first)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			u.gone <- struct{}{}
			return
		}
		io.WriteString(w, s.body)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) last(t *testing.T) (*http.Request, map[string]any) {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.requests) == 0 {
		t.Fatal("the upstream got no request")
	}
	var body map[string]any
	if err := json.Unmarshal(u.bodies[len(u.bodies)-1], &body); err != nil {
		t.Fatalf("upstream body is not JSON: %s", u.bodies[len(u.bodies)-1])
	}
	return u.requests[len(u.requests)-1], body
}

// setup starts a gateway with one provider of each type.
func setup(t *testing.T) (*httptest.Server, map[string]*upstream) {
	t.Helper()
	ups := map[string]*upstream{}
	var providers []map[string]any
	for _, typ := range []string{gateway.TypeAnthropic, gateway.TypeOpenAI, gateway.TypeDeepSeek, gateway.TypeMistral, gateway.TypeGemini, gateway.TypeBedrock} {
		u := newUpstream(t, typ)
		ups[typ] = u
		env := "CTXKIT_TEST_KEY_" + strings.ToUpper(typ)
		t.Setenv(env, "key-for-"+typ)
		providers = append(providers, map[string]any{"name": typ + "-up", "type": typ, "base_url": u.srv.URL + "/base",
			"api_key_env": env, "models": []string{typ + "-model"}})
	}
	cfgPath := filepath.Join(t.TempDir(), "gateway.json")
	data, _ := json.Marshal(map[string]any{"providers": providers})
	os.WriteFile(cfgPath, data, 0o600)
	cfg, err := gateway.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	g := gateway.New(cfg, gateway.Options{})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", g.Messages)
	mux.HandleFunc("POST /v1/chat/completions", g.ChatCompletions)
	mux.HandleFunc("GET /v1/models", g.Models)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, ups
}

func post(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}

// sseData returns the data of every event in an SSE body.
func sseData(body []byte) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// TestEveryUpstreamEveryDialect: an Anthropic-dialect and an OpenAI-dialect
// client, streaming and not, get "Hello, world" from every upstream type,
// with usage in their own dialect's meaning.
func TestEveryUpstreamEveryDialect(t *testing.T) {
	srv, ups := setup(t)
	for typ, u := range ups {
		model := typ + "-model"
		cached := typ != gateway.TypeMistral // Mistral reports no cache
		t.Run(typ+"/anthropic", func(t *testing.T) {
			resp, body := post(t, srv.URL+"/v1/messages", `{"model":"`+model+`","max_tokens":100,"system":"be brief","messages":[{"role":"user","content":"hi"}]}`)
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			var m struct {
				Type    string `json:"type"`
				Role    string `json:"role"`
				Content []struct{ Type, Text string }
				Stop    string `json:"stop_reason"`
				Usage   struct {
					Input     int `json:"input_tokens"`
					Output    int `json:"output_tokens"`
					CacheRead int `json:"cache_read_input_tokens"`
				} `json:"usage"`
			}
			json.Unmarshal(body, &m)
			if m.Type != "message" || len(m.Content) != 1 || m.Content[0].Text != "Hello, world" || m.Stop != "end_turn" {
				t.Fatalf("response %s", body)
			}
			wantIn, wantRead := 20, 80
			if !cached {
				wantIn, wantRead = 100, 0
			}
			if m.Usage.Input != wantIn || m.Usage.CacheRead != wantRead || m.Usage.Output != 7 {
				t.Fatalf("usage in Anthropic's meaning (input excludes cache reads): %+v", m.Usage)
			}
			req, upBody := u.last(t)
			checkUpstream(t, typ, false, req, upBody)
		})
		t.Run(typ+"/openai", func(t *testing.T) {
			resp, body := post(t, srv.URL+"/v1/chat/completions", `{"model":"`+model+`","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`)
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			var c struct {
				Object  string `json:"object"`
				Choices []struct {
					Message struct{ Role, Content string }
					Finish  string `json:"finish_reason"`
				}
				Usage struct {
					Prompt  int `json:"prompt_tokens"`
					Compl   int `json:"completion_tokens"`
					Details struct {
						Cached int `json:"cached_tokens"`
					} `json:"prompt_tokens_details"`
				}
			}
			json.Unmarshal(body, &c)
			if c.Object != "chat.completion" || len(c.Choices) != 1 || c.Choices[0].Message.Content != "Hello, world" || c.Choices[0].Finish != "stop" {
				t.Fatalf("response %s", body)
			}
			wantRead := 80
			if !cached {
				wantRead = 0
			}
			if c.Usage.Prompt != 100 || c.Usage.Details.Cached != wantRead || c.Usage.Compl != 7 {
				t.Fatalf("usage in OpenAI's meaning (prompt includes cached): %+v", c.Usage)
			}
		})
		t.Run(typ+"/anthropic-stream", func(t *testing.T) {
			resp, body := post(t, srv.URL+"/v1/messages", `{"model":"`+model+`","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("%d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			text := ""
			for _, d := range sseData(body) {
				var e struct {
					Type  string
					Delta struct{ Type, Text string }
				}
				json.Unmarshal([]byte(d), &e)
				if e.Type == "content_block_delta" && e.Delta.Type == "text_delta" {
					text += e.Delta.Text
				}
			}
			s := string(body)
			if text != "Hello, world" || !strings.Contains(s, "event: message_start") || !strings.HasSuffix(strings.TrimSpace(s), `{"type":"message_stop"}`) {
				t.Fatalf("stream %q", body)
			}
			req, upBody := u.last(t)
			checkUpstream(t, typ, true, req, upBody)
		})
		t.Run(typ+"/openai-stream", func(t *testing.T) {
			resp, body := post(t, srv.URL+"/v1/chat/completions", `{"model":"`+model+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			data := sseData(body)
			text := ""
			for _, d := range data {
				var e struct {
					Choices []struct{ Delta struct{ Content string } }
				}
				json.Unmarshal([]byte(d), &e)
				for _, c := range e.Choices {
					text += c.Delta.Content
				}
			}
			if text != "Hello, world" || len(data) == 0 || data[len(data)-1] != "[DONE]" {
				t.Fatalf("stream %q", body)
			}
		})
	}
}

// checkUpstream: the request went to the provider's path with the
// provider's key (never the client's credentials) in its own header,
// streamed for a streaming client, else as one whole response.
func checkUpstream(t *testing.T, typ string, stream bool, r *http.Request, body map[string]any) {
	t.Helper()
	key := "key-for-" + typ
	accept := "application/json"
	if stream {
		accept = "text/event-stream"
	}
	if typ == gateway.TypeBedrock && stream {
		accept = "application/vnd.amazon.eventstream"
	}
	if got := r.Header.Get("Accept"); got != accept {
		t.Errorf("%s upstream request accepts %q, want %q", typ, got, accept)
	}
	switch typ {
	case gateway.TypeAnthropic:
		if r.URL.Path != "/base/v1/messages" || r.Header.Get("x-api-key") != key || r.Header.Get("anthropic-version") == "" || (body["stream"] == true) != stream {
			t.Errorf("anthropic upstream request: %s %v %v", r.URL, r.Header, body)
		}
	case gateway.TypeGemini:
		path, alt := "/base/v1beta/models/gemini-model:generateContent", ""
		if stream {
			path, alt = "/base/v1beta/models/gemini-model:streamGenerateContent", "sse"
		}
		if r.URL.Path != path || r.URL.Query().Get("alt") != alt || r.Header.Get("x-goog-api-key") != key {
			t.Errorf("gemini upstream request: %s %v", r.URL, r.Header)
		}
	case gateway.TypeBedrock:
		path := "/base/model/bedrock-model/converse"
		if stream {
			path += "-stream"
		}
		if r.URL.Path != path || r.Header.Get("Authorization") != "Bearer "+key || body["messages"] == nil {
			t.Errorf("bedrock upstream request: %s %v %v", r.URL, r.Header, body)
		}
	default:
		if r.URL.Path != "/base/chat/completions" || r.Header.Get("Authorization") != "Bearer "+key || (body["stream"] == true) != stream {
			t.Errorf("%s upstream request: %s %v %v", typ, r.URL, r.Header, body)
		}
	}
}

func TestErrors(t *testing.T) {
	srv, ups := setup(t)
	// Bad requests name the place; unknown models are 404; both dialects.
	for _, c := range []struct{ path, body, want string }{
		{"/v1/messages", `{"model":"openai-model","messages":[{"role":"robot","content":"x"}]}`, `messages[0].role`},
		{"/v1/chat/completions", `{"model":"nope","messages":[]}`, `is not configured`},
		{"/v1/messages", `{"messages":[]}`, "model: required"},
	} {
		resp, body := post(t, srv.URL+c.path, c.body)
		if resp.StatusCode/100 != 4 || !strings.Contains(string(body), c.want) {
			t.Errorf("%s %s: %d %s", c.path, c.body, resp.StatusCode, body)
		}
		if c.path == "/v1/messages" && !strings.Contains(string(body), `"type":"error"`) {
			t.Errorf("not the Anthropic error shape: %s", body)
		}
	}
	// Upstream errors map to fitting statuses in the client's dialect.
	u := ups[gateway.TypeOpenAI]
	for _, c := range []struct {
		status     int
		body       string
		wantStatus int
		wantType   string
	}{
		{429, `{"error":{"message":"slow down","type":"rate_limit"}}`, 429, "rate_limit_error"},
		{400, `{"error":{"message":"bad tool schema"}}`, 400, "invalid_request_error"},
		{401, `{"error":{"message":"bad key"}}`, 502, "api_error"},
		{503, `oops`, 503, "overloaded_error"},
		{500, `{"error":{"message":"boom"}}`, 502, "api_error"},
	} {
		u.mu.Lock()
		u.status, u.errBody = c.status, c.body
		u.mu.Unlock()
		resp, body := post(t, srv.URL+"/v1/messages", `{"model":"openai-model","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
		var e struct {
			Type  string
			Error struct{ Type, Message string }
		}
		json.Unmarshal(body, &e)
		if resp.StatusCode != c.wantStatus || e.Type != "error" || e.Error.Type != c.wantType {
			t.Errorf("upstream %d: got %d %s", c.status, resp.StatusCode, body)
		}
		if c.status == 401 && strings.Contains(string(body), "bad key") {
			t.Errorf("the upstream's credential complaint reached the client: %s", body)
		}
		resp, body = post(t, srv.URL+"/v1/chat/completions", `{"model":"openai-model","messages":[{"role":"user","content":"hi"}]}`)
		var oe struct {
			Error struct{ Type, Message string }
		}
		json.Unmarshal(body, &oe)
		if resp.StatusCode != c.wantStatus || oe.Error.Type != c.wantType {
			t.Errorf("upstream %d, OpenAI dialect: got %d %s", c.status, resp.StatusCode, body)
		}
	}
}

// TestClientGoneCancelsUpstream: a client that disconnects mid-stream
// cancels the upstream request.
func TestClientGoneCancelsUpstream(t *testing.T) {
	srv, ups := setup(t)
	u := ups[gateway.TypeAnthropic]
	u.stall = true
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"anthropic-model","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	// The stream has begun (its headers are here); the client goes away.
	cancel()
	resp.Body.Close()
	select {
	case <-u.gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream request was not cancelled when the client went away")
	}
}

func TestModels(t *testing.T) {
	srv, _ := setup(t)
	resp, err := http.Get(srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct {
		Object string
		Data   []struct{ ID, Object, Type, OwnedBy string }
	}
	json.NewDecoder(resp.Body).Decode(&m)
	if m.Object != "list" || len(m.Data) != 6 || m.Data[0].ID != "anthropic-model" || m.Data[0].Type != "model" || m.Data[0].Object != "model" {
		t.Fatalf("%+v", m)
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CTXKIT_TEST_KEY", "k")
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(s), 0o600)
		return p
	}
	yml := write("g.yaml", "providers:\n  - name: a\n    type: openai\n    base_url: http://127.0.0.1:1/v1\n    api_key_env: CTXKIT_TEST_KEY\n    models: [m1, m2]\n")
	if c, err := gateway.LoadConfig(yml); err != nil || len(c.Providers) != 1 || len(c.Providers[0].Models) != 2 {
		t.Fatalf("yaml: %v %+v", err, c)
	}
	for _, c := range []struct{ body, want string }{
		{`{"providers":[]}`, "providers: none configured"},
		{`{"providers":[{"name":"a","type":"cohere","base_url":"http://x","api_key_env":"CTXKIT_TEST_KEY","models":["m"]}]}`, `providers[0].type: "cohere"`},
		{`{"providers":[{"name":"a","type":"openai","base_url":"ftp://x","api_key_env":"CTXKIT_TEST_KEY","models":["m"]}]}`, "providers[0].base_url"},
		{`{"providers":[{"name":"a","type":"openai","base_url":"http://x","api_key_env":"CTXKIT_NO_SUCH_VAR","models":["m"]}]}`, "CTXKIT_NO_SUCH_VAR is not set"},
		{`{"providers":[{"name":"a","type":"openai","base_url":"http://x","api_key_env":"CTXKIT_TEST_KEY","models":["m"]},{"name":"b","type":"gemini","base_url":"http://y","api_key_env":"CTXKIT_TEST_KEY","models":["m"]}]}`, `"m" is already routed to a`},
		{`{"providers":[{"name":"a","type":"openai","base_url":"http://x","api_key_env":"CTXKIT_TEST_KEY","models":["m"],"extra":1}]}`, `unknown field "extra"`},
		{`{"providers":[{"name":"a","type":"anthropic","api":"responses","base_url":"http://x","api_key_env":"CTXKIT_TEST_KEY","models":["m"]}]}`, `providers[0].api: only a provider of type openai chooses its API`},
		{`{"providers":[{"name":"a","type":"openai","api":"assistants","base_url":"http://x","api_key_env":"CTXKIT_TEST_KEY","models":["m"]}]}`, `providers[0].api: "assistants" is not one of chat, responses`},
	} {
		_, err := gateway.LoadConfig(write("c.json", c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.body, err, c.want)
		}
	}
}

// TestCollectedResponseIsBounded: an upstream that streams without end to
// a non-streaming client is cut off at the bound with a 502, not collected
// into memory without limit.
func TestCollectedResponseIsBounded(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + strings.Repeat("x", 1000) + "\"}}]}\n\n"
		for i := 0; i < 10000 && r.Context().Err() == nil; i++ {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	}))
	defer up.Close()
	t.Setenv("CTXKIT_TEST_KEY", "k")
	cfgPath := filepath.Join(t.TempDir(), "g.json")
	os.WriteFile(cfgPath, []byte(`{"providers":[{"name":"up","type":"openai","base_url":"`+up.URL+`","api_key_env":"CTXKIT_TEST_KEY","models":["m"]}]}`), 0o600)
	cfg, err := gateway.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	g := gateway.New(cfg, gateway.Options{MaxResponseBytes: 100 << 10})
	srv := httptest.NewServer(http.HandlerFunc(g.ChatCompletions))
	defer srv.Close()
	resp, body := post(t, srv.URL, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 502 || !strings.Contains(string(body), "larger than the gateway collects") {
		t.Fatalf("%d %.200s", resp.StatusCode, body)
	}
}

// oneProvider starts a gateway with a single openai-type provider in front
// of handler.
func oneProvider(t *testing.T, handler http.HandlerFunc) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(handler)
	t.Cleanup(up.Close)
	t.Setenv("CTXKIT_TEST_KEY", "k")
	cfgPath := filepath.Join(t.TempDir(), "g.json")
	os.WriteFile(cfgPath, []byte(`{"providers":[{"name":"up","type":"openai","base_url":"`+up.URL+`","api_key_env":"CTXKIT_TEST_KEY","models":["m"]}]}`), 0o600)
	cfg, err := gateway.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	g := gateway.New(cfg, gateway.Options{})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", g.Messages)
	mux.HandleFunc("POST /v1/chat/completions", g.ChatCompletions)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestCutUpstreamIsAnError: an upstream stream that ends without a finish
// (a dropped connection, a proxy timeout) is never passed off as a
// complete answer, in either dialect, streaming or not.
func TestCutUpstreamIsAnError(t *testing.T) {
	srv := oneProvider(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello, wor\"}}]}\n\n")
	})
	resp, body := post(t, srv.URL+"/v1/messages", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 502 || !strings.Contains(string(body), "before the response was complete") {
		t.Errorf("anthropic, plain: %d %s", resp.StatusCode, body)
	}
	resp, body = post(t, srv.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 502 {
		t.Errorf("openai, plain: %d %s", resp.StatusCode, body)
	}
	_, body = post(t, srv.URL+"/v1/messages", `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if !strings.Contains(string(body), "event: error") || strings.Contains(string(body), "message_stop") {
		t.Errorf("anthropic, stream: %s", body)
	}
	_, body = post(t, srv.URL+"/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if !strings.Contains(string(body), `"error"`) || strings.Contains(string(body), "[DONE]") {
		t.Errorf("openai, stream: %s", body)
	}
}

// TestErrorAfterContent: content then an in-stream error gives a
// non-streaming client the error with a status it can act on, promptly,
// even when the upstream keeps its connection open.
func TestErrorAfterContent(t *testing.T) {
	srv := oneProvider(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"}}]}\n\n")
		io.WriteString(w, "data: {\"error\":{\"message\":\"Overloaded\",\"type\":\"server_error\",\"code\":503}}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // and never ends the stream
	})
	start := time.Now()
	resp, body := post(t, srv.URL+"/v1/messages", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 503 || !strings.Contains(string(body), `"overloaded_error"`) || !strings.Contains(string(body), "Overloaded") {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the answer took %v: the gateway waited on the upstream's open connection", d)
	}
}

// TestRedirectNotFollowed: an upstream redirect is an error, and the
// provider's key never goes to the other host.
func TestRedirectNotFollowed(t *testing.T) {
	var leaked sync.Mutex
	got := ""
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Lock()
		got = r.Header.Get("Authorization") + r.Header.Get("x-api-key")
		leaked.Unlock()
	}))
	defer other.Close()
	srv := oneProvider(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/steal", http.StatusTemporaryRedirect)
	})
	resp, body := post(t, srv.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 502 {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
	leaked.Lock()
	defer leaked.Unlock()
	if got != "" {
		t.Errorf("the provider key reached another host: %q", got)
	}
}

// TestIdleUpstreamEnds: an upstream that goes quiet mid-stream for longer
// than IdleTimeout ends the client's stream with an error.
func TestIdleUpstreamEnds(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer up.Close()
	t.Setenv("CTXKIT_TEST_KEY", "k")
	cfgPath := filepath.Join(t.TempDir(), "g.json")
	os.WriteFile(cfgPath, []byte(`{"providers":[{"name":"up","type":"openai","base_url":"`+up.URL+`","api_key_env":"CTXKIT_TEST_KEY","models":["m"]}]}`), 0o600)
	cfg, err := gateway.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	g := gateway.New(cfg, gateway.Options{IdleTimeout: 200 * time.Millisecond})
	srv := httptest.NewServer(http.HandlerFunc(g.Messages))
	defer srv.Close()
	start := time.Now()
	_, body := post(t, srv.URL, `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the stream stayed open %v", d)
	}
	if !strings.Contains(string(body), "event: error") || !strings.Contains(string(body), "Hel") {
		t.Fatalf("%s", body)
	}
}

// TestStreamPassesThroughAtOnce: what an upstream has sent reaches a
// streaming client while the upstream is still working, in both dialects.
func TestStreamPassesThroughAtOnce(t *testing.T) {
	release := make(chan struct{})
	srv := oneProvider(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"first-part\"}}]}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"!\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	})
	for _, path := range []string{"/v1/messages", "/v1/chat/completions"} {
		resp, err := http.Post(srv.URL+path, "application/json",
			strings.NewReader(`{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close() // a failure below must not leave the handlers waiting
		got := make(chan string, 1)
		go func() {
			var seen []byte
			buf := make([]byte, 4096)
			for {
				n, err := resp.Body.Read(buf)
				seen = append(seen, buf[:n]...)
				if strings.Contains(string(seen), "first-part") || err != nil {
					got <- string(seen)
					return
				}
			}
		}()
		select {
		case s := <-got:
			if !strings.Contains(s, "first-part") {
				t.Fatalf("%s: the stream ended without the first part: %s", path, s)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the first part did not reach the client while the upstream was still working", path)
		}
		release <- struct{}{}
		rest, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(rest), "!") {
			t.Errorf("%s: the rest of the stream is missing: %s", path, rest)
		}
	}
}
