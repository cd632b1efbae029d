package mistral_test

import (
	"errors"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/mistral"
)

// TestEmbed: Mistral is sent the texts and output_dimension, not the
// fields it refuses (dimensions, user, encoding_format), and answers in
// OpenAI's shape.
func TestEmbed(t *testing.T) {
	embed := mistral.Provider().Upstream.Embed
	parts, warns, err := embed.Encode(wire.EmbedRequest{Model: "mistral-embed", Texts: []string{"a", "b"}, Dimensions: 256, User: "u"})
	if err != nil || len(parts) != 1 || parts[0].Path != "/embeddings" || string(parts[0].Body) != `{"model":"mistral-embed","input":["a","b"],"output_dimension":256}` {
		t.Fatalf("%+v %v", parts, err)
	}
	if len(warns) != 1 || warns[0].Path != "user" {
		t.Fatalf("warnings %v", warns)
	}
	_, _, err = embed.Encode(wire.EmbedRequest{Model: "m", Tokens: [][]int{{1}}})
	var ce *chat.Error
	if !errors.As(err, &ce) || ce.Path != "input" {
		t.Fatalf("token ids: %v", err)
	}
	res, err := embed.Decode(parts[0], nil, []byte(`{"id":"x","object":"list","model":"mistral-embed","data":[{"object":"embedding","index":1,"embedding":[2]},{"object":"embedding","index":0,"embedding":[1]}],"usage":{"prompt_tokens":4,"completion_tokens":0,"total_tokens":4}}`))
	if err != nil || res.Vectors[0][0] != 1 || res.Vectors[1][0] != 2 || res.InputTokens != 4 {
		t.Fatalf("%+v %v", res, err)
	}
}
