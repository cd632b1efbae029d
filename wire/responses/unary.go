package responses

import (
	"encoding/json"
	"fmt"

	"github.com/ctxkit/ctxkit/chat"
)

// DecodeResponse reads a Response object, the Responses API's answer to a
// request that was not streamed, as the response chat.Collect makes of
// the stream of the same answer: each output item is read as its
// output_item.done event, the status as the terminal event
// (response.completed, .incomplete or .failed). The body's size is the
// caller's to bound; its items are bounded by MaxItems, its calls as a
// stream's.
func DecodeResponse(body []byte) (chat.Response, error) {
	var r struct {
		wireResponse
		Output []wireItem `json:"output"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return chat.Response{}, fmt.Errorf("responses response: %w", err)
	}
	if len(r.Output) > MaxItems {
		return chat.Response{}, fmt.Errorf("responses response: output: more than %d items", MaxItems)
	}
	var chunks []chat.Chunk
	d := streamDecoder{yield: func(c chat.Chunk) bool { chunks = append(chunks, c); return true }, ok: true,
		byIndex: map[int]*itemState{}, byID: map[string]*itemState{}}
	for i := range r.Output {
		it := &r.Output[i]
		ev := wireEvent{Type: "response.output_item.done", OutputIndex: &i, Item: it}
		s, err := d.add(&ev)
		if err == nil {
			err = d.itemDone(s, it)
		}
		if err != nil {
			return chat.Response{}, fmt.Errorf("responses response: output[%d]: %w", i, err)
		}
	}
	terminal := "response.completed"
	switch r.Status {
	case "incomplete":
		terminal = "response.incomplete"
	case "failed":
		terminal = "response.failed"
	}
	if err := d.terminal(&wireEvent{Type: terminal, Response: &r.wireResponse}); err != nil {
		return chat.Response{}, fmt.Errorf("responses response: %w", err)
	}
	return chat.Collect(func(yield func(chat.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
	})
}
