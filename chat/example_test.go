package chat_test

import (
	"encoding/json"
	"fmt"

	"github.com/ctxkit/ctxkit/chat"
)

// A request in the canonical (Messages) shape, decoded strictly and its
// parameters resolved for one wire format.
func ExampleDecodeRequest() {
	req, err := chat.DecodeRequest([]byte(`{
		"model": "claude-sonnet-4-5",
		"system": "Answer in one word.",
		"messages": [{"role": "user", "content": "What colour is the sky?"}],
		"temperature": 0.2
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(req.Model, len(req.Messages), req.Messages[0].Role)
	p, warnings := chat.ResolveParams(req, chat.FormatAnthropic)
	fmt.Println(p.MaxTokens, *p.Temperature, len(warnings))
	// Output:
	// claude-sonnet-4-5 1 user
	// 8192 0.2 0
}

// A stream of chunks, as a wire package's decoder yields them, put
// together into the response a non-streaming client gets.
func ExampleCollect() {
	chunks := []chat.Chunk{
		{Type: chat.ChunkText, Text: "Blue"},
		{Type: chat.ChunkText, Text: "."},
		{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopEndTurn}},
	}
	resp, err := chat.Collect(func(yield func(chat.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.Marshal(resp.Content)
	fmt.Println(string(out), resp.Stop.Reason)
	// Output:
	// [{"type":"text","text":"Blue."}] end_turn
}
