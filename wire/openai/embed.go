package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/strictjson"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/internal/reqjson"
)

// EmbeddingRequest is a POST /v1/embeddings body as
// DecodeEmbeddingRequest reads it.
type EmbeddingRequest struct {
	wire.EmbedRequest
	// Base64 asks for each vector as the base64 of its little-endian
	// float32 values (encoding_format "base64", which OpenAI's Node SDK
	// sends unless told otherwise), not as JSON numbers.
	Base64 bool
}

// embeddingKeys are the fields of an embeddings request; OpenAI refuses
// any other, and so does DecodeEmbeddingRequest.
var embeddingKeys = []string{"input", "model", "encoding_format", "dimensions", "user"}

// DecodeEmbeddingRequest reads an embeddings request of the OpenAI
// dialect: model; input as a string, an array of strings, an array of
// token ids or an array of such arrays (1 to wire.MaxEmbedInputs inputs,
// none empty, at most wire.MaxEmbedTokens ids each); encoding_format
// "float" (the default) or "base64"; dimensions (1 to
// wire.MaxEmbedDimensions); user. Another field, a key given twice or a
// value of the wrong kind is refused with a *chat.Error naming it
// (input[2][0]).
func DecodeEmbeddingRequest(body []byte) (EmbeddingRequest, error) {
	var r EmbeddingRequest
	f, err := fieldsAtMost(body, "", 64)
	if tooMany(err) {
		return r, reqjson.Fail("", "more fields than an embeddings request has (%s)", strings.Join(embeddingKeys, ", "))
	}
	if err != nil {
		return r, err
	}
	for _, m := range f {
		known := false
		for _, k := range embeddingKeys {
			known = known || k == m.Key
		}
		if !known {
			return r, reqjson.Fail(m.Key, "not a field of an embeddings request (%s)", strings.Join(embeddingKeys, ", "))
		}
	}
	if v := reqjson.Get(f, "model"); v != nil {
		if r.Model, err = reqjson.String(v, "model"); err != nil {
			return r, err
		}
	}
	if r.Model == "" {
		return r, reqjson.FailCode(chat.CodeMissingField, "model", "required")
	}
	v := reqjson.Get(f, "input")
	if reqjson.IsNull(v) {
		return r, reqjson.FailCode(chat.CodeMissingField, "input", "required")
	}
	if err := r.input(v); err != nil {
		return r, err
	}
	if v := reqjson.Get(f, "encoding_format"); !reqjson.IsNull(v) {
		s, err := reqjson.String(v, "encoding_format")
		if err != nil {
			return r, err
		}
		switch s {
		case "float":
		case "base64":
			r.Base64 = true
		default:
			return r, reqjson.Fail("encoding_format", "%q is not float or base64", s)
		}
	}
	if v := reqjson.Get(f, "dimensions"); !reqjson.IsNull(v) {
		n, err := reqjson.Int(v, "dimensions")
		if err != nil {
			return r, err
		}
		if n < 1 || n > wire.MaxEmbedDimensions {
			return r, reqjson.Fail("dimensions", "must be between 1 and %d", wire.MaxEmbedDimensions)
		}
		r.Dimensions = n
	}
	if v := reqjson.Get(f, "user"); !reqjson.IsNull(v) {
		if r.User, err = reqjson.String(v, "user"); err != nil {
			return r, err
		}
	}
	return r, nil
}

// input reads the input field: a string, or an array of strings, of
// token ids or of arrays of token ids, all of one kind.
func (r *EmbeddingRequest) input(v json.RawMessage) error {
	if reqjson.IsString(v) {
		s, err := reqjson.String(v, "input")
		if err != nil {
			return err
		}
		if s == "" {
			return reqjson.Fail("input", "must not be empty")
		}
		r.Texts = []string{s}
		return nil
	}
	items, err := arrayAtMost(v, "input", wire.MaxEmbedInputs)
	if tooMany(err) {
		return reqjson.FailCode(chat.CodeTooLarge, "input", "more than %d inputs", wire.MaxEmbedInputs)
	}
	if err != nil {
		return reqjson.Fail("input", "must be a string or an array of strings or of token ids")
	}
	if len(items) == 0 {
		return reqjson.Fail("input", "must hold at least one input")
	}
	first := bytes.TrimSpace(items[0])
	switch {
	case first[0] == '"':
		r.Texts = make([]string, len(items))
		for i, it := range items {
			at := index("input", i)
			s, err := reqjson.String(it, at)
			if err != nil {
				return reqjson.Fail(at, "must be a string, as input[0] is")
			}
			if s == "" {
				return reqjson.Fail(at, "must not be empty")
			}
			r.Texts[i] = s
		}
	case first[0] == '[':
		r.Tokens = make([][]int, len(items))
		for i, it := range items {
			at := index("input", i)
			ids, err := arrayAtMost(it, at, wire.MaxEmbedTokens)
			if tooMany(err) {
				return reqjson.FailCode(chat.CodeTooLarge, at, "more than %d token ids", wire.MaxEmbedTokens)
			}
			if err != nil {
				return reqjson.Fail(at, "must be an array of token ids, as input[0] is")
			}
			if r.Tokens[i], err = tokenIDs(ids, at); err != nil {
				return err
			}
		}
	default:
		// One input given as token ids: [1, 2, 3].
		if len(items) > wire.MaxEmbedTokens {
			return reqjson.FailCode(chat.CodeTooLarge, "input", "more than %d token ids", wire.MaxEmbedTokens)
		}
		ids, err := tokenIDs(items, "input")
		if err != nil {
			return err
		}
		r.Tokens = [][]int{ids}
	}
	return nil
}

// tokenIDs reads an input given as token ids: at least one, each a
// non-negative integer.
func tokenIDs(items []json.RawMessage, path string) ([]int, error) {
	if len(items) == 0 {
		return nil, reqjson.Fail(path, "must hold at least one token id")
	}
	ids := make([]int, len(items))
	for i, it := range items {
		n, err := reqjson.Int(it, index(path, i))
		if err != nil {
			return nil, reqjson.Fail(index(path, i), "must be a token id (an integer between 0 and %d)", math.MaxInt32)
		}
		ids[i] = n
	}
	return ids, nil
}

// EncodeEmbeddingResponse is the answer to an embeddings request:
// {"object":"list","data":[{"object":"embedding","index","embedding"}],
// "model","usage":{"prompt_tokens","total_tokens"}}, each embedding an
// array of numbers or, with b64, the base64 of its little-endian float32
// values. A value that is not finite is an error: JSON has no place for
// it.
func EncodeEmbeddingResponse(model string, res wire.Embeddings, b64 bool) ([]byte, error) {
	n := 64 + len(model)
	for _, v := range res.Vectors {
		n += 48 + 12*len(v)
	}
	b := make([]byte, 0, n)
	b = append(b, `{"object":"list","data":[`...)
	var raw []byte
	for i, v := range res.Vectors {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"object":"embedding","index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"embedding":`...)
		if b64 {
			raw = raw[:0]
			for j, x := range v {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					return nil, fmt.Errorf("data[%d].embedding[%d]: not a finite number", i, j)
				}
				raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(x))
			}
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, raw)
			b = append(b, '"')
		} else {
			b = append(b, '[')
			for j, x := range v {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					return nil, fmt.Errorf("data[%d].embedding[%d]: not a finite number", i, j)
				}
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendFloat(b, float64(x), 'g', -1, 32)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, `],"model":`...)
	b = strconv.AppendQuote(b, model)
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(res.InputTokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(res.InputTokens), 10)
	b = append(b, "}}\n"...)
	return b, nil
}

// embedCall is OpenAI's embedding call: POST {base}/embeddings, one call
// for the whole request (up to 2048 inputs, token ids taken), the vectors
// asked for as base64 (a third of the bytes of JSON numbers, exactly the
// float32 values).
func embedCall() *wire.EmbedCall {
	return &wire.EmbedCall{
		Tokens: true,
		Encode: func(req wire.EmbedRequest) ([]wire.EmbedPart, []chat.Warning, error) {
			body := map[string]any{"model": req.Model, "encoding_format": "base64"}
			if req.Tokens != nil {
				body["input"] = req.Tokens
			} else {
				body["input"] = req.Texts
			}
			if req.Dimensions > 0 {
				body["dimensions"] = req.Dimensions
			}
			if req.User != "" {
				body["user"] = req.User
			}
			data, err := json.Marshal(body)
			if err != nil {
				return nil, nil, err
			}
			return []wire.EmbedPart{{Path: "/embeddings", Body: data, Inputs: req.Inputs()}}, nil, nil
		},
		Decode: func(part wire.EmbedPart, _ http.Header, body []byte) (wire.Embeddings, error) {
			return DecodeEmbeddings(body, part.Inputs)
		},
	}
}

// maxEmbedResponseDepth bounds the nesting of an embeddings answer: the
// shape nests 4 deep ({"data":[{"embedding":[...]}]}).
const maxEmbedResponseDepth = 8

// DecodeEmbeddings reads the answer of a server that speaks OpenAI's
// embeddings API (OpenAI's, Mistral's): {"data":[{"index","embedding"}],
// "usage":{"prompt_tokens"}}, each embedding an array of numbers or the
// base64 of little-endian float32 values. It must hold exactly n vectors,
// their indexes 0 to n-1 once each, none longer than
// wire.MaxEmbedDimensions nor holding a value that is not finite.
func DecodeEmbeddings(body []byte, n int) (wire.Embeddings, error) {
	var out wire.Embeddings
	var v struct {
		Data []struct {
			Index     *int            `json:"index"`
			Embedding json.RawMessage `json:"embedding"`
		} `json:"data"`
		Usage *struct {
			PromptTokens *int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if strictjson.Nesting(body) > maxEmbedResponseDepth {
		return out, fmt.Errorf("embeddings answer nests deeper than %d levels", maxEmbedResponseDepth)
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return out, fmt.Errorf("embeddings answer: %w", err)
	}
	if len(v.Data) != n {
		return out, fmt.Errorf("embeddings answer: %d vectors for %d inputs", len(v.Data), n)
	}
	out.Vectors = make([][]float32, n)
	for i, d := range v.Data {
		at := "data[" + strconv.Itoa(i) + "]"
		if d.Index == nil || *d.Index < 0 || *d.Index >= n || out.Vectors[*d.Index] != nil {
			return wire.Embeddings{}, fmt.Errorf("embeddings answer: %s.index: missing, out of range or given twice", at)
		}
		vec, err := Vector(d.Embedding)
		if err != nil {
			return wire.Embeddings{}, fmt.Errorf("embeddings answer: %s.embedding: %w", at, err)
		}
		out.Vectors[*d.Index] = vec
	}
	if v.Usage != nil && v.Usage.PromptTokens != nil && *v.Usage.PromptTokens >= 0 {
		out.InputTokens, out.Counted = *v.Usage.PromptTokens, true
	}
	return out, nil
}

// numbers reads raw, a JSON array, as float32 values: each element must
// be a number in float32's range. Three to five times as fast as encoding/json, which
// counts where an answer holds millions of values.
func numbers(raw []byte) ([]float32, error) {
	inner := bytes.TrimSpace(raw[1 : len(raw)-1])
	if len(inner) == 0 {
		return nil, nil
	}
	vec := make([]float32, 0, bytes.Count(inner, []byte{','})+1)
	for len(inner) > 0 {
		tok := inner
		if i := bytes.IndexByte(inner, ','); i >= 0 {
			tok, inner = inner[:i], inner[i+1:]
		} else {
			inner = nil
		}
		tok = bytes.TrimSpace(tok)
		// Only a JSON number's characters: ParseFloat also reads NaN,
		// Inf, hex and underscores, which JSON has not.
		f, err := strconv.ParseFloat(string(tok), 32)
		if err != nil || len(tok) == 0 || strings.Trim(string(tok), "0123456789+-.eE") != "" {
			return nil, fmt.Errorf("[%d]: %.40q is not a float32 number", len(vec), tok)
		}
		vec = append(vec, float32(f))
	}
	return vec, nil
}

// Vector reads an embedding as an array of numbers or as the base64 of
// little-endian float32 values: non-empty, at most wire.MaxEmbedDimensions
// values, all finite.
func Vector(raw json.RawMessage) ([]float32, error) {
	raw = bytes.TrimSpace(raw)
	var vec []float32
	switch {
	case len(raw) > 0 && raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		if base64.StdEncoding.DecodedLen(len(s)) > 4*wire.MaxEmbedDimensions {
			return nil, fmt.Errorf("longer than %d values", wire.MaxEmbedDimensions)
		}
		data, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("not base64: %w", err)
		}
		if len(data)%4 != 0 {
			return nil, fmt.Errorf("%d bytes: not float32 values", len(data))
		}
		vec = make([]float32, len(data)/4)
		for i := range vec {
			vec[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
	case len(raw) > 0 && raw[0] == '[':
		// Counted before they are decoded: commas bound the values.
		if bytes.Count(raw, []byte{','}) >= wire.MaxEmbedDimensions {
			return nil, fmt.Errorf("longer than %d values", wire.MaxEmbedDimensions)
		}
		var err error
		if vec, err = numbers(raw); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("not an array of numbers nor a base64 string")
	}
	if len(vec) == 0 {
		return nil, fmt.Errorf("empty")
	}
	for j, x := range vec {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("[%d]: not a finite number", j)
		}
	}
	return vec, nil
}

// withEmbed is up with OpenAI's embedding call (the compatible servers
// that reuse CompatibleUpstream have none, or their own).
func withEmbed(up *wire.Upstream) *wire.Upstream {
	up.Embed = embedCall()
	return up
}
