package sdktest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/ctxkit/ctxkit/sdktest/fakeup"
)

// ccTurn is a Chat Completions client's first turn of a tool loop with
// reasoning on, through openai-go, unary or streamed: the assistant
// message as the client hands it back (openai-go's ToParam, with the
// reasoning fields it does not model set as the user keeps them: a
// streamed client appends every delta's reasoning_details), and the
// call's id.
func ccTurn(t *testing.T, client openai.Client, model, ask string, stream bool) (openai.ChatCompletionMessageParamUnion, string, []json.RawMessage) {
	t.Helper()
	params := openai.ChatCompletionNewParams{Model: model, Tools: []openai.ChatCompletionToolUnionParam{weatherTool},
		ReasoningEffort: shared.ReasoningEffortLow, MaxCompletionTokens: openai.Int(4096),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(ask)}}
	var (
		msg       openai.ChatCompletionMessage
		details   []json.RawMessage
		reasoning string
	)
	if stream {
		s := client.Chat.Completions.NewStreaming(ctx(t), params)
		var acc openai.ChatCompletionAccumulator
		var rc strings.Builder
		for s.Next() {
			c := s.Current()
			acc.AddChunk(c)
			for _, ch := range c.Choices {
				if f, ok := ch.Delta.JSON.ExtraFields["reasoning_details"]; ok {
					var ds []json.RawMessage
					if err := json.Unmarshal([]byte(f.Raw()), &ds); err != nil {
						t.Fatalf("delta reasoning_details %s: %v", f.Raw(), err)
					}
					details = append(details, ds...)
				}
				if f, ok := ch.Delta.JSON.ExtraFields["reasoning_content"]; ok {
					var s string
					json.Unmarshal([]byte(f.Raw()), &s)
					rc.WriteString(s)
				}
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		msg, reasoning = acc.Choices[0].Message, rc.String()
	} else {
		res, err := client.Chat.Completions.New(ctx(t), params)
		if err != nil {
			t.Fatal(err)
		}
		msg = res.Choices[0].Message
		if f, ok := msg.JSON.ExtraFields["reasoning_details"]; ok {
			json.Unmarshal([]byte(f.Raw()), &details)
		}
		if f, ok := msg.JSON.ExtraFields["reasoning_content"]; ok {
			json.Unmarshal([]byte(f.Raw()), &reasoning)
		}
	}
	if len(msg.ToolCalls) != 1 || len(details) == 0 {
		t.Fatalf("want a call and reasoning_details: %s (details %s)", msg.RawJSON(), details)
	}
	for _, d := range details {
		var v struct{ Signature, Data string }
		json.Unmarshal(d, &v)
		if s := v.Signature + v.Data; s != "" && !strings.HasPrefix(s, "Y3R4aw") {
			t.Fatalf("a signature the client got unsealed: %s", d)
		}
	}
	asst := msg.ToAssistantMessageParam()
	asst.SetExtraFields(map[string]any{"reasoning_details": details, "reasoning_content": reasoning})
	return openai.ChatCompletionMessageParamUnion{OfAssistant: &asst}, msg.ToolCalls[0].ID, details
}

// signed is the signature pattern of each fake's reply.
var signed = map[string]*regexp.Regexp{
	"anthropic": regexp.MustCompile(`"signature":"(EqQBCkgIfake[^"]+)"`),
	"bedrock":   regexp.MustCompile(`"signature":"(EqoBbedrockfake[^"]+)"`),
	"gemini":    regexp.MustCompile(`"thoughtSignature":"([^"]+)"`),
	"openai":    regexp.MustCompile(`"encrypted_content":"(gAAAAABfake[^"]+)"`),
}

// TestChatCompletionsReasoningToolLoop: a Chat Completions client (the
// official Go SDK) in a two-turn tool loop with reasoning on, against
// Anthropic, Bedrock, Gemini 3 and the Responses API, unary and
// streamed, hands the assistant message back as it got it: the next turn
// succeeds, the upstream gets back the signature it gave (Anthropic and
// Bedrock: the thinking block first, with its exact text, which the
// fakes check; Gemini: its own thoughtSignature on the call, not the
// placeholder; the Responses API: its encrypted reasoning, which its
// fake verifies), and no envelope reaches it.
func TestChatCompletionsReasoningToolLoop(t *testing.T) {
	e := newEnv(t, true)
	client := e.openai()
	for _, u := range []struct{ typ, model string }{{"anthropic", claude}, {"bedrock", find("bedrock").model}, {"gemini", gemini3}, {"openai", viaOpenAI}} {
		for _, stream := range []bool{false, true} {
			name := u.model + "/unary"
			if stream {
				name = u.model + "/stream"
			}
			t.Run(name, func(t *testing.T) {
				asst, id, _ := ccTurn(t, client, u.model, "Weather in Paris?", stream)
				first, _ := e.fake(u.typ).Last("")
				sig := signed[u.typ].FindStringSubmatch(string(first.Reply))
				if sig == nil {
					t.Fatalf("the fake signed nothing: %s", first.Reply)
				}
				params := openai.ChatCompletionNewParams{Model: u.model, Tools: []openai.ChatCompletionToolUnionParam{weatherTool},
					ReasoningEffort: shared.ReasoningEffortLow, MaxCompletionTokens: openai.Int(4096),
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?"), asst, openai.ToolMessage("Sunny", id)}}
				var resp *http.Response
				next, err := client.Chat.Completions.New(ctx(t), params, option.WithResponseInto(&resp))
				ex, _ := e.fake(u.typ).Last("")
				if err != nil {
					t.Fatalf("the next turn: %v\nupstream got %s", err, ex.Body)
				}
				if next.Choices[0].Message.Content != fakeup.AfterTool {
					t.Fatalf("next turn: %s", next.RawJSON())
				}
				body := string(ex.Body)
				if !strings.Contains(body, sig[1]) || strings.Contains(body, "Y3R4aw") || strings.Contains(body, "skip_thought_signature_validator") {
					t.Fatalf("want the fake's own signature %s back, and no envelope or placeholder: %s", sig[1], body)
				}
				if w := resp.Header.Get("X-Ctxkit-Warnings"); strings.Contains(w, "reasoning_details") {
					t.Errorf("warnings %s", w)
				}
			})
		}
	}
}

// TestChatCompletionsReasoningSwitch: a Chat Completions client whose
// tool loop started on one signature home continues on another: the
// other's signature is dropped with a warning naming its maker, and the
// conversation goes on (Gemini 3 with the placeholder on the call).
func TestChatCompletionsReasoningSwitch(t *testing.T) {
	e := newEnv(t, false)
	client := e.openai()
	for _, c := range []struct{ from, fromModel, to, toModel, maker string }{
		{"anthropic", claude, "gemini", gemini3, "anthropic"},
		{"gemini", gemini3, "anthropic", claude, "gemini"},
		{"bedrock", find("bedrock").model, "anthropic", claude, "bedrock"},
	} {
		t.Run(c.from+" to "+c.to, func(t *testing.T) {
			asst, id, _ := ccTurn(t, client, c.fromModel, "Weather in Paris?", true)
			first, _ := e.fake(c.from).Last("")
			sig := signed[c.from].FindStringSubmatch(string(first.Reply))
			params := openai.ChatCompletionNewParams{Model: c.toModel, Tools: []openai.ChatCompletionToolUnionParam{weatherTool},
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?"), asst, openai.ToolMessage("Sunny", id)}}
			var resp *http.Response
			next, err := client.Chat.Completions.New(ctx(t), params, option.WithResponseInto(&resp))
			ex, _ := e.fake(c.to).Last("")
			if err != nil {
				t.Fatalf("the next turn: %v\nupstream got %s", err, ex.Body)
			}
			if next.Choices[0].Message.Content != fakeup.AfterTool {
				t.Fatalf("next turn: %s", next.RawJSON())
			}
			if body := string(ex.Body); sig == nil || strings.Contains(body, sig[1]) || strings.Contains(body, "Y3R4aw") {
				t.Fatalf("%s's signature reached %s: %s", c.from, c.to, body)
			}
			if w := resp.Header.Get("X-Ctxkit-Warnings"); !strings.Contains(w, "reasoning_details[") || !strings.Contains(w, "made by "+c.maker) {
				t.Fatalf("warnings %q, want the dropped detail named with its maker", w)
			}
		})
	}
}

// TestChatCompletionsRedactedThinking: Anthropic's redacted thinking
// reaches a Chat Completions client as a sealed reasoning.encrypted
// detail and goes back to Anthropic as the redacted_thinking block it
// was (the fake refuses data it did not issue), unary and streamed.
func TestChatCompletionsRedactedThinking(t *testing.T) {
	e := newEnv(t, false)
	client := e.openai()
	ask := "Weather in Paris? " + fakeup.AnthropicRedactTrigger
	for _, stream := range []bool{false, true} {
		asst, id, details := ccTurn(t, client, claude, ask, stream)
		first, _ := e.fake("anthropic").Last("")
		data := regexp.MustCompile(`"data":"(EmwKAhgBEgy3fake[^"]+)"`).FindStringSubmatch(string(first.Reply))
		if data == nil || !strings.Contains(string(jsonOf(details)), "reasoning.encrypted") {
			t.Fatalf("want redacted thinking, sealed for the client: %s", details)
		}
		params := openai.ChatCompletionNewParams{Model: claude, Tools: []openai.ChatCompletionToolUnionParam{weatherTool},
			ReasoningEffort: shared.ReasoningEffortLow, MaxCompletionTokens: openai.Int(4096),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(ask), asst, openai.ToolMessage("Sunny", id)}}
		next, err := client.Chat.Completions.New(ctx(t), params)
		ex, _ := e.fake("anthropic").Last("")
		if err != nil {
			t.Fatalf("stream %v: the next turn: %v\nupstream got %s", stream, err, ex.Body)
		}
		if next.Choices[0].Message.Content != fakeup.AfterTool || !strings.Contains(string(ex.Body), `"type":"redacted_thinking","data":"`+data[1]+`"`) {
			t.Fatalf("stream %v: want the redacted block back: %s", stream, ex.Body)
		}
	}
}

// TestChatCompletionsBedrockRedactedThinking: Bedrock's redacted
// reasoning (Converse's redactedContent) reaches a Chat Completions
// client as a sealed reasoning.encrypted detail and goes back to Bedrock
// as the redactedContent it was, first in the assistant turn (the fake
// refuses bytes it did not give, and a tool loop whose turn lost its
// redacted reasoning), unary and streamed; the same detail handed to
// Anthropic is dropped with a warning, never sent.
func TestChatCompletionsBedrockRedactedThinking(t *testing.T) {
	e := newEnv(t, false)
	client := e.openai()
	model := find("bedrock").model
	ask := "Weather in Paris? " + fakeup.AnthropicRedactTrigger
	for _, stream := range []bool{false, true} {
		asst, id, details := ccTurn(t, client, model, ask, stream)
		first, _ := e.fake("bedrock").Last("")
		data := regexp.MustCompile(`"redactedContent":"([^"]+)"`).FindStringSubmatch(string(first.Reply))
		if data == nil || !strings.Contains(string(jsonOf(details)), "reasoning.encrypted") || strings.Contains(string(jsonOf(details)), data[1]) {
			t.Fatalf("stream %v: want redacted content, sealed for the client: %s", stream, details)
		}
		for _, to := range []struct{ model, typ string }{{model, "bedrock"}, {claude, "anthropic"}} {
			params := openai.ChatCompletionNewParams{Model: to.model, Tools: []openai.ChatCompletionToolUnionParam{weatherTool},
				ReasoningEffort: shared.ReasoningEffortLow, MaxCompletionTokens: openai.Int(4096),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(ask), asst, openai.ToolMessage("Sunny", id)}}
			var resp *http.Response
			next, err := client.Chat.Completions.New(ctx(t), params, option.WithResponseInto(&resp))
			ex, _ := e.fake(to.typ).Last("")
			body := string(ex.Body)
			if to.typ == "anthropic" {
				// Anthropic refuses the turn without its thinking; what
				// matters is that Bedrock's bytes never reach it.
				noBedrockRedacted(t, fmt.Sprintf("stream %v", stream), body, data[1], resp, err)
				continue
			}
			if err != nil {
				t.Fatalf("stream %v: the next turn: %v\nupstream got %s", stream, err, body)
			}
			if next.Choices[0].Message.Content != fakeup.AfterTool {
				t.Fatalf("stream %v: next turn: %s", stream, next.RawJSON())
			}
			if !strings.Contains(body, `"content":[{"reasoningContent":{"redactedContent":"`+data[1]+`"}}`) || strings.Contains(body, "Y3R4aw") {
				t.Fatalf("stream %v: want the redacted content back first, and no envelope: %s", stream, body)
			}
			if w := resp.Header.Get("X-Ctxkit-Warnings"); strings.Contains(w, "reasoning_details") {
				t.Errorf("stream %v: warnings %s", stream, w)
			}
		}
	}
}
