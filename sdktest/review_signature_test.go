package sdktest_test

import (
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/ctxkit/ctxkit/sdktest/fakeup"
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
