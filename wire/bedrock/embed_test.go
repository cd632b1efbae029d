package bedrock_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/bedrock"
)

var embed = bedrock.Provider().Upstream.Embed

// TestEmbedEncode: the model id picks the body: Titan one text a call,
// Cohere 96 texts a call with an input type; dimensions only where the
// model takes them, others refused naming the field.
func TestEmbedEncode(t *testing.T) {
	texts := make([]string, bedrock.MaxCohereTexts+1)
	for i := range texts {
		texts[i] = "x"
	}
	parts, _, err := embed.Encode(wire.EmbedRequest{Model: "amazon.titan-embed-text-v2:0", Texts: texts[:3], Dimensions: 512})
	if err != nil || len(parts) != 3 || parts[0].Path != "/model/amazon.titan-embed-text-v2:0/invoke" || string(parts[0].Body) != `{"inputText":"x","dimensions":512}` {
		t.Fatalf("%+v %v", parts, err)
	}
	parts, warns, err := embed.Encode(wire.EmbedRequest{Model: "us.cohere.embed-v4:0", Texts: texts, Dimensions: 1536, User: "u"})
	if err != nil || len(parts) != 2 || parts[1].Inputs != 1 || len(warns) != 1 {
		t.Fatalf("%+v %v %v", parts, warns, err)
	}
	var body map[string]any
	json.Unmarshal(parts[0].Body, &body)
	if body["input_type"] != "search_document" || len(body["texts"].([]any)) != 96 || body["output_dimension"] != 1536.0 || body["embedding_types"] == nil {
		t.Fatalf("%s", parts[0].Body)
	}
	for _, tc := range []struct {
		req  wire.EmbedRequest
		path string
	}{
		{wire.EmbedRequest{Model: "amazon.titan-embed-text-v2:0", Texts: []string{"x"}, Dimensions: 300}, "dimensions"},
		{wire.EmbedRequest{Model: "amazon.titan-embed-text-v1", Texts: []string{"x"}, Dimensions: 256}, "dimensions"},
		{wire.EmbedRequest{Model: "cohere.embed-english-v3", Texts: []string{"x"}, Dimensions: 256}, "dimensions"},
		{wire.EmbedRequest{Model: "anthropic.claude-3", Texts: []string{"x"}}, "model"},
		{wire.EmbedRequest{Model: "cohere.embed-english-v3", Tokens: [][]int{{1}}}, "input"},
	} {
		_, _, err := embed.Encode(tc.req)
		var ce *chat.Error
		if !errors.As(err, &ce) || ce.Path != tc.path {
			t.Errorf("%+v: %v, want a fault at %s", tc.req, err, tc.path)
		}
	}
}

// TestEmbedDecode: Titan's answer with its token count, Cohere's in both
// shapes with the count from the body or the header.
func TestEmbedDecode(t *testing.T) {
	one := wire.EmbedPart{Inputs: 1}
	res, err := embed.Decode(one, http.Header{}, []byte(`{"embedding":[0.5,1],"inputTextTokenCount":4,"embeddingsByType":{"float":[0.5,1]}}`))
	if err != nil || len(res.Vectors) != 1 || res.Vectors[0][1] != 1 || res.InputTokens != 4 || !res.Counted {
		t.Fatalf("%+v %v", res, err)
	}
	h := http.Header{"X-Amzn-Bedrock-Input-Token-Count": {"7"}}
	res, err = embed.Decode(wire.EmbedPart{Inputs: 2}, h, []byte(`{"id":"c","response_type":"embeddings_floats","embeddings":[[1],[2]],"texts":["a","b"]}`))
	if err != nil || res.Vectors[1][0] != 2 || res.InputTokens != 7 || !res.Counted {
		t.Fatalf("%+v %v", res, err)
	}
	res, err = embed.Decode(one, http.Header{}, []byte(`{"response_type":"embeddings_by_type","embeddings":{"float":[[3]]},"meta":{"billed_units":{"input_tokens":2}}}`))
	if err != nil || res.Vectors[0][0] != 3 || res.InputTokens != 2 || !res.Counted {
		t.Fatalf("%+v %v", res, err)
	}
	res, err = embed.Decode(one, http.Header{}, []byte(`{"embeddings":[[3]]}`))
	if err != nil || res.Counted {
		t.Fatalf("no count read as one: %+v %v", res, err)
	}
	for _, body := range []string{`{}`, `{"embeddings":[[1],[2]]}`, `{"embeddings":{"int8":[[1]]}}`, `{"embedding":"AACAPw=="}`, `{"embeddings":[[]]}`, `{"embeddings":["x"]}`} {
		if _, err := embed.Decode(one, http.Header{}, []byte(body)); err == nil {
			t.Errorf("%s: read", body)
		}
	}
}

func FuzzEmbedDecode(f *testing.F) {
	f.Add([]byte(`{"embedding":[0.5,1],"inputTextTokenCount":4}`), 1, "")
	f.Add([]byte(`{"embeddings":{"float":[[3],[4]]},"meta":{"billed_units":{"input_tokens":2}}}`), 2, "9")
	f.Fuzz(func(t *testing.T, body []byte, n int, count string) {
		n = min(max(n, 0), 8)
		res, err := embed.Decode(wire.EmbedPart{Inputs: n}, http.Header{"X-Amzn-Bedrock-Input-Token-Count": {count}}, body)
		if err != nil {
			return
		}
		if len(res.Vectors) != n || res.InputTokens < 0 {
			t.Fatalf("%d vectors for %d, %d tokens", len(res.Vectors), n, res.InputTokens)
		}
	})
}
