package responses_test

import (
	"bytes"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
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

// BenchmarkStreamHopForward is BenchmarkStreamHop through the dialect's
// Forwarder, which writes the text deltas after an item's first as they
// are read: the same client stream.
func BenchmarkStreamHopForward(b *testing.B) {
	b.SetBytes(int64(len(benchSSE)))
	b.ReportAllocs()
	out := wire.Outgoing{Request: benchReq, Model: "resp-bench", ID: "resp_hop", Created: 1754000001}
	for b.Loop() {
		fw := responses.Dialect().Forward(out, wire.ForwardOptions{})
		if err := fw.Stream(io.Discard, fw.Decode(bytes.NewReader(benchSSE))); err != nil {
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

// eventChunks are an answer of every kind of item, with many deltas, for
// BenchmarkStreamEncodeEvents: reasoning (120 deltas and a signature),
// text (400 deltas) and two tool calls (60 argument fragments each), with
// usage and a stop.
var eventChunks = func() []chat.Chunk {
	var out []chat.Chunk
	for i := range 120 {
		out = append(out, chat.Chunk{Type: chat.ChunkReasoning, Text: "step " + strings.Repeat("x", i%7) + " "})
	}
	out = append(out, chat.Chunk{Type: chat.ChunkReasoning, Signature: "gAAAAABsignature"})
	for i := range 400 {
		out = append(out, chat.Chunk{Type: chat.ChunkText, Text: " word" + strings.Repeat("é", i%3) + "\n"})
	}
	for k := range 2 {
		out = append(out, chat.Chunk{Type: chat.ChunkToolCallStart, Index: k, ID: "call_" + strings.Repeat("a", k+1), Name: "get_weather"})
		for range 60 {
			out = append(out, chat.Chunk{Type: chat.ChunkToolCallDelta, Index: k, Arguments: `{"city":"Par`})
		}
		out = append(out, chat.Chunk{Type: chat.ChunkToolCallEnd, Index: k})
	}
	return append(out,
		chat.Chunk{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 240, Output: 700, Reasoning: 120}},
		chat.Chunk{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopToolUse}})
}()

// BenchmarkStreamEncodeEvents is the stream encoder's cost per event it
// writes (ns/event, allocs/event, B/event), over a long answer of every
// kind of item, so that what each event costs shows apart from what a
// stream costs once (the response objects at its start and end).
//
//	go test ./wire/responses -run '^$' -bench EncodeEvents -benchmem
func BenchmarkStreamEncodeEvents(b *testing.B) {
	var out bytes.Buffer
	if err := responses.EncodeStream(&out, benchReq, "resp-bench", "resp_ev", 1754000001, replay(eventChunks)); err != nil {
		b.Fatal(err)
	}
	events := bytes.Count(out.Bytes(), []byte("\nevent: ")) + 1
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n := 0
	for b.Loop() {
		if err := responses.EncodeStream(io.Discard, benchReq, "resp-bench", "resp_ev", 1754000001, replay(eventChunks)); err != nil {
			b.Fatal(err)
		}
		n++
	}
	runtime.ReadMemStats(&after)
	per := float64(n * events)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/per, "ns/event")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/per, "allocs/event")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/per, "B/event")
}
