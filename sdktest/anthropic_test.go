package sdktest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/ctxkit/ctxkit/sdktest/fakeup"
)

// anthropic is the Anthropic Go SDK pointed at the gateway, the ctxkit
// token as its API key (sent as x-api-key), no retries.
func (e *env) anthropic() anthropic.Client {
	return anthropic.NewClient(option.WithBaseURL(e.url), option.WithAPIKey(e.token), option.WithMaxRetries(0))
}

func anthropicParams(model, text string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 256,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))}}
}

var anthropicWeather = anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{Name: "get_weather",
	Description: anthropic.String("The weather in a city"),
	InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}, Required: []string{"city"}}}}

// TestMessagesStreaming: messages streaming through every upstream type,
// accumulated by the SDK: the text, stop reason and usage, then a tool
// conversation (the call streamed with its input, the tool result
// accepted by the strict fake on the next turn).
func TestMessagesStreaming(t *testing.T) {
	e := newEnv(t, false)
	client := e.anthropic()
	for _, u := range upstreams {
		t.Run(u.typ, func(t *testing.T) {
			msg := streamMessage(t, client, anthropicParams(u.model, "Say hello."))
			if len(msg.Content) != 1 || msg.Content[0].Text != fakeup.Greeting(u.typ) || msg.StopReason != "end_turn" {
				t.Fatalf("text: %+v", msg)
			}
			if msg.Usage.InputTokens != fakeup.InputTokens || msg.Usage.OutputTokens != fakeup.OutputTokens {
				t.Errorf("usage %+v", msg.Usage)
			}
			params := anthropicParams(u.model, "Weather in Paris?")
			params.Tools = []anthropic.ToolUnionParam{anthropicWeather}
			msg = streamMessage(t, client, params)
			if msg.StopReason != "tool_use" || len(msg.Content) != 1 || msg.Content[0].Type != "tool_use" {
				t.Fatalf("want a tool call: %+v", msg)
			}
			use := msg.Content[0].AsToolUse()
			if use.ID == "" || use.Name != "get_weather" || !sameJSON(string(use.Input), `{"city":"Paris"}`) {
				t.Fatalf("tool use %+v", use)
			}
			params.Messages = append(params.Messages, msg.ToParam(),
				anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, "Sunny, 21 °C", false)))
			msg = streamMessage(t, client, params)
			if len(msg.Content) != 1 || msg.Content[0].Text != fakeup.AfterTool {
				t.Fatalf("next turn: %+v", msg)
			}
		})
	}
}

// streamMessage is one streamed Messages call, accumulated.
func streamMessage(t *testing.T, client anthropic.Client, params anthropic.MessageNewParams) anthropic.Message {
	t.Helper()
	stream := client.Messages.NewStreaming(ctx(t), params)
	var msg anthropic.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	return msg
}

// TestMessagesCountTokens: messages.countTokens (POST
// /v1/messages/count_tokens) is the Anthropic upstream's own count (the
// fake's distinctive figure, the request stripped to the fields
// count_tokens takes); for the other upstream types an offline count,
// which a response header marks as an estimate.
func TestMessagesCountTokens(t *testing.T) {
	e := newEnv(t, false)
	client := e.anthropic()
	for _, u := range upstreams {
		t.Run(u.typ, func(t *testing.T) {
			var resp *http.Response
			res, err := client.Messages.CountTokens(ctx(t), anthropic.MessageCountTokensParams{Model: anthropic.Model(u.model),
				System:   anthropic.MessageCountTokensParamsSystemUnion{OfString: anthropic.String("Be brief.")},
				Tools:    []anthropic.MessageCountTokensToolUnionParam{{OfTool: anthropicWeather.OfTool}},
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))}},
				option.WithResponseInto(&resp))
			if err != nil {
				t.Fatal(err)
			}
			if u.typ == "anthropic" {
				if res.InputTokens != fakeup.AnthropicCount {
					t.Fatalf("input_tokens %d, want the upstream's %d", res.InputTokens, fakeup.AnthropicCount)
				}
				if ex, ok := e.fake("anthropic").Last("/count_tokens"); !ok || ex.Status != 200 {
					t.Fatalf("the upstream's count_tokens was not used: %+v", ex)
				}
				return
			}
			if res.InputTokens <= 0 || res.InputTokens == fakeup.AnthropicCount {
				t.Fatalf("input_tokens %d", res.InputTokens)
			}
			if !headerWith(resp.Header, "estimate") {
				t.Fatalf("an offline count is not marked as an estimate: %v", resp.Header)
			}
		})
	}
}

// TestBetaMessagesWithBetas: beta.messages with betas: the anthropic-beta
// header reaches an Anthropic upstream as the SDK sent it, with
// anthropic-version.
func TestBetaMessagesWithBetas(t *testing.T) {
	e := newEnv(t, false)
	client := e.anthropic()
	betas := []anthropic.AnthropicBeta{anthropic.AnthropicBetaContext1m2025_08_07, anthropic.AnthropicBetaTokenEfficientTools2025_02_19}
	res, err := client.Beta.Messages.New(ctx(t), anthropic.BetaMessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 256, Betas: betas,
		Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("Say hello."))}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 || res.Content[0].Text != fakeup.Greeting("anthropic") {
		t.Fatalf("response %s", res.RawJSON())
	}
	ex, ok := e.fake("anthropic").Last("/v1/messages")
	if !ok {
		t.Fatal("the upstream was not called")
	}
	got := strings.Join(ex.Header.Values("anthropic-beta"), ",")
	for _, b := range betas {
		if !strings.Contains(got, b) {
			t.Errorf("anthropic-beta %q at the upstream lacks %s", got, b)
		}
	}
	if ex.Header.Get("anthropic-version") == "" {
		t.Error("no anthropic-version at the upstream")
	}
}

// TestAnthropicModelsRetrieve: models.retrieve in the Anthropic dialect
// (the SDK sends anthropic-version and x-api-key) answers Anthropic's
// ModelInfo shape.
func TestAnthropicModelsRetrieve(t *testing.T) {
	e := newEnv(t, false)
	client := e.anthropic()
	m, err := client.Models.Get(ctx(t), "gpt-5-mini", anthropic.ModelGetParams{})
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "gpt-5-mini" || m.Type != "model" || m.CreatedAt.IsZero() {
		t.Fatalf("model %s", m.RawJSON())
	}
}
