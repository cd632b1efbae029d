package bedrock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/strictjson"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/openai"
)

// MaxCohereTexts is how many texts one Cohere Embed call takes on Bedrock.
const MaxCohereTexts = 96

// embedCall is Bedrock's embedding call: POST
// {base}/model/{model}/invoke with the body of the model's family, which
// the model id names (a base model id, a regional inference profile such
// as us.cohere.embed-v4:0, or an ARN holding one):
//
//   - Amazon Titan Text Embeddings (amazon.titan-embed-text-v2:0, v1):
//     {"inputText"}, one call per text; dimensions (v2 only) 256, 512 or
//     1024; the answer's inputTextTokenCount is the usage.
//   - Cohere Embed (cohere.embed-english-v3, cohere.embed-multilingual-v3,
//     cohere.embed-v4:0): {"texts","input_type":"search_document"}, 96
//     texts a call (OpenAI's request has no input type: the one for
//     documents to store is the common use); dimensions (v4 only) 256,
//     512, 1024 or 1536 as output_dimension; usage from
//     meta.billed_units.input_tokens or the
//     X-Amzn-Bedrock-Input-Token-Count header when either is there.
//
// Other models, and dimensions a model does not take, are refused. Text
// only; user is dropped with a warning.
func embedCall() *wire.EmbedCall {
	return &wire.EmbedCall{Encode: encodeEmbed, Decode: decodeEmbed}
}

// embedFamily is which body the model takes: "titan", "titan-v2",
// "cohere", "cohere-v4", or "" for none ctxkit knows.
func embedFamily(model string) string {
	switch {
	case strings.Contains(model, "titan-embed-text-v2"):
		return "titan-v2"
	case strings.Contains(model, "titan-embed"):
		return "titan"
	case strings.Contains(model, "cohere.embed-v4"):
		return "cohere-v4"
	case strings.Contains(model, "cohere.embed"):
		return "cohere"
	}
	return ""
}

func encodeEmbed(req wire.EmbedRequest) ([]wire.EmbedPart, []chat.Warning, error) {
	if req.Tokens != nil {
		return nil, nil, &chat.Error{Code: chat.CodeInvalidValue, Path: "input", Msg: "bedrock takes text inputs, not token ids"}
	}
	family := embedFamily(req.Model)
	var dims []int
	switch family {
	case "":
		return nil, nil, &chat.Error{Code: chat.CodeInvalidValue, Path: "model",
			Msg: fmt.Sprintf("%q: ctxkit knows the Bedrock embedding bodies of Amazon Titan Text Embeddings and Cohere Embed models only", req.Model)}
	case "titan-v2":
		dims = []int{256, 512, 1024}
	case "cohere-v4":
		dims = []int{256, 512, 1024, 1536}
	}
	if req.Dimensions != 0 && !slices.Contains(dims, req.Dimensions) {
		msg := fmt.Sprintf("bedrock model %s takes no dimensions", req.Model)
		if dims != nil {
			msg = fmt.Sprintf("bedrock model %s takes dimensions %s, not %d", req.Model, strings.Trim(fmt.Sprint(dims), "[]"), req.Dimensions)
		}
		return nil, nil, &chat.Error{Code: chat.CodeInvalidValue, Path: "dimensions", Msg: msg}
	}
	var warns []chat.Warning
	if req.User != "" {
		warns = append(warns, chat.Warnf("user", "bedrock takes no end-user id: not sent"))
	}
	path := "/model/" + url.PathEscape(req.Model) + "/invoke"
	var parts []wire.EmbedPart
	if strings.HasPrefix(family, "titan") {
		for _, t := range req.Texts {
			data, err := json.Marshal(struct {
				InputText  string `json:"inputText"`
				Dimensions int    `json:"dimensions,omitempty"`
			}{t, req.Dimensions})
			if err != nil {
				return nil, nil, err
			}
			parts = append(parts, wire.EmbedPart{Path: path, Body: data, Inputs: 1})
		}
		return parts, warns, nil
	}
	for start := 0; start < len(req.Texts); start += MaxCohereTexts {
		texts := req.Texts[start:min(start+MaxCohereTexts, len(req.Texts))]
		body := struct {
			Texts           []string `json:"texts"`
			InputType       string   `json:"input_type"`
			EmbeddingTypes  []string `json:"embedding_types,omitempty"`
			OutputDimension int      `json:"output_dimension,omitempty"`
		}{Texts: texts, InputType: "search_document", OutputDimension: req.Dimensions}
		if family == "cohere-v4" {
			body.EmbeddingTypes = []string{"float"}
		}
		data, err := json.Marshal(body)
		if err != nil {
			return nil, nil, err
		}
		parts = append(parts, wire.EmbedPart{Path: path, Body: data, Inputs: len(texts)})
	}
	return parts, warns, nil
}

// decodeEmbed reads a Titan answer ({"embedding","inputTextTokenCount"})
// or a Cohere one ({"embeddings":[[…]]} or, by type,
// {"embeddings":{"float":[[…]]}}): exactly part.Inputs vectors.
func decodeEmbed(part wire.EmbedPart, h http.Header, body []byte) (wire.Embeddings, error) {
	var out wire.Embeddings
	if strictjson.Nesting(body) > 8 {
		return out, fmt.Errorf("embedding answer nests too deep")
	}
	var v struct {
		Embedding           json.RawMessage `json:"embedding"`
		InputTextTokenCount *int            `json:"inputTextTokenCount"`
		Embeddings          json.RawMessage `json:"embeddings"`
		Meta                *struct {
			BilledUnits *struct {
				InputTokens *int `json:"input_tokens"`
			} `json:"billed_units"`
		} `json:"meta"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return out, fmt.Errorf("embedding answer: %w", err)
	}
	var raws []json.RawMessage
	switch e := bytes.TrimSpace(v.Embeddings); {
	case len(v.Embedding) > 0:
		raws = []json.RawMessage{v.Embedding}
		if n := v.InputTextTokenCount; n != nil && *n >= 0 {
			out.InputTokens, out.Counted = *n, true
		}
	case len(e) > 0 && e[0] == '{':
		var byType struct {
			Float []json.RawMessage `json:"float"`
		}
		if err := json.Unmarshal(e, &byType); err != nil || byType.Float == nil {
			return out, fmt.Errorf("embedding answer: embeddings: no float vectors")
		}
		raws = byType.Float
	case len(e) > 0:
		if err := json.Unmarshal(e, &raws); err != nil {
			return out, fmt.Errorf("embedding answer: embeddings: %w", err)
		}
	default:
		return out, fmt.Errorf("embedding answer: no embedding")
	}
	if len(raws) != part.Inputs {
		return out, fmt.Errorf("embedding answer: %d vectors for %d texts", len(raws), part.Inputs)
	}
	out.Vectors = make([][]float32, len(raws))
	for i, raw := range raws {
		if r := bytes.TrimSpace(raw); len(r) == 0 || r[0] != '[' {
			return wire.Embeddings{}, fmt.Errorf("embedding answer: vector %d: not an array of numbers", i)
		}
		vec, err := openai.Vector(raw)
		if err != nil {
			return wire.Embeddings{}, fmt.Errorf("embedding answer: vector %d: %w", i, err)
		}
		out.Vectors[i] = vec
	}
	if !out.Counted {
		if m := v.Meta; m != nil && m.BilledUnits != nil && m.BilledUnits.InputTokens != nil && *m.BilledUnits.InputTokens >= 0 {
			out.InputTokens, out.Counted = *m.BilledUnits.InputTokens, true
		} else if n, err := strconv.Atoi(h.Get("X-Amzn-Bedrock-Input-Token-Count")); err == nil && n >= 0 {
			out.InputTokens, out.Counted = n, true
		}
	}
	return out, nil
}
