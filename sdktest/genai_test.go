package sdktest_test

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/ctxkit/ctxkit/sdktest/fakeup"
)

// genai is Google's Go SDK pointed at the gateway's Gemini dialect by its
// base URL, the ctxkit token as the API key (sent as x-goog-api-key).
func (e *env) genai(t testing.TB) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(ctx(t), &genai.ClientConfig{APIKey: e.token, Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: e.url + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var genaiWeather = &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{
	Name: "get_weather", Description: "The weather in a city",
	ParametersJsonSchema: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
}}}}}

// TestGenAIGenerateContent: models.GenerateContent against the Gemini
// dialect (POST /v1beta/models/{m}:generateContent) through every
// upstream type: text and usage, then a function call and its response
// on the next turn.
func TestGenAIGenerateContent(t *testing.T) {
	e := newEnv(t, false)
	client := e.genai(t)
	// A Gemini 3 model too: its signed call must come back signed.
	for _, u := range append(upstreams[:len(upstreams):len(upstreams)], upstream{"gemini", gemini3, ""}) {
		t.Run(u.model, func(t *testing.T) {
			res, err := client.Models.GenerateContent(ctx(t), u.model, genai.Text("Say hello."), nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Text() != fakeup.Greeting(u.typ) || len(res.Candidates) != 1 || res.Candidates[0].FinishReason != genai.FinishReasonStop {
				t.Fatalf("response %+v", res)
			}
			if um := res.UsageMetadata; um == nil || um.PromptTokenCount != fakeup.InputTokens || um.CandidatesTokenCount != fakeup.OutputTokens {
				t.Errorf("usage %+v", res.UsageMetadata)
			}
			history := []*genai.Content{genai.NewContentFromText("Weather in Paris?", genai.RoleUser)}
			res, err = client.Models.GenerateContent(ctx(t), u.model, history, genaiWeather)
			if err != nil {
				t.Fatal(err)
			}
			calls := res.FunctionCalls()
			if len(calls) != 1 || calls[0].Name != "get_weather" || !reflect.DeepEqual(calls[0].Args, map[string]any{"city": "Paris"}) {
				t.Fatalf("want one function call: %+v", res.Candidates[0].Content)
			}
			reply := genai.NewPartFromFunctionResponse("get_weather", map[string]any{"output": "Sunny, 21 °C"})
			reply.FunctionResponse.ID = calls[0].ID
			history = append(history, res.Candidates[0].Content, genai.NewContentFromParts([]*genai.Part{reply}, genai.RoleUser))
			res, err = client.Models.GenerateContent(ctx(t), u.model, history, genaiWeather)
			if err != nil {
				t.Fatalf("the next turn: %v", err)
			}
			if res.Text() != fakeup.AfterTool {
				t.Fatalf("next turn: %q", res.Text())
			}
		})
	}
}

// TestGenAIGenerateContentStream: models.GenerateContentStream (SSE,
// alt=sse) through every upstream type: the chunks' text adds up to the
// answer, the last chunk says STOP and carries the usage.
func TestGenAIGenerateContentStream(t *testing.T) {
	e := newEnv(t, false)
	client := e.genai(t)
	for _, u := range upstreams {
		t.Run(u.typ, func(t *testing.T) {
			var text strings.Builder
			var last *genai.GenerateContentResponse
			n := 0
			for res, err := range client.Models.GenerateContentStream(ctx(t), u.model, genai.Text("Say hello."), nil) {
				if err != nil {
					t.Fatal(err)
				}
				n++
				text.WriteString(res.Text())
				last = res
			}
			if n == 0 || text.String() != fakeup.Greeting(u.typ) {
				t.Fatalf("%d chunks, text %q", n, text.String())
			}
			if len(last.Candidates) != 1 || last.Candidates[0].FinishReason != genai.FinishReasonStop {
				t.Fatalf("last chunk %+v", last)
			}
			if um := last.UsageMetadata; um == nil || um.PromptTokenCount != fakeup.InputTokens || um.CandidatesTokenCount != fakeup.OutputTokens {
				t.Errorf("usage %+v", last.UsageMetadata)
			}
		})
	}
}

// TestGenAIModelsGet: models.Get in the Gemini dialect (GET
// /v1beta/models/{m}) names a configured model as models/{m}.
func TestGenAIModelsGet(t *testing.T) {
	e := newEnv(t, false)
	m, err := e.genai(t).Models.Get(ctx(t), "claude-sonnet-4-5", nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "models/claude-sonnet-4-5" {
		t.Fatalf("model %+v", m)
	}
}

// TestGenAIBedrockRedactedThinking: Bedrock's redacted reasoning
// (Converse's redactedContent) reaches a Gemini client (Google's SDK) as
// a thought part ("[redacted thinking]") whose thoughtSignature is its
// envelope, and handed back
// in the history it goes to Bedrock as the bytes Bedrock gave, first in
// the turn (the fake refuses a tool loop whose turn lost them), and the
// thinking after it whole and signed (its thought parts come back one per
// streamed chunk, its signature on the call), unary and streamed. Continued on Anthropic or on a Gemini 3 model, it is dropped
// with a warning: neither the bytes nor the envelope reach them.
func TestGenAIBedrockRedactedThinking(t *testing.T) {
	e := newEnv(t, false)
	client := e.genai(t)
	model := find("bedrock").model
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "unary", true: "stream"}[stream], func(t *testing.T) {
			history := []*genai.Content{genai.NewContentFromText("Weather in Paris? "+fakeup.AnthropicRedactTrigger, genai.RoleUser)}
			got := genaiTurn(t, client, model, history, thinkingWeather(), stream)
			first, _ := e.fake("bedrock").Last("")
			data := regexp.MustCompile(`"redactedContent":"([^"]+)"`).FindStringSubmatch(string(first.Reply))
			if data == nil {
				t.Fatalf("the fake redacted nothing: %s", first.Reply)
			}
			sealed := false
			for _, c := range got {
				for _, p := range c.Parts {
					sealed = sealed || p.Thought && p.Text == "[redacted thinking]" && strings.HasPrefix(string(p.ThoughtSignature), "ctxk\x01d")
				}
			}
			if !sealed || strings.Contains(jsonOf(got), data[1]) {
				t.Fatalf("want Bedrock's redacted content sealed in a thought part: %s", jsonOf(got))
			}
			call, _ := callOf(t, got)
			history = append(append(history, got...), toolReply(call))
			for _, to := range []struct {
				model, typ string
				cfg        *genai.GenerateContentConfig
			}{{model, "bedrock", thinkingWeather()}, {claude, "anthropic", genaiWeather}, {gemini3, "gemini", genaiWeather}} {
				res, err := client.Models.GenerateContent(ctx(t), to.model, history, to.cfg)
				ex, _ := e.fake(to.typ).Last("")
				body := string(ex.Body)
				if err != nil {
					t.Fatalf("%s: the next turn: %v\nupstream got %s", to.typ, err, body)
				}
				if res.Text() != fakeup.AfterTool {
					t.Fatalf("%s: next turn: %s", to.typ, jsonOf(res))
				}
				if strings.Contains(body, "Y3R4awFk") {
					t.Fatalf("%s: the envelope reached the upstream: %s", to.typ, body)
				}
				if to.typ == "bedrock" {
					// The redacted content first, then the thinking whole
					// and signed, rebuilt from its signature's envelope
					// in place of the streamed thought parts.
					want := `"content":[{"reasoningContent":{"redactedContent":"` + data[1] + `"}},` +
						`{"reasoningContent":{"reasoningText":{"text":"The user wants a short answer.","signature":"EqoBbedrockfake`
					if !strings.Contains(body, want) {
						t.Fatalf("want the redacted content back first, then the signed thinking: %s", body)
					}
					if w := res.SDKHTTPResponse.Headers.Get("X-Ctxkit-Warnings"); w != "" {
						t.Fatalf("warnings %q", w)
					}
					continue
				}
				if strings.Contains(body, data[1]) {
					t.Fatalf("%s: Bedrock's redacted content reached it: %s", to.typ, body)
				}
				if w := res.SDKHTTPResponse.Headers.Get("X-Ctxkit-Warnings"); !strings.Contains(w, "redacted thinking made by bedrock") {
					t.Fatalf("%s: no warning for the dropped redacted content: %q", to.typ, w)
				}
			}
		})
	}
}

// TestGenAIChatBedrockRedactedThinking: the same tool loop in a chat
// session of Google's SDK, which keeps a turn in its history only when
// every part holds data: the turn with the redacted thought part stays,
// and the next message goes to Bedrock with the redacted content first,
// unary and streamed.
func TestGenAIChatBedrockRedactedThinking(t *testing.T) {
	e := newEnv(t, false)
	client := e.genai(t)
	model := find("bedrock").model
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "unary", true: "stream"}[stream], func(t *testing.T) {
			chat, err := client.Chats.Create(ctx(t), model, thinkingWeather(), nil)
			if err != nil {
				t.Fatal(err)
			}
			send := func(p genai.Part) []*genai.Content {
				if !stream {
					res, err := chat.SendMessage(ctx(t), p)
					if err != nil {
						t.Fatal(err)
					}
					return []*genai.Content{res.Candidates[0].Content}
				}
				var out []*genai.Content
				for res, err := range chat.SendMessageStream(ctx(t), p) {
					if err != nil {
						t.Fatal(err)
					}
					if len(res.Candidates) > 0 && res.Candidates[0].Content != nil {
						out = append(out, res.Candidates[0].Content)
					}
				}
				return out
			}
			call, _ := callOf(t, send(genai.Part{Text: "Weather in Paris? " + fakeup.AnthropicRedactTrigger}))
			if h := chat.History(true); len(h) < 2 {
				t.Fatalf("the session left the turn out of its history: %s", jsonOf(chat.History(false)))
			}
			first, _ := e.fake("bedrock").Last("")
			data := regexp.MustCompile(`"redactedContent":"([^"]+)"`).FindStringSubmatch(string(first.Reply))
			reply := toolReply(call).Parts[0]
			var text strings.Builder
			for _, c := range send(*reply) {
				for _, p := range c.Parts {
					if !p.Thought {
						text.WriteString(p.Text)
					}
				}
			}
			ex, _ := e.fake("bedrock").Last("")
			if data == nil || text.String() != fakeup.AfterTool || !strings.Contains(string(ex.Body), `"content":[{"reasoningContent":{"redactedContent":"`+data[1]+`"}}`) {
				t.Fatalf("answer %q; Bedrock got %s", text.String(), ex.Body)
			}
		})
	}
}
