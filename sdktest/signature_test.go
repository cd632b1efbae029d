package sdktest_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/ctxkit/ctxkit/sdktest/fakeup"
)

const claude = "claude-sonnet-4-5" // the anthropic upstream's model

// thinkingWeather is genaiWeather with thinking on: the Anthropic fake
// then thinks before its call, and refuses the next turn of the tool loop
// unless the assistant message starts with that thinking, signed.
func thinkingWeather() *genai.GenerateContentConfig {
	c := *genaiWeather
	budget := int32(2048)
	c.ThinkingConfig = &genai.ThinkingConfig{IncludeThoughts: true, ThinkingBudget: &budget}
	c.MaxOutputTokens = 4096
	return &c
}

// genaiTurn is one generateContent call, streamed or not; it returns the
// model contents as Google's SDK keeps them for the history (one per
// chunk when streamed, as its chat sessions do).
func genaiTurn(t *testing.T, client *genai.Client, model string, history []*genai.Content, cfg *genai.GenerateContentConfig, stream bool) []*genai.Content {
	t.Helper()
	if !stream {
		res, err := client.Models.GenerateContent(ctx(t), model, history, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return []*genai.Content{res.Candidates[0].Content}
	}
	var out []*genai.Content
	for res, err := range client.Models.GenerateContentStream(ctx(t), model, history, cfg) {
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Candidates) == 0 || res.Candidates[0].Content == nil {
			continue
		}
		// The last chunk's empty text part (the finish reason's) is left
		// out, as the SDK's chat sessions leave out empty parts.
		c := res.Candidates[0].Content
		var parts []*genai.Part
		for _, p := range c.Parts {
			if !reflect.DeepEqual(*p, genai.Part{}) {
				parts = append(parts, p)
			}
		}
		if len(parts) > 0 {
			out = append(out, &genai.Content{Role: c.Role, Parts: parts})
		}
	}
	return out
}

// callOf is the function call in contents, and the thought text they hold.
func callOf(t *testing.T, contents []*genai.Content) (*genai.FunctionCall, string) {
	t.Helper()
	var call *genai.FunctionCall
	var thought strings.Builder
	for _, c := range contents {
		for _, p := range c.Parts {
			if p.Thought {
				thought.WriteString(p.Text)
			}
			if p.FunctionCall != nil {
				call = p.FunctionCall
			}
		}
	}
	if call == nil {
		t.Fatalf("no function call in %s", jsonOf(contents))
	}
	return call, thought.String()
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// withoutThoughts is contents less their thought parts, as clients that
// keep only the signature (Roo's Gemini provider) send the history back.
func withoutThoughts(contents []*genai.Content) []*genai.Content {
	var out []*genai.Content
	for _, c := range contents {
		var parts []*genai.Part
		for _, p := range c.Parts {
			if !p.Thought {
				parts = append(parts, p)
			}
		}
		if len(parts) > 0 {
			out = append(out, &genai.Content{Role: c.Role, Parts: parts})
		}
	}
	return out
}

// toolReply is the user content answering call.
func toolReply(call *genai.FunctionCall) *genai.Content {
	reply := genai.NewPartFromFunctionResponse(call.Name, map[string]any{"output": "Sunny, 21 °C"})
	reply.FunctionResponse.ID = call.ID
	return genai.NewContentFromParts([]*genai.Part{reply}, genai.RoleUser)
}

// anthropicAssistant is the first block of each assistant turn (a run
// of assistant messages, which the API takes as one) of the last request
// the Anthropic fake got.
func anthropicAssistant(t *testing.T, e *env) []map[string]any {
	t.Helper()
	ex, ok := e.fake("anthropic").Last("/v1/messages")
	if !ok {
		t.Fatal("the Anthropic fake got nothing")
	}
	var body struct {
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(ex.Body, &body); err != nil {
		t.Fatalf("body %s: %v", ex.Body, err)
	}
	var out []map[string]any
	prev := ""
	for _, m := range body.Messages {
		if m.Role == "assistant" && prev != "assistant" && len(m.Content) > 0 {
			out = append(out, m.Content[0])
		}
		prev = m.Role
	}
	return out
}

// TestGenAIThinkingWithAnthropic: a Gemini client (Google's SDK) of an
// Anthropic upstream with thinking on, in a tool loop: the thinking and
// its signature come to it as thought parts and a thoughtSignature, and
// on the next turn the assistant message reaches Anthropic starting with
// the thinking block, its text and the signature the fake issued (the
// fake refuses a tool loop without it, and a signature of other text) —
// streamed or not, and when the client drops its thought parts and keeps
// only the signature.
func TestGenAIThinkingWithAnthropic(t *testing.T) {
	e := newEnv(t, false)
	client := e.genai(t)
	for _, c := range []struct {
		name          string
		stream, strip bool
	}{{"unary", false, false}, {"stream", true, false}, {"unary without thoughts", false, true}, {"stream without thoughts", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			history := []*genai.Content{genai.NewContentFromText("Weather in Paris?", genai.RoleUser)}
			model := genaiTurn(t, client, claude, history, thinkingWeather(), c.stream)
			call, thought := callOf(t, model)
			if thought != "The user wants a short answer." {
				t.Fatalf("thought %q in %s", thought, jsonOf(model))
			}
			if strings.Contains(jsonOf(model), "EqQBCkgIfake") {
				t.Fatalf("the Anthropic signature reached the Gemini client unsealed: %s", jsonOf(model))
			}
			if c.strip {
				model = withoutThoughts(model)
			}
			history = append(append(history, model...), toolReply(call))
			next := genaiTurn(t, client, claude, history, thinkingWeather(), c.stream)
			var text strings.Builder
			for _, m := range next {
				for _, p := range m.Parts {
					if !p.Thought {
						text.WriteString(p.Text)
					}
				}
			}
			if text.String() != fakeup.AfterTool {
				t.Fatalf("next turn: %s", jsonOf(next))
			}
			first := anthropicAssistant(t, e)
			if len(first) != 1 || first[0]["type"] != "thinking" || first[0]["thinking"] != "The user wants a short answer." ||
				!strings.HasPrefix(first[0]["signature"].(string), "EqQBCkgIfake") {
				t.Fatalf("assistant message sent to Anthropic starts with %v", first)
			}
		})
	}
}

// TestGenAIRedactedThinkingWithAnthropic: Anthropic's redacted thinking,
// which the Gemini dialect has no part for, reaches the Gemini client
// sealed in a thoughtSignature and goes back to Anthropic as the
// redacted_thinking block it was.
func TestGenAIRedactedThinkingWithAnthropic(t *testing.T) {
	e := newEnv(t, false)
	client := e.genai(t)
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "unary", true: "stream"}[stream], func(t *testing.T) {
			history := []*genai.Content{genai.NewContentFromText("Weather in Paris? "+fakeup.AnthropicRedactTrigger, genai.RoleUser)}
			model := genaiTurn(t, client, claude, history, thinkingWeather(), stream)
			ex, _ := e.fake("anthropic").Last("/v1/messages")
			data := between(string(ex.Reply), `"data":"`, `"`)
			if data == "" {
				t.Fatalf("the fake redacted nothing: %s", ex.Reply)
			}
			call, _ := callOf(t, model)
			history = append(append(history, model...), toolReply(call))
			genaiTurn(t, client, claude, history, thinkingWeather(), stream)
			ex, _ = e.fake("anthropic").Last("/v1/messages")
			if !strings.Contains(string(ex.Body), `{"type":"redacted_thinking","data":"`+data+`"}`) {
				t.Fatalf("no redacted_thinking %s in %s", data, ex.Body)
			}
			if first := anthropicAssistant(t, e); len(first) != 1 || first[0]["type"] != "redacted_thinking" {
				t.Fatalf("assistant message starts with %v", first)
			}
		})
	}
}

// between is the text of s between the first before and the next after.
func between(s, before, after string) string {
	_, rest, ok := strings.Cut(s, before)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, after)
	return v
}

// TestGenAIAnthropicHistoryToGemini3: a Gemini client's history from an
// Anthropic upstream, continued with a Gemini 3 model: the sealed
// Anthropic signature, which Gemini would refuse as not valid, goes to it
// as Google's placeholder, and Gemini's own signatures still come back as
// they were given.
func TestGenAIAnthropicHistoryToGemini3(t *testing.T) {
	e := newEnv(t, false)
	client := e.genai(t)
	history := []*genai.Content{genai.NewContentFromText("Weather in Paris?", genai.RoleUser)}
	model := genaiTurn(t, client, claude, history, thinkingWeather(), false)
	call, _ := callOf(t, model)
	history = append(append(history, model...), toolReply(call))
	res, err := client.Models.GenerateContent(ctx(t), gemini3, history, genaiWeather)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text() != fakeup.AfterTool {
		t.Fatalf("answer %s", jsonOf(res))
	}
	ex, _ := e.fake("gemini").Last(gemini3)
	body := string(ex.Body)
	if !strings.Contains(body, `"thoughtSignature":"skip_thought_signature_validator"`) || strings.Contains(body, "Y3R4awFh") {
		t.Fatalf("the Anthropic signature was not replaced by the placeholder: %s", body)
	}
}
