package sdktest_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/ctxkit/ctxkit/sdktest/fakeup"
)

// openaiClient is openai-go pointed at the gateway, with the ctxkit
// token as its API key and no retries (a failure shows at once).
func (e *env) openai() openai.Client {
	return openai.NewClient(option.WithBaseURL(e.url+"/v1/"), option.WithAPIKey(e.token), option.WithMaxRetries(0))
}

var weatherTool = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name:        "get_weather",
	Description: openai.String("The weather in a city"),
	Parameters: openai.FunctionParameters{
		"type":       "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}},
		"required":   []string{"city"},
	},
})

// TestChatCompletions: chat.completions, plain and streamed (the SDK's
// accumulator), through every upstream type: the fake's text, finish
// reason and usage reach the client.
func TestChatCompletions(t *testing.T) {
	e := newEnv(t, false)
	client := e.openai()
	for _, u := range upstreams {
		t.Run(u.typ, func(t *testing.T) {
			params := openai.ChatCompletionNewParams{Model: u.model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello.")}}
			res, err := client.Chat.Completions.New(ctx(t), params)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Choices) != 1 || res.Choices[0].Message.Content != fakeup.Greeting(u.typ) || res.Choices[0].FinishReason != "stop" {
				t.Fatalf("plain: %s", res.RawJSON())
			}
			if res.Usage.PromptTokens != fakeup.InputTokens || res.Usage.CompletionTokens != fakeup.OutputTokens {
				t.Errorf("plain usage: %+v, want %d/%d", res.Usage, fakeup.InputTokens, fakeup.OutputTokens)
			}

			params.StreamOptions.IncludeUsage = openai.Bool(true)
			stream := client.Chat.Completions.NewStreaming(ctx(t), params)
			var acc openai.ChatCompletionAccumulator
			for stream.Next() {
				acc.AddChunk(stream.Current())
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != fakeup.Greeting(u.typ) || acc.Choices[0].FinishReason != "stop" {
				t.Fatalf("streamed: %+v", acc.ChatCompletion)
			}
			if acc.Usage.PromptTokens != fakeup.InputTokens || acc.Usage.CompletionTokens != fakeup.OutputTokens {
				t.Errorf("streamed usage: %+v", acc.Usage)
			}
		})
	}
}

// TestChatCompletionsTools: a tool-call conversation through every
// upstream type, the ids originating upstream: the call comes back
// (streamed and not) with its arguments, and the client's next turn, the
// call and its result, is accepted by the strict fake.
func TestChatCompletionsTools(t *testing.T) {
	e := newEnv(t, false)
	client := e.openai()
	for _, u := range upstreams {
		t.Run(u.typ, func(t *testing.T) {
			params := openai.ChatCompletionNewParams{Model: u.model, Tools: []openai.ChatCompletionToolUnionParam{weatherTool},
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")}}
			stream := client.Chat.Completions.NewStreaming(ctx(t), params)
			var acc openai.ChatCompletionAccumulator
			for stream.Next() {
				acc.AddChunk(stream.Current())
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			res, err := client.Chat.Completions.New(ctx(t), params)
			if err != nil {
				t.Fatal(err)
			}
			for name, c := range map[string]openai.ChatCompletion{"streamed": acc.ChatCompletion, "plain": *res} {
				if len(c.Choices) != 1 || len(c.Choices[0].Message.ToolCalls) != 1 || c.Choices[0].FinishReason != "tool_calls" {
					t.Fatalf("%s: want one tool call: %+v", name, c)
				}
				tc := c.Choices[0].Message.ToolCalls[0]
				if tc.ID == "" || tc.Function.Name != "get_weather" || !sameJSON(tc.Function.Arguments, `{"city":"Paris"}`) {
					t.Fatalf("%s: tool call %+v", name, tc)
				}
			}
			call := res.Choices[0].Message.ToolCalls[0]
			params.Messages = append(params.Messages, res.Choices[0].Message.ToParam(), openai.ToolMessage("Sunny, 21 °C", call.ID))
			next, err := client.Chat.Completions.New(ctx(t), params)
			if err != nil {
				t.Fatalf("the next turn: %v", err)
			}
			if next.Choices[0].Message.Content != fakeup.AfterTool {
				t.Fatalf("next turn: %s", next.RawJSON())
			}
		})
	}
}

// cityWeather is the schema of the structured-output tests.
var cityWeather = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"city":          map[string]any{"type": "string"},
		"temperature_c": map[string]any{"type": "integer"},
	},
	"required":             []string{"city", "temperature_c"},
	"additionalProperties": false,
}

// TestChatCompletionsStructuredOutput: response_format json_schema through
// every upstream type maps to the upstream's own mechanism (the fakes
// answer JSON only when their mechanism asks for it), and the client gets
// the JSON as the message content with finish_reason stop. An upstream
// without a mechanism (DeepSeek takes no json_schema) may refuse with a
// 400 naming response_format instead.
func TestChatCompletionsStructuredOutput(t *testing.T) {
	e := newEnv(t, false)
	client := e.openai()
	for _, u := range upstreams {
		t.Run(u.typ, func(t *testing.T) {
			params := openai.ChatCompletionNewParams{Model: u.model,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris, as JSON.")},
				ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
					JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "city_weather", Schema: cityWeather, Strict: openai.Bool(true)}}}}
			res, err := client.Chat.Completions.New(ctx(t), params)
			var apiErr *openai.Error
			if u.typ == "deepseek" && errors.As(err, &apiErr) && apiErr.StatusCode == 400 && apiErr.Code == "unsupported_field" && apiErr.Param == "response_format" {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				City         string `json:"city"`
				TemperatureC int    `json:"temperature_c"`
			}
			msg := res.Choices[0].Message
			if err := json.Unmarshal([]byte(msg.Content), &got); err != nil || got.City != "Paris" || got.TemperatureC != 21 {
				t.Fatalf("content %q is not the JSON asked for (%v)", msg.Content, err)
			}
			if res.Choices[0].FinishReason != "stop" || len(msg.ToolCalls) != 0 {
				t.Fatalf("structured output must come back as content: %s", res.RawJSON())
			}
		})
	}
}

// TestChatCompletionsUsageChunkOnlyWhenAsked: without
// stream_options.include_usage no chunk has an empty choices list (SDK
// users read chunk.Choices[0]).
func TestChatCompletionsUsageChunkOnlyWhenAsked(t *testing.T) {
	e := newEnv(t, false)
	client := e.openai()
	for _, typ := range []string{"openai", "anthropic"} {
		u := find(typ)
		stream := client.Chat.Completions.NewStreaming(ctx(t), openai.ChatCompletionNewParams{Model: u.model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello.")}})
		n := 0
		for stream.Next() {
			n++
			if len(stream.Current().Choices) == 0 {
				t.Fatalf("%s: a chunk with no choices, unasked: %s", typ, stream.Current().RawJSON())
			}
		}
		if err := stream.Err(); err != nil || n == 0 {
			t.Fatalf("%s: %d chunks, %v", typ, n, err)
		}
	}
}

// TestResponsesCreate: responses.create (POST /v1/responses), plain,
// through every upstream type: output text, usage, and a function call
// round trip (function_call + function_call_output items).
func TestResponsesCreate(t *testing.T) {
	e := newEnv(t, false)
	client := e.openai()
	for _, u := range upstreams {
		t.Run(u.typ, func(t *testing.T) {
			res, err := client.Responses.New(ctx(t), responses.ResponseNewParams{Model: u.model,
				Instructions: openai.String("Be brief."),
				Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello.")}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != "completed" || res.OutputText() != fakeup.Greeting(u.typ) {
				t.Fatalf("response: %s", res.RawJSON())
			}
			if res.Usage.InputTokens != fakeup.InputTokens || res.Usage.OutputTokens != fakeup.OutputTokens {
				t.Errorf("usage %+v", res.Usage)
			}
			tools := []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "get_weather",
				Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}}}}
			input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("Weather in Paris?", responses.EasyInputMessageRoleUser)}
			res, err = client.Responses.New(ctx(t), responses.ResponseNewParams{Model: u.model, Tools: tools,
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}})
			if err != nil {
				t.Fatal(err)
			}
			var call responses.ResponseFunctionToolCall
			for _, it := range res.Output {
				if it.Type == "function_call" {
					call = it.AsFunctionCall()
				}
			}
			if call.CallID == "" || call.Name != "get_weather" || !sameJSON(call.Arguments, `{"city":"Paris"}`) {
				t.Fatalf("want a function call: %s", res.RawJSON())
			}
			output := responses.ResponseInputItemParamOfFunctionCallOutput("Sunny, 21 °C")
			output.OfFunctionCallOutput.CallID = openai.String(call.CallID)
			input = append(input, responses.ResponseInputItemParamOfFunctionCall(call.Arguments, call.CallID, call.Name), output)
			res, err = client.Responses.New(ctx(t), responses.ResponseNewParams{Model: u.model, Tools: tools,
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}})
			if err != nil {
				t.Fatalf("the next turn: %v", err)
			}
			if res.OutputText() != fakeup.AfterTool {
				t.Fatalf("next turn: %s", res.RawJSON())
			}
		})
	}
}

// TestResponsesStream: responses.stream through every upstream type: the
// typed events arrive in order with increasing sequence numbers, and the
// text deltas add up to the text of the response in response.completed.
func TestResponsesStream(t *testing.T) {
	e := newEnv(t, false)
	client := e.openai()
	for _, u := range upstreams {
		t.Run(u.typ, func(t *testing.T) {
			checkResponsesStream(t, client, u.model, fakeup.Greeting(u.typ))
		})
	}
}

func checkResponsesStream(t *testing.T, client openai.Client, model, want string) {
	t.Helper()
	stream := client.Responses.NewStreaming(ctx(t), responses.ResponseNewParams{Model: model,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello.")}})
	var (
		types  []string
		deltas strings.Builder
		final  *responses.Response
		seq    int64 = -1
	)
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		if ev.SequenceNumber <= seq {
			t.Fatalf("sequence_number %d after %d", ev.SequenceNumber, seq)
		}
		seq = ev.SequenceNumber
		switch ev.Type {
		case "response.output_text.delta":
			deltas.WriteString(ev.Delta)
		case "response.completed":
			r := ev.Response
			final = &r
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(types) < 2 || types[0] != "response.created" || types[len(types)-1] != "response.completed" || final == nil {
		t.Fatalf("events %v", types)
	}
	for _, typ := range []string{"response.output_item.added", "response.content_part.added", "response.output_text.done", "response.output_item.done"} {
		if !contains(types, typ) {
			t.Errorf("no %s event: %v", typ, types)
		}
	}
	if deltas.String() != want || final.OutputText() != want {
		t.Fatalf("deltas %q, completed response %q, want %q", deltas.String(), final.OutputText(), want)
	}
	if final.Usage.InputTokens != fakeup.InputTokens || final.Usage.OutputTokens != fakeup.OutputTokens {
		t.Errorf("usage %+v", final.Usage)
	}
}

// TestResponsesUpstream: an openai-type provider with api: responses is
// called through the fake's /v1/responses for Chat Completions, Messages
// and Responses clients alike (the fake refuses previous_response_id and
// unknown fields, and checks every function_call_output answers a call).
func TestResponsesUpstream(t *testing.T) {
	e := newEnv(t, true)
	client := e.openai()
	res, err := client.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{Model: viaOpenAI, Tools: []openai.ChatCompletionToolUnionParam{weatherTool},
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Choices) != 1 || len(res.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("want a tool call: %s", res.RawJSON())
	}
	call := res.Choices[0].Message.ToolCalls[0]
	next, err := client.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{Model: viaOpenAI, Tools: []openai.ChatCompletionToolUnionParam{weatherTool},
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?"), res.Choices[0].Message.ToParam(), openai.ToolMessage("Sunny", call.ID)}})
	if err != nil {
		t.Fatal(err)
	}
	if next.Choices[0].Message.Content != fakeup.AfterTool {
		t.Fatalf("next turn: %s", next.RawJSON())
	}
	if ex, ok := e.fake("openai").Last("/responses"); !ok || ex.Status != 200 {
		t.Fatalf("the fake's /v1/responses was not called successfully: %+v", ex)
	}
	checkResponsesStream(t, client, viaOpenAI, fakeup.Greeting("openai"))
	msg := e.anthropic()
	m, err := msg.Messages.New(ctx(t), anthropicParams(viaOpenAI, "Say hello."))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Content) != 1 || m.Content[0].Text != fakeup.Greeting("openai") {
		t.Fatalf("messages through the Responses upstream: %s", m.RawJSON())
	}
}

// TestEmbeddings: embeddings.create through every upstream type that
// embeds, with the SDK's default encoding (openai-go sends none: floats)
// and with base64 (what the Node SDK sends by default; openai-go decodes
// it): vectors in input order and usage.
func TestEmbeddings(t *testing.T) {
	e := newEnv(t, false)
	client := e.openai()
	inputs := []string{"a", "ctxkit"}
	models := []string{cohere}
	for _, u := range upstreams {
		if u.embed != "" {
			models = append(models, u.embed)
		}
	}
	for _, model := range models {
		for _, format := range []openai.EmbeddingNewParamsEncodingFormat{"", openai.EmbeddingNewParamsEncodingFormatBase64} {
			t.Run(model+"/"+string(format), func(t *testing.T) {
				res, err := client.Embeddings.New(ctx(t), openai.EmbeddingNewParams{Model: openai.EmbeddingModel(model),
					Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: inputs}, EncodingFormat: format})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Data) != len(inputs) {
					t.Fatalf("%d embeddings for %d inputs: %s", len(res.Data), len(inputs), res.RawJSON())
				}
				for i, d := range res.Data {
					if d.Index != int64(i) || !reflect.DeepEqual(d.Embedding, fakeup.Embedding(len(inputs[i]))) {
						t.Errorf("data[%d] = index %d %v, want %v", i, d.Index, d.Embedding, fakeup.Embedding(len(inputs[i])))
					}
				}
				if res.Usage.PromptTokens <= 0 || res.Usage.TotalTokens < res.Usage.PromptTokens {
					t.Errorf("usage %+v", res.Usage)
				}
			})
		}
	}
}

// TestModelsRetrieve: models.retrieve (GET /v1/models/{id}) answers a
// configured model in OpenAI's shape, and an unknown one with a 404 the
// SDK reads as an *openai.Error.
func TestModelsRetrieve(t *testing.T) {
	e := newEnv(t, false)
	client := e.openai()
	m, err := client.Models.Get(ctx(t), "claude-sonnet-4-5")
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "claude-sonnet-4-5" || m.Object != "model" || m.Created == 0 {
		t.Fatalf("model: %s", m.RawJSON())
	}
	_, err = client.Models.Get(ctx(t), "no-such-model")
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown model: %v", err)
	}
}

func find(typ string) upstream {
	for _, u := range upstreams {
		if u.typ == typ {
			return u
		}
	}
	panic("no upstream " + typ)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}
