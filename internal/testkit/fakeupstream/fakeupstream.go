// Package fakeupstream is a model provider on loopback for benchmarks: it
// answers OpenAI's Chat Completions and Responses APIs and Anthropic's
// Messages API with one canned answer each (twenty words of text, with
// usage), streamed event by event or in one body, as the request asks. It
// does no work beyond choosing the answer, so what a hop in front of it
// adds stands out.
package fakeupstream

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/responses"
)

// MaxBody is the most of a request body the fake reads; a larger body is
// refused with 413, so a runaway client cannot make it hold much.
const MaxBody = 1 << 20

// Words are the words of every answer; each answer holds them all, in
// order, separated by single spaces.
var Words = strings.Fields("Hello there friend and welcome to this small benchmark of a proxy hop in front of a fake upstream on loopback today")

// The canned answers, as each API writes them.
var (
	OpenAIStream    = openAIStream()
	AnthropicStream = anthropicStream()
	// The Responses API's answer as its typed events and as one Response
	// object, written by ctxkit's own encoders of that dialect.
	ResponsesStream, ResponsesJSON = responsesAnswer()
)

const (
	OpenAIJSON    = `{"id":"chatcmpl-bench","object":"chat.completion","created":1754000000,"model":"gpt-bench","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there friend and welcome to this small benchmark of a proxy hop in front of a fake upstream on loopback today","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":24,"completion_tokens":20,"total_tokens":44,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}},"service_tier":"default","system_fingerprint":"fp_bench"}`
	AnthropicJSON = `{"id":"msg_bench","type":"message","role":"assistant","model":"claude-bench","content":[{"type":"text","text":"Hello there friend and welcome to this small benchmark of a proxy hop in front of a fake upstream on loopback today"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":24,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":20}}`
)

// Answer is the canned answer for a request to path (/v1/chat/completions,
// /v1/messages or /v1/responses), streamed or not; ok is false for any
// other path.
func Answer(path string, stream bool) (body string, ok bool) {
	switch {
	case path == "/v1/chat/completions" && stream:
		return OpenAIStream, true
	case path == "/v1/chat/completions":
		return OpenAIJSON, true
	case path == "/v1/messages" && stream:
		return AnthropicStream, true
	case path == "/v1/messages":
		return AnthropicJSON, true
	case path == "/v1/responses" && stream:
		return ResponsesStream, true
	case path == "/v1/responses":
		return ResponsesJSON, true
	}
	return "", false
}

// Handler answers a POST to one of the three APIs' paths, streamed when
// the request body says "stream":true (spelled as the gateway and the
// benchmarks' clients write it: no space).
func Handler(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		status := http.StatusBadRequest
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			status = http.StatusRequestEntityTooLarge
		}
		http.Error(w, err.Error(), status)
		return
	}
	stream := bytes.Contains(body, []byte(`"stream":true`))
	out, ok := Answer(r.URL.Path, stream)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, out)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	// Event by event, as a model writes them: a write and a flush each, so
	// that the hop in front sees many small reads.
	f, _ := w.(http.Flusher)
	for ev := range strings.SplitAfterSeq(out, "\n\n") {
		if ev == "" {
			continue
		}
		io.WriteString(w, ev)
		if f != nil {
			f.Flush()
		}
	}
}

func responsesAnswer() (string, string) {
	var chunks []chat.Chunk
	for i, w := range Words {
		if i > 0 {
			w = " " + w
		}
		chunks = append(chunks, chat.Chunk{Type: chat.ChunkText, Text: w})
	}
	chunks = append(chunks,
		chat.Chunk{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 24, Output: 20}},
		chat.Chunk{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopEndTurn}})
	seq := func(yield func(chat.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
	}
	req := &chat.Request{Model: "resp-bench"}
	var sse bytes.Buffer
	if err := responses.EncodeStream(&sse, req, "resp-bench", "resp_bench", 1754000000, seq); err != nil {
		panic("fakeupstream: encoding the Responses stream: " + err.Error())
	}
	res, err := chat.Collect(seq)
	if err != nil {
		panic("fakeupstream: collecting the Responses answer: " + err.Error())
	}
	whole, err := responses.EncodeResponse(res, req, "resp-bench", "resp_bench", 1754000000)
	if err != nil {
		panic("fakeupstream: encoding the Responses answer: " + err.Error())
	}
	return sse.String(), string(whole)
}

func openAIStream() string {
	var b strings.Builder
	head := `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1754000000,"model":"gpt-bench","service_tier":"default","system_fingerprint":"fp_bench","choices":[{"index":0,"delta":`
	b.WriteString(head + `{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"x1"}` + "\n\n")
	for i, w := range Words {
		if i > 0 {
			w = " " + w
		}
		b.WriteString(head + `{"content":"` + w + `"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"ab"}` + "\n\n")
	}
	b.WriteString(head + `{},"logprobs":null,"finish_reason":"stop"}],"usage":null,"obfuscation":"q"}` + "\n\n")
	b.WriteString(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1754000000,"model":"gpt-bench","choices":[],"usage":{"prompt_tokens":24,"completion_tokens":20,"total_tokens":44,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

func anthropicStream() string {
	var b strings.Builder
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_bench\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-bench\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":24,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":1}}}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	b.WriteString("event: ping\ndata: {\"type\": \"ping\"}\n\n")
	for i, w := range Words {
		if i > 0 {
			w = " " + w
		}
		b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + w + "\"}}\n\n")
	}
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	b.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":20}}\n\n")
	b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return b.String()
}

// Client is a client dialect the benchmarks speak, with a request the
// canned answers fit: its path (the same on ctxkit's gateway and on an
// upstream of its own type, so a bare proxy can serve it too), headers
// (the key "k") and body.
type Client struct {
	Name   string
	Path   string
	Header http.Header
	Body   func(stream bool) string
}

// Clients are the Chat Completions, Messages and Responses clients, whose
// models are gpt-bench, claude-bench and resp-bench.
var Clients = []Client{{
	Name:   "chat",
	Path:   "/v1/chat/completions",
	Header: http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer k"}},
	Body: func(stream bool) string {
		return fmt.Sprintf(`{"model":"gpt-bench","stream":%v,"max_tokens":200,"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello in twenty words."}]}`, stream)
	},
}, {
	Name:   "messages",
	Path:   "/v1/messages",
	Header: http.Header{"Content-Type": {"application/json"}, "X-Api-Key": {"k"}, "Anthropic-Version": {"2023-06-01"}},
	Body: func(stream bool) string {
		return fmt.Sprintf(`{"model":"claude-bench","stream":%v,"max_tokens":200,"system":"You are terse.","messages":[{"role":"user","content":"Say hello in twenty words."}]}`, stream)
	},
}, {
	Name:   "responses",
	Path:   "/v1/responses",
	Header: http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer k"}},
	Body: func(stream bool) string {
		// store: false, as a client that sends the whole conversation
		// does: keeping responses is the store's cost, not the hop's.
		return fmt.Sprintf(`{"model":"resp-bench","stream":%v,"store":false,"max_output_tokens":200,"instructions":"You are terse.","input":"Say hello in twenty words."}`, stream)
	},
}}
