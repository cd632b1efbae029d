package openai_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/openai"
)

// TestDecodeEmbeddingRequest: every form of input OpenAI takes, and each
// fault refused with the field at fault.
func TestDecodeEmbeddingRequest(t *testing.T) {
	for _, tc := range []struct {
		body   string
		texts  []string
		tokens [][]int
		b64    bool
		dims   int
		user   string
	}{
		{body: `{"model":"m","input":"hi"}`, texts: []string{"hi"}},
		{body: `{"model":"m","input":["a","b"],"encoding_format":"base64","dimensions":256,"user":"u"}`, texts: []string{"a", "b"}, b64: true, dims: 256, user: "u"},
		{body: `{"model":"m","input":[1,2,3],"encoding_format":"float"}`, tokens: [][]int{{1, 2, 3}}},
		{body: `{"model":"m","input":[[1],[2,3]],"dimensions":null,"user":null}`, tokens: [][]int{{1}, {2, 3}}},
	} {
		r, err := openai.DecodeEmbeddingRequest([]byte(tc.body))
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		if r.Model != "m" || !slices.Equal(r.Texts, tc.texts) || len(r.Tokens) != len(tc.tokens) || r.Base64 != tc.b64 || r.Dimensions != tc.dims || r.User != tc.user {
			t.Fatalf("%s: %+v", tc.body, r)
		}
		for i := range tc.tokens {
			if !slices.Equal(r.Tokens[i], tc.tokens[i]) {
				t.Fatalf("%s: tokens %v", tc.body, r.Tokens)
			}
		}
	}
	many := `{"model":"m","input":[` + strings.Repeat(`"x",`, wire.MaxEmbedInputs) + `"x"]}`
	for _, tc := range []struct{ body, path string }{
		{`[]`, ""},
		{`{"input":"x"}`, "model"},
		{`{"model":"m"}`, "input"},
		{`{"model":"m","input":null}`, "input"},
		{`{"model":"m","input":""}`, "input"},
		{`{"model":"m","input":[]}`, "input"},
		{`{"model":"m","input":[[]]}`, "input[0]"},
		{`{"model":"m","input":["a",1]}`, "input[1]"},
		{`{"model":"m","input":[[1],"a"]}`, "input[1]"},
		{`{"model":"m","input":[1,1.5]}`, "input[1]"},
		{`{"model":"m","input":[true]}`, "input[0]"},
		{`{"model":"m","input":{"text":"x"}}`, "input"},
		{many, "input"},
		{`{"model":"m","input":"x","encoding_format":"int8"}`, "encoding_format"},
		{`{"model":"m","input":"x","dimensions":0}`, "dimensions"},
		{`{"model":"m","input":"x","dimensions":"8"}`, "dimensions"},
		{`{"model":"m","input":"x","user":5}`, "user"},
		{`{"model":"m","input":"x","task":"q"}`, "task"},
		{`{"model":"m","model":"n","input":"x"}`, "model"},
		{`{"model":"m","input":"x","a":1,"b":2,"c":3,"d":4}`, "a"},
		{`{"model":"m","input":"x"` + strings.Repeat(`,"k":1`, 70) + `}`, ""},
	} {
		_, err := openai.DecodeEmbeddingRequest([]byte(tc.body))
		var ce *chat.Error
		if !errors.As(err, &ce) || ce.Path != tc.path {
			t.Errorf("%.80s: %v, want a fault at %q", tc.body, err, tc.path)
		}
	}
}

// TestEmbeddingResponseRoundTrip: what EncodeEmbeddingResponse writes,
// numbers or base64, DecodeEmbeddings reads back bit for bit; a value
// JSON cannot hold is refused.
func TestEmbeddingResponseRoundTrip(t *testing.T) {
	in := wire.Embeddings{Vectors: [][]float32{{0.1, -2.5e-8, 3}, {math.MaxFloat32, math.SmallestNonzeroFloat32, 0}}, InputTokens: 9}
	for _, b64 := range []bool{false, true} {
		data, err := openai.EncodeEmbeddingResponse("m", in, b64)
		if err != nil {
			t.Fatal(err)
		}
		var shape struct {
			Object string
			Model  string
			Usage  struct{ PromptTokens, TotalTokens int }
		}
		if json.Unmarshal(data, &shape) != nil || shape.Object != "list" || shape.Model != "m" {
			t.Fatalf("%s", data)
		}
		out, err := openai.DecodeEmbeddings(data, 2)
		if err != nil {
			t.Fatal(err)
		}
		for i := range in.Vectors {
			if !slices.Equal(in.Vectors[i], out.Vectors[i]) {
				t.Fatalf("b64 %v: %v, want %v", b64, out.Vectors[i], in.Vectors[i])
			}
		}
		if !out.Counted || out.InputTokens != 9 {
			t.Fatalf("%+v", out)
		}
	}
	// The base64 is the little-endian float32 values, as OpenAI's SDKs read it.
	data, _ := openai.EncodeEmbeddingResponse("m", wire.Embeddings{Vectors: [][]float32{{1}}}, true)
	if !strings.Contains(string(data), `"embedding":"`+base64.StdEncoding.EncodeToString(binary.LittleEndian.AppendUint32(nil, math.Float32bits(1)))+`"`) {
		t.Fatalf("%s", data)
	}
	for _, b64 := range []bool{false, true} {
		if _, err := openai.EncodeEmbeddingResponse("m", wire.Embeddings{Vectors: [][]float32{{float32(math.NaN())}}}, b64); err == nil {
			t.Fatal("NaN encoded")
		}
	}
}

// TestDecodeEmbeddingsRefuses: an answer that does not fit the request is
// an error, not a wrong answer.
func TestDecodeEmbeddingsRefuses(t *testing.T) {
	nan := base64.StdEncoding.EncodeToString(binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(math.NaN()))))
	for _, body := range []string{
		`{"data":[{"index":0,"embedding":[1]}]}`, // one vector for two
		`{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[2]}]}`,
		`{"data":[{"index":0,"embedding":[1]},{"index":2,"embedding":[2]}]}`,
		`{"data":[{"embedding":[1]},{"index":1,"embedding":[2]}]}`,
		`{"data":[{"index":0,"embedding":[]},{"index":1,"embedding":[2]}]}`,
		`{"data":[{"index":0,"embedding":"AAA"},{"index":1,"embedding":[2]}]}`,
		`{"data":[{"index":0,"embedding":"` + nan + `"},{"index":1,"embedding":[2]}]}`,
		`{"data":[{"index":0,"embedding":[1e39]},{"index":1,"embedding":[2]}]}`,
		`{"data":[{"index":0,"embedding":[1,"2"]},{"index":1,"embedding":[2]}]}`,
		`{"data":[{"index":0,"embedding":[[1]]},{"index":1,"embedding":[2]}]}`,
		`{"data":[{"index":0,"embedding":{"x":1}},{"index":1,"embedding":[2]}]}`,
		`{"data":[{"index":0,"embedding":[` + strings.Repeat("1,", wire.MaxEmbedDimensions) + `1]},{"index":1,"embedding":[2]}]}`,
		`not json`,
	} {
		if _, err := openai.DecodeEmbeddings([]byte(body), 2); err == nil {
			t.Errorf("%.80s: read", body)
		}
	}
}

func FuzzDecodeEmbeddingRequest(f *testing.F) {
	for _, s := range []string{`{"model":"m","input":"hi"}`, `{"model":"m","input":["a","b"],"encoding_format":"base64","dimensions":3}`,
		`{"model":"m","input":[[1,2],[3]]}`, `{"model":"m","input":[1,2,3],"user":"u"}`, `{"model":"m","input":[["a"]]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := openai.DecodeEmbeddingRequest(body)
		if err != nil {
			var ce *chat.Error
			if !errors.As(err, &ce) {
				t.Fatalf("not a *chat.Error: %v", err)
			}
			return
		}
		if n := r.Inputs(); n < 1 || n > wire.MaxEmbedInputs || r.Model == "" || (r.Texts != nil) == (r.Tokens != nil) {
			t.Fatalf("%+v", r)
		}
		for _, s := range r.Texts {
			if s == "" {
				t.Fatal("an empty text")
			}
		}
		for _, ids := range r.Tokens {
			if len(ids) == 0 || len(ids) > wire.MaxEmbedTokens || slices.Min(ids) < 0 {
				t.Fatalf("token ids %v", ids)
			}
		}
	})
}

// TestVectorRefusesWhatJSONHasNot: numbers JSON has not are refused even
// where the text is not checked as JSON first.
func TestVectorRefusesWhatJSONHasNot(t *testing.T) {
	for _, raw := range []string{`[NaN]`, `[Inf]`, `[0x1p3]`, `[1_0]`, `[1,,2]`, `[1 2]`, `[]`, `["AAAA"]`} {
		if v, err := openai.Vector(json.RawMessage(raw)); err == nil {
			t.Errorf("%s: %v", raw, v)
		}
	}
	if v, err := openai.Vector(json.RawMessage(` [ -1.5e-3 , 2 ] `)); err != nil || !slices.Equal(v, []float32{-1.5e-3, 2}) {
		t.Fatalf("%v %v", v, err)
	}
}

func FuzzDecodeEmbeddings(f *testing.F) {
	f.Add([]byte(`{"data":[{"index":0,"embedding":[1,2]}],"usage":{"prompt_tokens":3}}`), 1)
	f.Add([]byte(`{"data":[{"index":1,"embedding":"AACAPw=="},{"index":0,"embedding":[0.5]}]}`), 2)
	f.Fuzz(func(t *testing.T, body []byte, n int) {
		n = min(max(n, 0), 8)
		res, err := openai.DecodeEmbeddings(body, n)
		if err != nil {
			return
		}
		if len(res.Vectors) != n {
			t.Fatalf("%d vectors for %d", len(res.Vectors), n)
		}
		for _, v := range res.Vectors {
			if len(v) == 0 || len(v) > wire.MaxEmbedDimensions {
				t.Fatalf("vector of %d", len(v))
			}
			if _, err := openai.EncodeEmbeddingResponse("m", wire.Embeddings{Vectors: [][]float32{v}}, false); err != nil {
				t.Fatalf("a vector read cannot be written: %v", err)
			}
		}
	})
}

// BenchmarkEmbeddings encodes and reads back a full request's answer
// (2048 vectors of 1536 values), as numbers and as base64.
func BenchmarkEmbeddings(b *testing.B) {
	res := wire.Embeddings{Vectors: make([][]float32, wire.MaxEmbedInputs)}
	for i := range res.Vectors {
		v := make([]float32, 1536)
		for j := range v {
			v[j] = float32(math.Sin(float64(i*1536 + j)))
		}
		res.Vectors[i] = v
	}
	for _, b64 := range []bool{false, true} {
		name := "float"
		if b64 {
			name = "base64"
		}
		data, _ := openai.EncodeEmbeddingResponse("m", res, b64)
		b.Run("encode/"+name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := openai.EncodeEmbeddingResponse("m", res, b64); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("decode/"+name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := openai.DecodeEmbeddings(data, len(res.Vectors)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzVectorAgreesWithJSON: an array of numbers is read as encoding/json
// reads it into []float32, and refused where encoding/json refuses it.
func FuzzVectorAgreesWithJSON(f *testing.F) {
	for _, s := range []string{`[1,2.5,-3e-2]`, `[1e39]`, `[1e-50, -0]`, `[1,"a"]`, `[[1]]`, `[ 0.1 ]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) || len(bytes.TrimSpace(raw)) == 0 || bytes.TrimSpace(raw)[0] != '[' {
			return
		}
		got, err := openai.Vector(raw)
		var want []float32
		jerr := json.Unmarshal(raw, &want)
		if jerr != nil || len(want) == 0 || len(want) >= wire.MaxEmbedDimensions {
			if err == nil {
				t.Fatalf("%s: read as %v; encoding/json: %v", raw, got, jerr)
			}
			return
		}
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("%s: %v %v, encoding/json %v", raw, got, err, want)
		}
	})
}
