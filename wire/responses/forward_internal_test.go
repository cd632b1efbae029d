package responses

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
)

// TestForwardMatchesShape checks that the forwarder reads the deltas of
// one item by the shape of the first, as the API writes them (numbered,
// padded with obfuscation), rather than key by key; the client's bytes
// are held to the encoder's by TestForwardMatchesEncode.
func TestForwardMatchesShape(t *testing.T) {
	var b strings.Builder
	b.WriteString("event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":0,\"output_index\":0,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"status\":\"in_progress\",\"content\":[],\"role\":\"assistant\"}}\n\n")
	const n = 20
	for i := range n {
		fmt.Fprintf(&b, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":%d,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"w%d \",\"logprobs\":[],\"obfuscation\":\"%s\"}\n\n",
			i+1, i, strings.Repeat("x", i%7))
	}
	b.WriteString("event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":99,\"response\":{\"status\":\"completed\",\"usage\":null}}\n\n")
	fw := forward(wire.Outgoing{Request: &chat.Request{Model: "m"}, Model: "m", ID: "resp_x", Created: 1}, wire.ForwardOptions{}).(*forwarder)
	var out bytes.Buffer
	if err := fw.Stream(&out, fw.Decode(strings.NewReader(b.String()))); err != nil {
		t.Fatal(err)
	}
	// The first delta is read key by key (and opens the client's item
	// through the chunks); every other one by its shape.
	if fw.matched != n-1 {
		t.Errorf("%d deltas read by their shape, want %d", fw.matched, n-1)
	}
	if got := strings.Count(out.String(), "response.output_text.delta\n"); got != n {
		t.Errorf("%d deltas written, want %d", got, n)
	}
}

// TestEncoderKeepsLargeEcho: a stream whose request echo is large keeps
// its JSON from the first event for the last, which then reads as it
// would encoded anew; a small echo is encoded again.
func TestEncoderKeepsLargeEcho(t *testing.T) {
	tools := []chat.Tool{{Name: "get", Description: strings.Repeat("d\u2028", 300), InputSchema: []byte(`{"type":"object"}`)}}
	for _, req := range []*chat.Request{
		{Model: "m", Tools: tools, System: &chat.Content{IsString: true, Text: "be brief"}},
		{Model: "m", System: &chat.Content{IsString: true, Text: "be brief"}},
	} {
		e := newStreamEncoder(io.Discard, req, "m", "resp_1", 1)
		if err := e.begin(); err != nil {
			t.Fatal(err)
		}
		if kept := e.resp.echo != nil; kept != (len(req.Tools) > 0) {
			t.Fatalf("%d tools: echo kept %v", len(req.Tools), kept)
		}
		kept := e.resp.appendJSON(nil)
		e.resp.echo = nil
		anew := e.resp.appendJSON(nil)
		if !bytes.Equal(kept, anew) {
			t.Fatalf("the kept echo writes\n%s\nencoded anew\n%s", kept, anew)
		}
		e.release()
	}
}
