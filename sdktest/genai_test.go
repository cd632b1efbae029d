package sdktest_test

import (
	"reflect"
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
