package gemini_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/gemini"
)

var embed = gemini.Provider().Upstream.Embed

// TestEmbedEncode: texts go in batches of MaxEmbedBatch, one request per
// text naming the model, dimensions as outputDimensionality; token ids
// are refused, user dropped with a warning.
func TestEmbedEncode(t *testing.T) {
	texts := make([]string, 2*gemini.MaxEmbedBatch+1)
	for i := range texts {
		texts[i] = fmt.Sprint("t", i)
	}
	parts, warns, err := embed.Encode(wire.EmbedRequest{Model: "text-embedding-004", Texts: texts, Dimensions: 64, User: "u"})
	if err != nil || len(parts) != 3 || len(warns) != 1 || warns[0].Path != "user" {
		t.Fatalf("%d parts, %v, %v", len(parts), warns, err)
	}
	if parts[0].Path != "/v1beta/models/text-embedding-004:batchEmbedContents" || parts[2].Inputs != 1 {
		t.Fatalf("%+v", parts[0].Path)
	}
	var body struct {
		Requests []struct {
			Model   string
			Content struct{ Parts []struct{ Text string } }
			Dims    int `json:"outputDimensionality"`
		}
	}
	if err := json.Unmarshal(parts[1].Body, &body); err != nil || len(body.Requests) != gemini.MaxEmbedBatch {
		t.Fatalf("%v %s", err, parts[1].Body)
	}
	if r := body.Requests[0]; r.Model != "models/text-embedding-004" || r.Content.Parts[0].Text != "t100" || r.Dims != 64 {
		t.Fatalf("%+v", r)
	}
	_, _, err = embed.Encode(wire.EmbedRequest{Model: "m", Tokens: [][]int{{1}}})
	var ce *chat.Error
	if !errors.As(err, &ce) || ce.Path != "input" {
		t.Fatalf("token ids: %v", err)
	}
}

// TestEmbedDecode: exactly the vectors asked for, in order; no usage
// (Gemini reports none).
func TestEmbedDecode(t *testing.T) {
	res, err := embed.Decode(wire.EmbedPart{Inputs: 2}, nil, []byte(`{"embeddings":[{"values":[1,2]},{"values":[3]}]}`))
	if err != nil || len(res.Vectors) != 2 || res.Vectors[1][0] != 3 || res.Counted {
		t.Fatalf("%+v %v", res, err)
	}
	for _, body := range []string{`{"embeddings":[{"values":[1]}]}`, `{"embeddings":[{"values":[]},{"values":[1]}]}`,
		`{"embeddings":[{"values":"AACAPw=="},{"values":[1]}]}`, `{"embeddings":[{},{"values":[1]}]}`, `[`} {
		if _, err := embed.Decode(wire.EmbedPart{Inputs: 2}, nil, []byte(body)); err == nil {
			t.Errorf("%s: read", body)
		}
	}
}

func FuzzEmbedDecode(f *testing.F) {
	f.Add([]byte(`{"embeddings":[{"values":[1,2]},{"values":[3]}]}`), 2)
	f.Add([]byte(`{"embeddings":[{"values":[[1]]}]}`), 1)
	f.Fuzz(func(t *testing.T, body []byte, n int) {
		n = min(max(n, 0), 8)
		res, err := embed.Decode(wire.EmbedPart{Inputs: n}, nil, body)
		if err == nil && len(res.Vectors) != n {
			t.Fatalf("%d vectors for %d", len(res.Vectors), n)
		}
		if err == nil && n > 0 && strings.TrimSpace(string(body)) == "" {
			t.Fatal("an empty body read")
		}
	})
}
