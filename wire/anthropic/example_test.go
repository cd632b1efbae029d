package anthropic_test

import (
	"encoding/json"
	"fmt"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/anthropic"
)

// A canonical request encoded as a Messages API body: the default
// max_tokens is filled in, and an empty text block the API would reject
// is dropped with a warning naming its place.
func ExampleEncodeRequest() {
	req := chat.Request{
		Model: "claude-sonnet-4-5",
		Messages: []chat.Message{
			{Role: chat.User, Content: chat.Of(
				chat.Block{Type: chat.TypeText, Text: "What colour is the sky?"},
				chat.Block{Type: chat.TypeText, Text: " "},
			)},
		},
	}
	body, warnings, err := anthropic.EncodeRequest(req, anthropic.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.Marshal(body)
	fmt.Println(string(out))
	for _, w := range warnings {
		fmt.Println(w)
	}
	// Output:
	// {"model":"claude-sonnet-4-5","max_tokens":8192,"messages":[{"role":"user","content":[{"type":"text","text":"What colour is the sky?"}]}]}
	// messages[0].content[1]: blank text block: dropped (the API rejects empty text)
}
