package sdktest_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
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
	out, _ := genaiTurnHeader(t, client, model, history, cfg, stream)
	return out
}

// genaiTurnHeader is genaiTurn that also returns the response's header.
func genaiTurnHeader(t *testing.T, client *genai.Client, model string, history []*genai.Content, cfg *genai.GenerateContentConfig, stream bool) ([]*genai.Content, http.Header) {
	t.Helper()
	if !stream {
		res, err := client.Models.GenerateContent(ctx(t), model, history, cfg)
		if err != nil {
			t.Fatal(err)
		}
		var h http.Header
		if res.SDKHTTPResponse != nil {
			h = res.SDKHTTPResponse.Headers
		}
		return []*genai.Content{res.Candidates[0].Content}, h
	}
	var out []*genai.Content
	var h http.Header
	for res, err := range client.Models.GenerateContentStream(ctx(t), model, history, cfg) {
		if err != nil {
			t.Fatal(err)
		}
		if h == nil && res.SDKHTTPResponse != nil {
			h = res.SDKHTTPResponse.Headers
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
	return out, h
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
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(ex.Body, &body); err != nil {
		t.Fatalf("body %s: %v", ex.Body, err)
	}
	var out []map[string]any
	prev := ""
	for _, m := range body.Messages {
		var blocks []map[string]any
		json.Unmarshal(m.Content, &blocks) // a string content has no blocks
		if m.Role == "assistant" && prev != "assistant" && len(blocks) > 0 {
			out = append(out, blocks[0])
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
			next, header := genaiTurnHeader(t, client, claude, history, thinkingWeather(), c.stream)
			// The thought parts travel in the rebuilt thinking block:
			// nothing of them is reported as dropped.
			if header == nil {
				t.Fatal("the SDK kept no response header")
			}
			if w := header.Get("X-Ctxkit-Warnings"); strings.Contains(w, "reasoning") || strings.Contains(w, "thought") {
				t.Fatalf("warnings %q", w)
			}
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

// TestGenAIThinkingWithResponses: a Gemini client of a Responses
// upstream: the reasoning item's encrypted_content reaches the client
// sealed in a thoughtSignature and goes back to the Responses API as the
// reasoning item it came from (the fake refuses encrypted content it did
// not issue).
func TestGenAIThinkingWithResponses(t *testing.T) {
	e := newEnv(t, true)
	client := e.genai(t)
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "unary", true: "stream"}[stream], func(t *testing.T) {
			history := []*genai.Content{genai.NewContentFromText("Weather in Paris?", genai.RoleUser)}
			model := genaiTurn(t, client, viaOpenAI, history, thinkingWeather(), stream)
			ex, _ := e.fake("openai").Last("/responses")
			enc := between(string(ex.Reply), `"encrypted_content":"`, `"`)
			if enc == "" {
				t.Fatalf("the fake encrypted nothing: %s", ex.Reply)
			}
			if strings.Contains(jsonOf(model), enc) {
				t.Fatalf("the encrypted content reached the Gemini client unsealed: %s", jsonOf(model))
			}
			call, _ := callOf(t, model)
			history = append(append(history, model...), toolReply(call))
			genaiTurn(t, client, viaOpenAI, history, thinkingWeather(), stream)
			ex, _ = e.fake("openai").Last("/responses")
			if !strings.Contains(string(ex.Body), `"encrypted_content":"`+enc+`"`) {
				t.Fatalf("the reasoning item did not come back: %s", ex.Body)
			}
		})
	}
}

// TestMessagesSwitchFromResponses: an Anthropic client of a Responses
// upstream with thinking gets the encrypted reasoning as a thinking
// block's signature; it goes back to the Responses API as the reasoning
// item, and when the client continues the same conversation with an
// Anthropic model, the block, whose signature Anthropic would refuse, is
// left out (with a warning) rather than failing the request.
func TestMessagesSwitchFromResponses(t *testing.T) {
	e := newEnv(t, true)
	client := e.anthropic()
	params := anthropicParams(viaOpenAI, "Weather in Paris?")
	params.MaxTokens = 4096
	params.Thinking = anthropic.ThinkingConfigParamOfEnabled(1024)
	params.Tools = []anthropic.ToolUnionParam{anthropicWeather}
	msg := streamMessage(t, client, params)
	var use anthropic.ToolUseBlock
	thinking := false
	for _, b := range msg.Content {
		switch b.Type {
		case "tool_use":
			use = b.AsToolUse()
		case "thinking":
			thinking = strings.HasPrefix(b.Signature, "Y3R4awFv")
		}
	}
	if use.ID == "" || !thinking {
		t.Fatalf("want a sealed thinking block and a call: %s", jsonOf(msg.Content))
	}
	params.Messages = append(params.Messages, msg.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, "Sunny", false)))
	if next := streamMessage(t, client, params); next.Content[len(next.Content)-1].Text != fakeup.AfterTool {
		t.Fatalf("next turn: %s", jsonOf(next.Content))
	}
	if ex, _ := e.fake("openai").Last("/responses"); !strings.Contains(string(ex.Body), `"encrypted_content":"gAAAAABfake`) {
		t.Fatalf("no reasoning item went back: %s", ex.Body)
	}
	params.Model, params.Thinking = claude, anthropic.ThinkingConfigParamUnion{}
	resp, err := client.Messages.New(ctx(t), params, option.WithResponseInto(new(*http.Response)))
	if err != nil {
		t.Fatalf("the conversation continued on Anthropic: %v", err)
	}
	if resp.Content[len(resp.Content)-1].Text != fakeup.AfterTool {
		t.Fatalf("answer %s", resp.RawJSON())
	}
	if ex, _ := e.fake("anthropic").Last("/v1/messages"); strings.Contains(string(ex.Body), `"thinking"`) {
		t.Fatalf("a thinking block with a foreign signature reached Anthropic: %s", ex.Body)
	}
}

// TestResponsesSwitchFromAnthropic: a Responses client of an Anthropic
// upstream with reasoning gets the thinking as a reasoning item whose
// encrypted_content is the sealed signature; the item goes back to
// Anthropic as the signed thinking block (the fake checks the signature
// against the text), and when the client continues with a Responses
// model the item, which the API could not verify, is left out.
func TestResponsesSwitchFromAnthropic(t *testing.T) {
	e := newEnv(t, true)
	client := e.openai()
	tools := []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "get_weather",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}}}}
	params := func(model string, input responses.ResponseInputParam) responses.ResponseNewParams {
		return responses.ResponseNewParams{Model: model, Tools: tools, MaxOutputTokens: openai.Int(4096),
			Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortLow, Summary: shared.ReasoningSummaryAuto},
			Include:   []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
			Input:     responses.ResponseNewParamsInputUnion{OfInputItemList: input}}
	}
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("Weather in Paris?", responses.EasyInputMessageRoleUser)}
	res, err := client.Responses.New(ctx(t), params(claude, input))
	if err != nil {
		t.Fatal(err)
	}
	var call responses.ResponseFunctionToolCall
	sealed := false
	for _, it := range res.Output {
		switch it.Type {
		case "function_call":
			call = it.AsFunctionCall()
			fc := call.ToParam()
			input = append(input, responses.ResponseInputItemUnionParam{OfFunctionCall: &fc})
		case "reasoning":
			r := it.AsReasoning()
			sealed = strings.HasPrefix(r.EncryptedContent, "Y3R4awFh")
			rp := r.ToParam()
			input = append(input, responses.ResponseInputItemUnionParam{OfReasoning: &rp})
		}
	}
	if call.CallID == "" || !sealed {
		t.Fatalf("want a sealed reasoning item and a call: %s", res.RawJSON())
	}
	output := responses.ResponseInputItemParamOfFunctionCallOutput("Sunny, 21 °C")
	output.OfFunctionCallOutput.CallID = openai.String(call.CallID)
	input = append(input, output)
	res, err = client.Responses.New(ctx(t), params(claude, input))
	if err != nil {
		ex, _ := e.fake("anthropic").Last("/v1/messages")
		t.Fatalf("the next turn on Anthropic: %v\n%s\n%s", err, ex.Body, ex.Reply)
	}
	if res.OutputText() != fakeup.AfterTool {
		t.Fatalf("next turn: %s", res.RawJSON())
	}
	if first := anthropicAssistant(t, e); len(first) != 1 || first[0]["type"] != "thinking" {
		t.Fatalf("assistant turn sent to Anthropic starts with %v", first)
	}
	res, err = client.Responses.New(ctx(t), params(viaOpenAI, input))
	if err != nil {
		t.Fatalf("the conversation continued on the Responses API: %v", err)
	}
	if res.OutputText() != fakeup.AfterTool {
		t.Fatalf("answer %s", res.RawJSON())
	}
	if ex, _ := e.fake("openai").Last("/responses"); strings.Contains(string(ex.Body), "Y3R4aw") {
		t.Fatalf("a sealed Anthropic signature reached the Responses API: %s", ex.Body)
	}
}

// TestMessagesSwitchFromGemini3: an Anthropic client of a Gemini 3 model
// gets the call's thoughtSignature as a thinking block's signature,
// sealed; continued with an Anthropic model, the block, whose signature
// Anthropic would refuse, is left out rather than failing the request.
func TestMessagesSwitchFromGemini3(t *testing.T) {
	e := newEnv(t, false)
	client := e.anthropic()
	params := anthropicParams(gemini3, "Weather in Paris?")
	params.Tools = []anthropic.ToolUnionParam{anthropicWeather}
	msg := streamMessage(t, client, params)
	var use anthropic.ToolUseBlock
	sealed := false
	for _, b := range msg.Content {
		switch b.Type {
		case "tool_use":
			use = b.AsToolUse()
		case "thinking":
			sealed = strings.HasPrefix(b.Signature, "Y3R4awFn")
		}
	}
	if use.ID == "" || !sealed {
		t.Fatalf("want a sealed signature and a call: %s", jsonOf(msg.Content))
	}
	params.Model = claude
	params.Messages = append(params.Messages, msg.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, "Sunny", false)))
	next := streamMessage(t, client, params)
	if len(next.Content) == 0 || next.Content[len(next.Content)-1].Text != fakeup.AfterTool {
		t.Fatalf("next turn: %s", jsonOf(next.Content))
	}
	if ex, _ := e.fake("anthropic").Last("/v1/messages"); strings.Contains(string(ex.Body), `"thinking"`) {
		t.Fatalf("a thinking block with Gemini's signature reached Anthropic: %s", ex.Body)
	}
}
