package sdktest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/ctxkit/ctxkit/sdktest/fakeup"
	"github.com/ctxkit/ctxkit/wire"
)

// TestMessagesSwitchToGemini3FromAnthropic: an Anthropic client whose
// conversation started on an Anthropic model (thinking signed by
// Anthropic, unsealed since the dialect is Anthropic's) continues on a
// Gemini 3 model. The Gemini encoder takes an unsealed signature as its
// own provider's, so Anthropic's signature goes to Gemini as a
// thoughtSignature: Gemini refuses the request ("Thought signature is not
// valid") and gets another provider's signature. It should go as the
// placeholder signature (or be left out) with a warning.
func TestMessagesSwitchToGemini3FromAnthropic(t *testing.T) {
	e := newEnv(t, false)
	client := e.anthropic()
	params := anthropicParams(claude, "Weather in Paris?")
	params.MaxTokens = 4096
	params.Thinking = anthropic.ThinkingConfigParamOfEnabled(1024)
	params.Tools = []anthropic.ToolUnionParam{anthropicWeather}
	msg := streamMessage(t, client, params)
	var use anthropic.ToolUseBlock
	var sig string
	for _, b := range msg.Content {
		switch b.Type {
		case "tool_use":
			use = b.AsToolUse()
		case "thinking":
			sig = b.Signature
		}
	}
	if use.ID == "" || sig == "" {
		t.Fatalf("want a signed thinking block and a call: %s", jsonOf(msg.Content))
	}
	params.Model, params.Thinking = gemini3, anthropic.ThinkingConfigParamUnion{}
	params.Messages = append(params.Messages, msg.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, "Sunny", false)))
	resp, err := client.Messages.New(ctx(t), params)
	ex, _ := e.fake("gemini").Last("")
	if strings.Contains(string(ex.Body), sig) {
		t.Errorf("Anthropic's signature reached Gemini: %s", ex.Body)
	}
	if err != nil {
		t.Fatalf("the conversation could not continue on Gemini: %v", err)
	}
	if resp.Content[len(resp.Content)-1].Text != fakeup.AfterTool {
		t.Fatalf("answer %s", resp.RawJSON())
	}
}

// TestSealedSignatureToOtherUpstreams: an Anthropic client of a Gemini 3
// model holds Gemini's signature sealed in a thinking block. Continued on
// an upstream that is not a signature home (Bedrock's Converse, Chat
// Completions, Mistral, DeepSeek), the encoders there do not open
// envelopes: the envelope, Gemini's signature inside, goes to that
// provider as the thinking block's signature (Bedrock's
// reasoningText.signature, reasoning_details' signature). It should be
// dropped (with a warning) like any signature that provider did not make.
func TestSealedSignatureToOtherUpstreams(t *testing.T) {
	e := newEnv(t, false)
	client := e.anthropic()
	params := anthropicParams(gemini3, "Weather in Paris?")
	params.Tools = []anthropic.ToolUnionParam{anthropicWeather}
	msg := streamMessage(t, client, params)
	var use anthropic.ToolUseBlock
	sealed := ""
	for _, b := range msg.Content {
		switch b.Type {
		case "tool_use":
			use = b.AsToolUse()
		case "thinking":
			if strings.HasPrefix(b.Signature, "Y3R4awFn") {
				sealed = b.Signature
			}
		}
	}
	if use.ID == "" || sealed == "" {
		t.Fatalf("want a sealed signature and a call: %s", jsonOf(msg.Content))
	}
	history := append(params.Messages, msg.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, "Sunny", false)))
	for _, u := range upstreams {
		if u.typ == "anthropic" || u.typ == "gemini" {
			continue
		}
		t.Run(u.typ, func(t *testing.T) {
			p := params
			p.Model, p.Messages = u.model, history
			_, err := client.Messages.New(ctx(t), p)
			var body string
			for _, ex := range e.fake(u.typ).Exchanges() {
				body += string(ex.Body)
			}
			if strings.Contains(body, sealed) {
				t.Errorf("the sealed Gemini signature reached %s (request error %v)", u.typ, err)
			}
		})
	}
}

// TestChatCompletionsAnthropicReasoningToResponses: a Chat Completions
// client of an Anthropic model with reasoning gets Anthropic's signature
// sealed in message.reasoning_details, and hands it back as it came (or
// unsealed, as a client that got it elsewhere holds it). Continued on a
// model called through the Responses API, neither may go out as a
// reasoning item's encrypted_content (which the API refuses): both are
// dropped with a warning.
func TestChatCompletionsAnthropicReasoningToResponses(t *testing.T) {
	e := newEnv(t, true)
	post := func(body map[string]any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(ctx(t), "POST", e.url+"/v1/chat/completions", bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+e.token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		var out map[string]any
		json.Unmarshal(raw, &out)
		out["_status"] = res.StatusCode
		out["_raw"] = string(raw)
		return out
	}
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}}}}}
	msgs := []any{map[string]any{"role": "user", "content": "Weather in Paris?"}}
	first := post(map[string]any{"model": claude, "messages": msgs, "tools": tools, "reasoning_effort": "low", "max_tokens": 4096})
	raw := first["_raw"].(string)
	if first["_status"] != 200 || !strings.Contains(raw, "reasoning_details") || !strings.Contains(raw, `"signature":"Y3R4awFh`) {
		t.Fatalf("want Anthropic's signature sealed in reasoning_details: %s", raw)
	}
	msg := first["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	call := msg["tool_calls"].([]any)[0].(map[string]any)
	detail := msg["reasoning_details"].([]any)[0].(map[string]any)
	sealed := detail["signature"].(string)
	opened, ok := wire.OpenSignature(sealed)
	if !ok || !strings.HasPrefix(opened.Signature, "EqQB") {
		t.Fatalf("reasoning_details signature %q is not Anthropic's sealed", sealed)
	}
	// As the gateway handed it (sealed), and as a client that got it
	// elsewhere holds it (Anthropic's own, unsealed): neither is the
	// Responses API's.
	for _, sig := range []string{sealed, opened.Signature} {
		detail["signature"] = sig
		history := append(slices.Clone(msgs), msg, map[string]any{"role": "tool", "tool_call_id": call["id"], "content": "Sunny"})
		next := post(map[string]any{"model": viaOpenAI, "messages": history, "tools": tools, "max_tokens": 4096})
		ex, _ := e.fake("openai").Last("/responses")
		if strings.Contains(string(ex.Body), "EqQB") || strings.Contains(string(ex.Body), "Y3R4aw") {
			t.Errorf("Anthropic's signature reached the Responses API: %s", ex.Body)
		}
		if next["_status"] != 200 {
			t.Fatalf("the conversation could not continue on the Responses API: %v", next["_raw"])
		}
	}
}

// TestMessagesBedrockRedactedThinking: an Anthropic client of a Bedrock
// model holds Bedrock's redacted reasoning as redacted_thinking data,
// whose place names no provider: it gets it sealed, and handed back it
// goes to Bedrock as the bytes Bedrock gave (the fake checks them, and
// that the tool loop's turn kept it), unary and streamed; continued on
// Anthropic it is dropped with a warning, never sent.
func TestMessagesBedrockRedactedThinking(t *testing.T) {
	e := newEnv(t, false)
	client := e.anthropic()
	model := find("bedrock").model
	for _, stream := range []bool{false, true} {
		params := anthropicParams(model, "Weather in Paris? "+fakeup.AnthropicRedactTrigger)
		params.MaxTokens = 4096
		params.Thinking = anthropic.ThinkingConfigParamOfEnabled(1024)
		params.Tools = []anthropic.ToolUnionParam{anthropicWeather}
		var msg anthropic.Message
		if stream {
			msg = streamMessage(t, client, params)
		} else {
			m, err := client.Messages.New(ctx(t), params)
			if err != nil {
				t.Fatal(err)
			}
			msg = *m
		}
		first, _ := e.fake("bedrock").Last("")
		data := regexp.MustCompile(`"redactedContent":"([^"]+)"`).FindStringSubmatch(string(first.Reply))
		var use anthropic.ToolUseBlock
		sealed := ""
		for _, b := range msg.Content {
			switch b.Type {
			case "tool_use":
				use = b.AsToolUse()
			case "redacted_thinking":
				sealed = b.Data
			}
		}
		if data == nil || use.ID == "" || !strings.HasPrefix(sealed, "Y3R4awFk") {
			t.Fatalf("stream %v: want Bedrock's redacted content sealed and a call: %s", stream, jsonOf(msg.Content))
		}
		history := append(params.Messages, msg.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, "Sunny", false)))
		for _, to := range []struct{ model, typ string }{{model, "bedrock"}, {claude, "anthropic"}} {
			p := params
			p.Model, p.Messages = anthropic.Model(to.model), history
			var resp *http.Response
			next, err := client.Messages.New(ctx(t), p, option.WithResponseInto(&resp))
			ex, _ := e.fake(to.typ).Last("")
			body := string(ex.Body)
			if to.typ == "anthropic" {
				noBedrockRedacted(t, fmt.Sprintf("stream %v", stream), body, data[1], resp, err)
				continue
			}
			if err != nil {
				t.Fatalf("stream %v: the next turn: %v\nupstream got %s", stream, err, body)
			}
			if len(next.Content) == 0 || !strings.Contains(body, `"content":[{"reasoningContent":{"redactedContent":"`+data[1]+`"}}`) || strings.Contains(body, "Y3R4aw") {
				t.Fatalf("stream %v: want the redacted content back first, and no envelope: %s", stream, body)
			}
		}
	}
}

// TestResponsesBedrockRedactedThinking: a Responses client of a Bedrock
// model holds Bedrock's redacted reasoning as a reasoning item's
// encrypted_content, which names no provider: it gets it sealed, handed
// back it goes to Bedrock as the bytes Bedrock gave, and continued on
// Anthropic it is dropped with a warning, never sent.
func TestResponsesBedrockRedactedThinking(t *testing.T) {
	e := newEnv(t, true)
	client := e.openai()
	model := find("bedrock").model
	tools := []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "get_weather",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}}}}
	params := func(model string, input responses.ResponseInputParam) responses.ResponseNewParams {
		return responses.ResponseNewParams{Model: model, Tools: tools, MaxOutputTokens: openai.Int(4096),
			Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortLow},
			Include:   []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
			Input:     responses.ResponseNewParamsInputUnion{OfInputItemList: input}}
	}
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("Weather in Paris? "+fakeup.AnthropicRedactTrigger, responses.EasyInputMessageRoleUser)}
	res, err := client.Responses.New(ctx(t), params(model, input))
	if err != nil {
		t.Fatal(err)
	}
	first, _ := e.fake("bedrock").Last("")
	data := regexp.MustCompile(`"redactedContent":"([^"]+)"`).FindStringSubmatch(string(first.Reply))
	var call responses.ResponseFunctionToolCall
	enc := ""
	for _, it := range res.Output {
		switch it.Type {
		case "function_call":
			call = it.AsFunctionCall()
			fc := call.ToParam()
			input = append(input, responses.ResponseInputItemUnionParam{OfFunctionCall: &fc})
		case "reasoning":
			r := it.AsReasoning()
			if strings.HasPrefix(r.EncryptedContent, "ctxkit.redacted_thinking:") {
				enc = r.EncryptedContent
			}
			rp := r.ToParam()
			input = append(input, responses.ResponseInputItemUnionParam{OfReasoning: &rp})
		}
	}
	if data == nil || call.CallID == "" || strings.Contains(enc, data[1]) || !strings.Contains(enc, "Y3R4awFk") {
		t.Fatalf("want Bedrock's redacted content sealed and a call: %s", res.RawJSON())
	}
	output := responses.ResponseInputItemParamOfFunctionCallOutput("Sunny")
	output.OfFunctionCallOutput.CallID = openai.String(call.CallID)
	input = append(input, output)
	for _, to := range []struct{ model, typ string }{{model, "bedrock"}, {claude, "anthropic"}} {
		var resp *http.Response
		_, err := client.Responses.New(ctx(t), params(to.model, input), oaioption.WithResponseInto(&resp))
		ex, _ := e.fake(to.typ).Last("")
		body := string(ex.Body)
		if to.typ == "anthropic" {
			noBedrockRedacted(t, "responses", body, data[1], resp, err)
			continue
		}
		if err != nil {
			t.Fatalf("the next turn: %v\nupstream got %s", err, body)
		}
		if !strings.Contains(body, `"redactedContent":"`+data[1]+`"`) || strings.Contains(body, "Y3R4aw") {
			t.Fatalf("want the redacted content back, and no envelope: %s", body)
		}
	}
}

// noBedrockRedacted fails t unless body, what the Anthropic fake got for
// a turn whose history holds Bedrock's redacted content (data), carries
// the tool result but neither those bytes nor an envelope of them, and
// resp names the dropped content in its warnings; what names the case.
func noBedrockRedacted(t *testing.T, what, body, data string, resp *http.Response, err error) {
	t.Helper()
	if !strings.Contains(body, "Sunny") || strings.Contains(body, data) || strings.Contains(body, "Y3R4aw") {
		t.Fatalf("%s: Bedrock's redacted content reached Anthropic (%v): %s", what, err, body)
	}
	if resp == nil || !strings.Contains(resp.Header.Get("X-Ctxkit-Warnings"), "redacted thinking made by bedrock") {
		t.Fatalf("%s: no warning for the dropped redacted content (%v)", what, err)
	}
}
