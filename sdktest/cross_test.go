package sdktest_test

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"

	"github.com/ctxkit/ctxkit/sdktest/fakeup"
)

// foreignCalls is an OpenAI-dialect conversation whose tool-call ids came
// from another provider (Kimi-style "functions.get_weather:0"): two
// parallel calls and their results.
func foreignCalls() []openai.ChatCompletionMessageParamUnion {
	call := func(id, city string) openai.ChatCompletionMessageToolCallUnionParam {
		return openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: id,
			Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "get_weather", Arguments: `{"city":"` + city + `"}`}}}
	}
	return []openai.ChatCompletionMessageParamUnion{
		openai.UserMessage("Weather in Paris and London?"),
		{OfAssistant: &openai.ChatCompletionAssistantMessageParam{ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{
			call("functions.get_weather:0", "Paris"), call("functions.get_weather:1", "London")}}},
		openai.ToolMessage("Sunny, 21 °C", "functions.get_weather:0"),
		openai.ToolMessage("Rain, 12 °C", "functions.get_weather:1"),
	}
}

// TestToolIDsFromAnotherProvider: ids an upstream would refuse
// (Anthropic's and Bedrock's pattern, Mistral's nine alphanumerics) are
// rewritten so that every strict fake accepts the conversation; the
// rewrite is deterministic (the same conversation sent twice reaches the
// upstream with the same ids: no server state); and when the upstream
// calls a tool again, the client can continue with its own old ids and
// the new one.
func TestToolIDsFromAnotherProvider(t *testing.T) {
	e := newEnv(t, false)
	client := e.openai()
	for _, u := range upstreams {
		t.Run(u.typ, func(t *testing.T) {
			params := openai.ChatCompletionNewParams{Model: u.model, Tools: []openai.ChatCompletionToolUnionParam{weatherTool}, Messages: foreignCalls()}
			var seen [2][]string
			for i := range seen {
				res, err := client.Chat.Completions.New(ctx(t), params)
				if err != nil {
					t.Fatal(err)
				}
				if res.Choices[0].Message.Content != fakeup.AfterTool {
					t.Fatalf("answer %s", res.RawJSON())
				}
				ex, _ := e.fake(u.typ).Last("")
				seen[i] = upstreamIDs(ex.Body)
			}
			if strings.Join(seen[0], " ") != strings.Join(seen[1], " ") {
				t.Fatalf("the same conversation reached the upstream with different ids: %v, then %v", seen[0], seen[1])
			}

			params.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
			res, err := client.Chat.Completions.New(ctx(t), params)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Choices[0].Message.ToolCalls) != 1 {
				t.Fatalf("want a new call: %s", res.RawJSON())
			}
			id := res.Choices[0].Message.ToolCalls[0].ID
			if strings.HasPrefix(id, "functions.") {
				t.Fatalf("the new call has id %q", id)
			}
			params.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{}
			params.Messages = append(params.Messages, res.Choices[0].Message.ToParam(), openai.ToolMessage("Windy", id))
			if _, err := client.Chat.Completions.New(ctx(t), params); err != nil {
				t.Fatalf("continuing with old and new ids: %v", err)
			}
		})
	}
}

// TestLongToolIDs: an Anthropic-dialect conversation with 64-character
// tool ids (valid for Anthropic, too long for OpenAI's 40, not Mistral's
// nine) is accepted by every upstream.
func TestLongToolIDs(t *testing.T) {
	e := newEnv(t, false)
	client := e.anthropic()
	id := "toolu_" + strings.Repeat("Ab9_", 14) + "xy"
	for _, u := range upstreams {
		t.Run(u.typ, func(t *testing.T) {
			params := anthropicParams(u.model, "Weather in Paris?")
			params.Tools = []anthropic.ToolUnionParam{anthropicWeather}
			params.Messages = append(params.Messages,
				anthropic.NewAssistantMessage(anthropic.NewToolUseBlock(id, map[string]any{"city": "Paris"}, "get_weather")),
				anthropic.NewUserMessage(anthropic.NewToolResultBlock(id, "Sunny, 21 °C", false)))
			res, err := client.Messages.New(ctx(t), params)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Content) != 1 || res.Content[0].Text != fakeup.AfterTool {
				t.Fatalf("answer %s", res.RawJSON())
			}
		})
	}
}

// onePixel is a 1×1 PNG.
const onePixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

// TestMistralUserAfterTool: a tool result followed by text and an image
// in the same user turn (Anthropic dialect), and a user message after
// tool messages (OpenAI dialect), reach Mistral in an order its
// validator accepts, without losing the text or the image.
func TestMistralUserAfterTool(t *testing.T) {
	e := newEnv(t, false)
	model := find("mistral").model
	client := e.anthropic()
	params := anthropicParams(model, "Weather in Paris?")
	params.Tools = []anthropic.ToolUnionParam{anthropicWeather}
	first, err := client.Messages.New(ctx(t), params)
	if err != nil {
		t.Fatal(err)
	}
	use := first.Content[0].AsToolUse()
	params.Messages = append(params.Messages, first.ToParam(), anthropic.NewUserMessage(
		anthropic.NewToolResultBlock(use.ID, "Sunny, 21 °C", false),
		anthropic.NewTextBlock("And what about London?"),
		anthropic.NewImageBlockBase64("image/png", onePixel)))
	if _, err := client.Messages.New(ctx(t), params); err != nil {
		t.Fatalf("anthropic dialect: %v", err)
	}
	ex, _ := e.fake("mistral").Last("/chat/completions")
	if !strings.Contains(string(ex.Body), "And what about London?") || !strings.Contains(string(ex.Body), onePixel) {
		t.Fatalf("the text or the image was lost: %s", ex.Body)
	}

	oc := e.openai()
	res, err := oc.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{Model: model, Tools: []openai.ChatCompletionToolUnionParam{weatherTool},
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?"),
			{OfAssistant: &openai.ChatCompletionAssistantMessageParam{ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID: "call_k3Xz9", Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "get_weather", Arguments: `{"city":"Paris"}`}}}}}},
			openai.ToolMessage("Sunny, 21 °C", "call_k3Xz9"),
			openai.UserMessage("Thanks. Now London, please.")}})
	if err != nil {
		t.Fatalf("openai dialect: %v", err)
	}
	if len(res.Choices) != 1 {
		t.Fatalf("answer %s", res.RawJSON())
	}
	ex, _ = e.fake("mistral").Last("/chat/completions")
	if !strings.Contains(string(ex.Body), "Now London, please.") {
		t.Fatalf("the user's text was lost: %s", ex.Body)
	}
}

// TestGemini3HistoryFromAnotherModel: function calls of the current turn
// that another model made (no thoughtSignature) reach a Gemini 3 model
// with the placeholder Google documents, so the strict fake accepts them.
func TestGemini3HistoryFromAnotherModel(t *testing.T) {
	e := newEnv(t, false)
	oc := e.openai()
	res, err := oc.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{Model: gemini3,
		Tools: []openai.ChatCompletionToolUnionParam{weatherTool}, Messages: foreignCalls()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Choices[0].Message.Content != fakeup.AfterTool {
		t.Fatalf("answer %s", res.RawJSON())
	}
	ex, _ := e.fake("gemini").Last(gemini3)
	if !strings.Contains(string(ex.Body), "skip_thought_signature_validator") {
		t.Fatalf("no placeholder signature: %s", ex.Body)
	}
}

// TestGemini3OwnSignatures: a Gemini 3 tool conversation through the
// Anthropic dialect carries the signature the model gave its call back to
// it on the next turn (not the placeholder).
func TestGemini3OwnSignatures(t *testing.T) {
	e := newEnv(t, false)
	client := e.anthropic()
	params := anthropicParams(gemini3, "Weather in Paris?")
	params.Tools = []anthropic.ToolUnionParam{anthropicWeather}
	msg := streamMessage(t, client, params)
	first, _ := e.fake("gemini").Last(gemini3)
	sig := regexp.MustCompile(`"thoughtSignature":"([^"]+)"`).FindStringSubmatch(string(first.Reply))
	if sig == nil {
		t.Fatalf("the fake signed nothing: %s", first.Reply)
	}
	var use anthropic.ToolUseBlock
	for _, b := range msg.Content {
		if b.Type == "tool_use" {
			use = b.AsToolUse()
		}
	}
	if use.ID == "" {
		t.Fatalf("no tool call: %+v", msg)
	}
	params.Messages = append(params.Messages, msg.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, "Sunny", false)))
	msg = streamMessage(t, client, params)
	if len(msg.Content) == 0 || msg.Content[len(msg.Content)-1].Text != fakeup.AfterTool {
		t.Fatalf("next turn: %+v", msg)
	}
	next, _ := e.fake("gemini").Last(gemini3)
	if !strings.Contains(string(next.Body), sig[1]) {
		t.Fatalf("the model's own signature %s did not come back: %s", sig[1], next.Body)
	}
}

// upstreamIDs are the tool-call ids in an upstream request body, sorted.
func upstreamIDs(body []byte) []string {
	var v any
	json.Unmarshal(body, &v)
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if s, ok := c.(string); ok && (k == "id" || k == "tool_use_id" || k == "toolUseId" || k == "tool_call_id" || k == "call_id") {
					out = append(out, s)
				}
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(v)
	sort.Strings(out)
	return out
}
