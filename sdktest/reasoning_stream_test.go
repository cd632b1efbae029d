package sdktest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/ctxkit/ctxkit/sdktest/fakeup"
)

// streamDetails runs a streamed first turn through the gateway and
// returns every delta's reasoning_details (one list per delta that had
// any), the reasoning_content and the accumulated message.
func streamDetails(t *testing.T, client openai.Client, model, ask string) ([][]map[string]any, string, openai.ChatCompletionMessage) {
	t.Helper()
	params := openai.ChatCompletionNewParams{Model: model, Tools: []openai.ChatCompletionToolUnionParam{weatherTool},
		ReasoningEffort: shared.ReasoningEffortLow, MaxCompletionTokens: openai.Int(4096),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(ask)}}
	s := client.Chat.Completions.NewStreaming(ctx(t), params)
	var (
		acc    openai.ChatCompletionAccumulator
		deltas [][]map[string]any
		rc     strings.Builder
	)
	for s.Next() {
		c := s.Current()
		acc.AddChunk(c)
		for _, ch := range c.Choices {
			if f, ok := ch.Delta.JSON.ExtraFields["reasoning_details"]; ok {
				var ds []map[string]any
				if err := json.Unmarshal([]byte(f.Raw()), &ds); err != nil {
					t.Fatalf("delta reasoning_details %s: %v", f.Raw(), err)
				}
				deltas = append(deltas, ds)
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
	return deltas, rc.String(), acc.Choices[0].Message
}

// nodeAccumulate is what openai-node's ChatCompletionStream leaves in
// message.reasoning_details: it spreads every field of a delta it does
// not model onto the message (Object.assign), so each delta's list
// replaces the one before.
func nodeAccumulate(deltas [][]map[string]any) []map[string]any {
	var out []map[string]any
	for _, d := range deltas {
		out = d
	}
	return out
}

// pythonAccumulate is what openai-python's ChatCompletionStreamState
// (lib/streaming/_deltas.py accumulate_delta) leaves: a list of objects
// is merged entry by entry by "index" (strings concatenated, "index" and
// "type" replaced; an index past the end is inserted); an entry without
// an index is an error there.
func pythonAccumulate(t *testing.T, deltas [][]map[string]any) []map[string]any {
	var acc []map[string]any
	for n, d := range deltas {
		if n == 0 {
			acc = d
			continue
		}
		for _, e := range d {
			f, ok := e["index"].(float64)
			if !ok {
				t.Fatalf("python: Expected list delta entry to have an `index` key; %v", e)
			}
			i := int(f)
			if i >= len(acc) {
				acc = append(acc, e)
				continue
			}
			for k, v := range e {
				if s, ok := v.(string); ok && k != "type" {
					if old, ok := acc[i][k].(string); ok {
						acc[i][k] = old + s
						continue
					}
				}
				acc[i][k] = v
			}
		}
	}
	return acc
}

// TestChatCompletionsStreamHelpersKeepDetails: a streamed Chat Completions client of
// Anthropic whose turn holds redacted thinking and signed thinking (two
// deltas with reasoning_details) hands the message back as its SDK's
// stream helper accumulated it. The next turn should give Anthropic both
// blocks, as a unary client's message does.
func TestChatCompletionsStreamHelpersKeepDetails(t *testing.T) {
	e := newEnv(t, false)
	client := e.openai()
	ask := "Weather in Paris? " + fakeup.AnthropicRedactTrigger
	for _, acc := range []string{"openai-node", "openai-python"} {
		t.Run(acc, func(t *testing.T) {
			deltas, reasoning, msg := streamDetails(t, client, claude, ask)
			n := 0
			for _, d := range deltas {
				n += len(d)
			}
			// All the turn's details in one delta, the redacted and the
			// signed thinking.
			if len(deltas) != 1 || n < 2 || len(msg.ToolCalls) != 1 {
				t.Fatalf("want one delta with two details and a call: %v", deltas)
			}
			var details []map[string]any
			if acc == "openai-node" {
				details = nodeAccumulate(deltas)
			} else {
				details = pythonAccumulate(t, deltas)
			}
			asst := msg.ToAssistantMessageParam()
			asst.SetExtraFields(map[string]any{"reasoning_details": details, "reasoning_content": reasoning})
			params := openai.ChatCompletionNewParams{Model: claude, Tools: []openai.ChatCompletionToolUnionParam{weatherTool},
				ReasoningEffort: shared.ReasoningEffortLow, MaxCompletionTokens: openai.Int(4096),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(ask),
					{OfAssistant: &asst}, openai.ToolMessage("Sunny", msg.ToolCalls[0].ID)}}
			_, err := client.Chat.Completions.New(ctx(t), params)
			ex, _ := e.fake("anthropic").Last("")
			if err != nil {
				t.Fatalf("the next turn: %v", err)
			}
			body := string(ex.Body)
			if !strings.Contains(body, `"type":"redacted_thinking"`) || !strings.Contains(body, `"type":"thinking"`) {
				t.Fatalf("%s client: Anthropic should get back its redacted and its signed thinking; it got %s", acc, body)
			}
		})
	}
}

// TestChatCompletionsMalformedDetailsBounded: a Chat Completions request to an
// Anthropic model whose assistant messages hold reasoning_details of
// "1,1,1…" (each a malformed detail and a warning, MaxReasoningDetails
// a message) costs the gateway hundreds of times its size in memory.
// The gateway runs in this process, so its allocations are counted.
func TestChatCompletionsMalformedDetailsBounded(t *testing.T) {
	e := newEnv(t, false)
	var b strings.Builder
	b.WriteString(`{"model":"` + claude + `","max_tokens":16,"messages":[{"role":"user","content":"hi"}`)
	item := `,{"role":"assistant","content":"ok","reasoning_details":[1` + strings.Repeat(",1", 9999) + `]},{"role":"user","content":"and?"}`
	for b.Len() < 1<<20 {
		b.WriteString(item)
	}
	b.WriteString(`]}`)
	body := b.String()
	req, err := http.NewRequestWithContext(ctx(t), http.MethodPost, e.url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
	req.Header.Set("Content-Type", "application/json")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("status %d, %d-byte body, %d bytes allocated, warnings %.120s", resp.StatusCode, len(body), alloc, resp.Header.Get("X-Ctxkit-Warnings"))
	if alloc > 32*uint64(len(body)) {
		t.Fatalf("a %d-byte request made the gateway allocate %d bytes (%.0fx)", len(body), alloc, float64(alloc)/float64(len(body)))
	}
}
