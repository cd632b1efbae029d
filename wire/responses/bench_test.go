package responses_test

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/responses"
)

// The answer the benchmarks pass through: twenty words of text, as the
// gateway's proxy benchmark has its fake upstream answer, written as the
// API writes it — typed events and one Response object — by this
// package's own encoders, for a request that sets what a client usually
// sets (so the response objects echo it, as the API's do).
var (
	benchReq = &chat.Request{Model: "resp-bench", MaxTokens: 200,
		System: &chat.Content{IsString: true, Text: "You are terse."},
		Tools: []chat.Tool{{Name: "get_weather", Description: "The weather of a city.",
			InputSchema: []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}}}
	benchChunks = func() []chat.Chunk {
		var out []chat.Chunk
		for i, w := range strings.Fields("Hello there friend and welcome to this small benchmark of a proxy hop in front of a fake upstream on loopback today") {
			if i > 0 {
				w = " " + w
			}
			out = append(out, chat.Chunk{Type: chat.ChunkText, Text: w})
		}
		return append(out,
			chat.Chunk{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 24, Output: 20}},
			chat.Chunk{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopEndTurn}})
	}()
	benchSSE = func() []byte {
		var buf bytes.Buffer
		if err := responses.EncodeStream(&buf, benchReq, "resp-bench", "resp_up", 1754000000, replay(benchChunks)); err != nil {
			panic(err)
		}
		return buf.Bytes()
	}()
	benchJSON = func() []byte {
		res, err := chat.Collect(replay(benchChunks))
		if err != nil {
			panic(err)
		}
		body, err := responses.EncodeResponse(res, benchReq, "resp-bench", "resp_up", 1754000000)
		if err != nil {
			panic(err)
		}
		return body
	}()
)

// BenchmarkStreamHop is the dialect's share of a streamed request through
// the gateway with a Responses upstream and a Responses client: the
// upstream's events decoded to chunks, which are encoded as the client's
// events, with no network in between.
//
//	go test ./wire/responses -run '^$' -bench Hop -benchmem
func BenchmarkStreamHop(b *testing.B) {
	b.SetBytes(int64(len(benchSSE)))
	b.ReportAllocs()
	for b.Loop() {
		chunks := responses.DecodeStream(bytes.NewReader(benchSSE))
		if err := responses.EncodeStream(io.Discard, benchReq, "resp-bench", "resp_hop", 1754000001, chunks); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamHopDecode is the decoding half of BenchmarkStreamHop.
func BenchmarkStreamHopDecode(b *testing.B) {
	b.SetBytes(int64(len(benchSSE)))
	b.ReportAllocs()
	for b.Loop() {
		for _, err := range responses.DecodeStream(bytes.NewReader(benchSSE)) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkStreamHopEncode is the encoding half of BenchmarkStreamHop.
func BenchmarkStreamHopEncode(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if err := responses.EncodeStream(io.Discard, benchReq, "resp-bench", "resp_hop", 1754000001, replay(benchChunks)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnaryHop is the dialect's share of a request that is not
// streamed: the upstream's Response object decoded, and the client's
// written.
func BenchmarkUnaryHop(b *testing.B) {
	b.SetBytes(int64(len(benchJSON)))
	b.ReportAllocs()
	for b.Loop() {
		res, err := responses.DecodeResponse(benchJSON)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := responses.EncodeResponse(res, benchReq, "resp-bench", "resp_hop", 1754000001); err != nil {
			b.Fatal(err)
		}
	}
}
