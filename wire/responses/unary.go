package responses

import (
	"encoding/json"
	"fmt"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/jsonscan"
)

// DecodeResponse reads a Response object, the Responses API's answer to a
// request that was not streamed, as the response chat.Collect makes of
// the stream of the same answer: each output item is read as its
// output_item.done event, the status as the terminal event
// (response.completed, .incomplete or .failed). The body's size is the
// caller's to bound; its items are bounded by MaxItems, its calls as a
// stream's.
func DecodeResponse(body []byte) (chat.Response, error) {
	var r wireBody
	if err := parseBody(body, &r); err != nil {
		return chat.Response{}, fmt.Errorf("responses response: %w", err)
	}
	if len(r.Output) > MaxItems {
		return chat.Response{}, fmt.Errorf("responses response: output: more than %d items", MaxItems)
	}
	var chunks []chat.Chunk
	d := newStreamDecoder(func(c chat.Chunk) bool { chunks = append(chunks, c); return true })
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

// wireBody is a Response object, only the fields ctxkit reads.
type wireBody struct {
	wireResponse
	Output []wireItem `json:"output"`
}

// parseBody decodes body into r (zero) as json.Unmarshal would: in one
// pass when the fast path can (see fast.go), else with encoding/json.
func parseBody(body []byte, r *wireBody) error {
	s := jsonscan.New(body)
	if scanResponse(s, &r.wireResponse, &r.Output, nil) && s.End() {
		return nil
	}
	*r = wireBody{}
	return json.Unmarshal(body, r)
}
