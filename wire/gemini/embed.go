package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/strictjson"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/openai"
)

// MaxEmbedBatch is how many texts one batchEmbedContents call takes: the
// API refuses more ("at most 100 requests can be in one batch").
const MaxEmbedBatch = 100

// embedCall is the Gemini API's embedding call: POST
// {base}/v1beta/models/{model}:batchEmbedContents with one request per
// text, MaxEmbedBatch texts a call; dimensions become
// outputDimensionality. The API takes text only, reports no token count
// (the gateway estimates it) and takes no end-user id (user is dropped
// with a warning).
func embedCall() *wire.EmbedCall {
	return &wire.EmbedCall{
		Encode: encodeEmbed,
		Decode: func(part wire.EmbedPart, _ http.Header, body []byte) (wire.Embeddings, error) {
			return decodeEmbed(body, part.Inputs)
		},
	}
}

type embedText struct {
	Text string `json:"text"`
}

type embedContent struct {
	Parts []embedText `json:"parts"`
}

type embedRequest struct {
	Model                string       `json:"model"`
	Content              embedContent `json:"content"`
	OutputDimensionality int          `json:"outputDimensionality,omitempty"`
}

func encodeEmbed(req wire.EmbedRequest) ([]wire.EmbedPart, []chat.Warning, error) {
	if req.Tokens != nil {
		return nil, nil, &chat.Error{Code: chat.CodeInvalidValue, Path: "input", Msg: "gemini takes text inputs, not token ids"}
	}
	var warns []chat.Warning
	if req.User != "" {
		warns = append(warns, chat.Warnf("user", "gemini takes no end-user id: not sent"))
	}
	path := "/v1beta/models/" + url.PathEscape(req.Model) + ":batchEmbedContents"
	name := "models/" + req.Model
	var parts []wire.EmbedPart
	for start := 0; start < len(req.Texts); start += MaxEmbedBatch {
		texts := req.Texts[start:min(start+MaxEmbedBatch, len(req.Texts))]
		rs := make([]embedRequest, len(texts))
		for i, t := range texts {
			rs[i] = embedRequest{Model: name, Content: embedContent{Parts: []embedText{{t}}}, OutputDimensionality: req.Dimensions}
		}
		data, err := json.Marshal(struct {
			Requests []embedRequest `json:"requests"`
		}{rs})
		if err != nil {
			return nil, nil, err
		}
		parts = append(parts, wire.EmbedPart{Path: path, Body: data, Inputs: len(texts)})
	}
	return parts, warns, nil
}

// decodeEmbed reads {"embeddings":[{"values":[…]}…]}: exactly n vectors,
// each non-empty, finite and at most wire.MaxEmbedDimensions long.
func decodeEmbed(body []byte, n int) (wire.Embeddings, error) {
	var out wire.Embeddings
	if strictjson.Nesting(body) > 8 {
		return out, fmt.Errorf("batchEmbedContents answer nests too deep")
	}
	var v struct {
		Embeddings []struct {
			Values json.RawMessage `json:"values"`
		} `json:"embeddings"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return out, fmt.Errorf("batchEmbedContents answer: %w", err)
	}
	if len(v.Embeddings) != n {
		return out, fmt.Errorf("batchEmbedContents answer: %d vectors for %d texts", len(v.Embeddings), n)
	}
	out.Vectors = make([][]float32, n)
	for i, e := range v.Embeddings {
		vec, err := openai.Vector(e.Values)
		if err != nil || bytes.TrimSpace(e.Values)[0] != '[' {
			if err == nil {
				err = fmt.Errorf("not an array of numbers")
			}
			return wire.Embeddings{}, fmt.Errorf("batchEmbedContents answer: embeddings[%s].values: %w", strconv.Itoa(i), err)
		}
		out.Vectors[i] = vec
	}
	return out, nil
}
