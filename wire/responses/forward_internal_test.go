package responses

import (
	"bytes"
	"fmt"
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
