package gateway_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/metrics"
	"github.com/ctxkit/ctxkit/internal/tokencount"
)

// vectorFor is the vector every fake embeds text as: its length first, so
// that a test sees which input a vector belongs to; dims values long (3
// when 0).
func vectorFor(text string, dims int) []float32 {
	if dims == 0 {
		dims = 3
	}
	v := make([]float32, dims)
	v[0] = float32(len(text))
	for i := 1; i < dims; i++ {
		v[i] = 0.25 * float32(i)
	}
	return v
}

// apiFake is a fake of the providers' embedding and token-count APIs,
// strict the way the real ones are: it refuses fields they do not take,
// batches larger than theirs, and calls without the key.
type apiFake struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []fakeCall
	fail  int // when not 0, answer every call with this status
}

type fakeCall struct {
	path   string
	header http.Header
	body   map[string]any
}

// record keeps a call and returns the status every call is to fail with.
func (f *apiFake) record(r *http.Request, body map[string]any) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fakeCall{r.URL.Path, r.Header.Clone(), body})
	return f.fail
}

// failWith makes every call fail with status (0: none) until it is
// called again.
func (f *apiFake) failWith(status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = status
}

func (f *apiFake) all() []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// only keeps the fields of m named, or answers which one is not.
func only(m map[string]any, keys ...string) string {
	for k := range m {
		if !slices.Contains(keys, k) {
			return k
		}
	}
	return ""
}

func jsonReply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func intOf(v any) int {
	f, _ := v.(float64)
	return int(f)
}

func newAPIFake(t *testing.T, typ string) *apiFake {
	f := &apiFake{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			jsonReply(w, 400, map[string]any{"message": "not JSON"})
			return
		}
		if status := f.record(r, body); status != 0 {
			jsonReply(w, status, map[string]any{"type": "error", "error": map[string]any{"type": "rate_limit_error", "message": "slow down"},
				"message": "slow down"})
			return
		}
		key := "key-for-" + typ
		switch typ {
		case gateway.TypeOpenAI, gateway.TypeMistral:
			if r.Header.Get("Authorization") != "Bearer "+key || r.URL.Path != "/base/embeddings" {
				jsonReply(w, 401, map[string]any{"error": map[string]any{"message": "bad key or path"}})
				return
			}
			allowed := []string{"model", "input", "encoding_format", "dimensions", "user"}
			dimsKey := "dimensions"
			if typ == gateway.TypeMistral {
				allowed, dimsKey = []string{"model", "input", "output_dimension"}, "output_dimension"
			}
			if k := only(body, allowed...); k != "" {
				jsonReply(w, 422, map[string]any{"object": "error", "message": "Extra inputs are not permitted: " + k, "type": "invalid_request_error"})
				return
			}
			var texts []string
			switch in := body["input"].(type) {
			case string:
				texts = []string{in}
			case []any:
				for _, x := range in {
					switch x := x.(type) {
					case string:
						texts = append(texts, x)
					case []any:
						if typ == gateway.TypeMistral {
							jsonReply(w, 422, map[string]any{"object": "error", "message": "input: token arrays are not taken"})
							return
						}
						texts = append(texts, strings.Repeat("t", len(x))) // one "character" a token
					}
				}
			}
			var data []map[string]any
			// Answered in reverse: the index, not the order, places a vector.
			for i := len(texts) - 1; i >= 0; i-- {
				v := vectorFor(texts[i], intOf(body[dimsKey]))
				var emb any = v
				if body["encoding_format"] == "base64" {
					var raw []byte
					for _, x := range v {
						raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(x))
					}
					emb = base64.StdEncoding.EncodeToString(raw)
				}
				data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": emb})
			}
			jsonReply(w, 200, map[string]any{"id": "e1", "object": "list", "model": body["model"], "data": data,
				"usage": map[string]any{"prompt_tokens": 2 * len(texts), "total_tokens": 2 * len(texts)}})
		case gateway.TypeGemini:
			model, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/base/v1beta/models/"), ":batchEmbedContents")
			if r.Header.Get("x-goog-api-key") != key || !ok {
				jsonReply(w, 403, map[string]any{"error": map[string]any{"code": 403, "message": "bad key or path", "status": "PERMISSION_DENIED"}})
				return
			}
			reqs, _ := body["requests"].([]any)
			if len(reqs) > 100 {
				jsonReply(w, 400, map[string]any{"error": map[string]any{"code": 400, "message": "* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch", "status": "INVALID_ARGUMENT"}})
				return
			}
			var embs []map[string]any
			for _, rq := range reqs {
				rq := rq.(map[string]any)
				if rq["model"] != "models/"+model || only(rq, "model", "content", "outputDimensionality", "taskType", "title") != "" {
					jsonReply(w, 400, map[string]any{"error": map[string]any{"code": 400, "message": "bad request", "status": "INVALID_ARGUMENT"}})
					return
				}
				text := rq["content"].(map[string]any)["parts"].([]any)[0].(map[string]any)["text"].(string)
				embs = append(embs, map[string]any{"values": vectorFor(text, intOf(rq["outputDimensionality"]))})
			}
			jsonReply(w, 200, map[string]any{"embeddings": embs})
		case gateway.TypeBedrock:
			if r.Header.Get("Authorization") != "Bearer "+key {
				jsonReply(w, 403, map[string]any{"message": "bad key"})
				return
			}
			model, _ := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/base/model/"), "/invoke")
			switch {
			case strings.Contains(model, "titan-embed-text-v2"):
				d := intOf(body["dimensions"])
				if only(body, "inputText", "dimensions", "normalize", "embeddingTypes") != "" || (d != 0 && d != 256 && d != 512 && d != 1024) || body["inputText"] == "boom" {
					w.Header().Set("X-Amzn-ErrorType", "ValidationException:http://internal")
					jsonReply(w, 400, map[string]any{"message": "Malformed input request"})
					return
				}
				text := body["inputText"].(string)
				jsonReply(w, 200, map[string]any{"embedding": vectorFor(text, d), "inputTextTokenCount": 3,
					"embeddingsByType": map[string]any{"float": vectorFor(text, d)}})
			case strings.Contains(model, "cohere.embed"):
				texts := strs(body["texts"])
				if body["input_type"] == nil || len(texts) > 96 || only(body, "texts", "input_type", "truncate", "embedding_types", "output_dimension") != "" {
					w.Header().Set("X-Amzn-ErrorType", "ValidationException:http://internal")
					jsonReply(w, 400, map[string]any{"message": "Malformed input request"})
					return
				}
				var vecs [][]float32
				for _, tx := range texts {
					vecs = append(vecs, vectorFor(tx, intOf(body["output_dimension"])))
				}
				w.Header().Set("X-Amzn-Bedrock-Input-Token-Count", strconv.Itoa(5*len(texts)))
				if body["embedding_types"] != nil {
					jsonReply(w, 200, map[string]any{"id": "c1", "response_type": "embeddings_by_type", "embeddings": map[string]any{"float": vecs}, "texts": texts})
				} else {
					jsonReply(w, 200, map[string]any{"id": "c1", "response_type": "embeddings_floats", "embeddings": vecs, "texts": texts})
				}
			default:
				jsonReply(w, 400, map[string]any{"message": "not an embedding model"})
			}
		case gateway.TypeAnthropic:
			if r.Header.Get("x-api-key") != key || r.Header.Get("anthropic-version") != "2023-06-01" || r.URL.Path != "/base/v1/messages/count_tokens" {
				jsonReply(w, 401, map[string]any{"type": "error", "error": map[string]any{"type": "authentication_error", "message": "bad key, version or path"}})
				return
			}
			if k := only(body, "model", "messages", "system", "tools", "tool_choice", "thinking", "output_config", "cache_control", "mcp_servers", "context_management"); k != "" {
				jsonReply(w, 400, map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": k + ": Extra inputs are not permitted"}})
				return
			}
			jsonReply(w, 200, map[string]any{"input_tokens": 42})
		default:
			jsonReply(w, 404, map[string]any{"message": "no such API"})
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// endpointsSetup starts a gateway with a provider of each type in front of
// the fakes; models are "<type>-model", and bedrock has a Titan and a
// Cohere model.
func endpointsSetup(t *testing.T) (*httptest.Server, map[string]*apiFake) {
	t.Helper()
	fakes := map[string]*apiFake{}
	var providers []map[string]any
	for _, typ := range []string{gateway.TypeAnthropic, gateway.TypeOpenAI, gateway.TypeDeepSeek, gateway.TypeMistral, gateway.TypeGemini, gateway.TypeBedrock} {
		f := newAPIFake(t, typ)
		fakes[typ] = f
		env := "CTXKIT_TEST_KEY_" + strings.ToUpper(typ)
		t.Setenv(env, "key-for-"+typ)
		models := []string{typ + "-model"}
		switch typ {
		case gateway.TypeBedrock:
			models = []string{"amazon.titan-embed-text-v2:0", "us.cohere.embed-v4:0", "cohere.embed-english-v3"}
		case gateway.TypeOpenAI:
			models = append(models, "org/embed-x")
		}
		providers = append(providers, map[string]any{"name": typ + "-up", "type": typ, "base_url": f.srv.URL + "/base",
			"api_key_env": env, "models": models})
	}
	cfgPath := filepath.Join(t.TempDir(), "gateway.json")
	data, _ := json.Marshal(map[string]any{"providers": providers})
	os.WriteFile(cfgPath, data, 0o600)
	cfg, err := gateway.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	g := gateway.New(cfg, gateway.Options{MaxBodyBytes: 4 << 20})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages/count_tokens", g.CountTokens)
	mux.HandleFunc("POST /v1/embeddings", g.Embeddings)
	mux.HandleFunc("GET /v1/models/{model}", g.Model)
	mux.HandleFunc("GET /v1beta/models", g.GeminiModels)
	mux.HandleFunc("GET /v1beta/models/{model}", g.GeminiModel)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { g.Unknown(w, r, nil) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, fakes
}

func send(t *testing.T, method, url, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}

type embeddingList struct {
	Object string `json:"object"`
	Model  string `json:"model"`
	Data   []struct {
		Object    string          `json:"object"`
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Usage struct {
		Prompt int `json:"prompt_tokens"`
		Total  int `json:"total_tokens"`
	} `json:"usage"`
}

// vectors reads the list's embeddings, numbers or base64 float32.
func (l *embeddingList) vectors(t *testing.T, b64 bool) [][]float32 {
	t.Helper()
	var out [][]float32
	for i, d := range l.Data {
		if d.Object != "embedding" || d.Index != i {
			t.Fatalf("data[%d]: %+v", i, d)
		}
		var v []float32
		if b64 {
			var s string
			if err := json.Unmarshal(d.Embedding, &s); err != nil {
				t.Fatalf("data[%d].embedding is not a base64 string: %s", i, d.Embedding)
			}
			raw, err := base64.StdEncoding.DecodeString(s)
			if err != nil || len(raw)%4 != 0 {
				t.Fatalf("data[%d].embedding: %v", i, err)
			}
			for j := 0; j < len(raw); j += 4 {
				v = append(v, math.Float32frombits(binary.LittleEndian.Uint32(raw[j:])))
			}
		} else if err := json.Unmarshal(d.Embedding, &v); err != nil {
			t.Fatalf("data[%d].embedding is not numbers: %s", i, d.Embedding)
		}
		out = append(out, v)
	}
	return out
}

// TestEmbeddingsEveryUpstream: an OpenAI-dialect client gets embeddings of
// its inputs, in order, as numbers or base64 float32 (the Node SDK's
// default), from every upstream type with an embedding API, with usage:
// the upstream's count, or the offline estimate marked as one.
func TestEmbeddingsEveryUpstream(t *testing.T) {
	srv, fakes := endpointsSetup(t)
	texts := []string{"a", "bb", "the quick brown fox"}
	in, _ := json.Marshal(texts)
	for _, tc := range []struct {
		model     string
		typ       string
		wantUsage int // 0: estimated
	}{
		{"openai-model", gateway.TypeOpenAI, 6},
		{"mistral-model", gateway.TypeMistral, 6},
		{"gemini-model", gateway.TypeGemini, 0},
		{"amazon.titan-embed-text-v2:0", gateway.TypeBedrock, 9},
		{"us.cohere.embed-v4:0", gateway.TypeBedrock, 15},
		{"cohere.embed-english-v3", gateway.TypeBedrock, 15},
	} {
		for _, format := range []string{"", "float", "base64"} {
			t.Run(tc.model+"/"+format, func(t *testing.T) {
				body := `{"model":"` + tc.model + `","input":` + string(in)
				if format != "" {
					body += `,"encoding_format":"` + format + `"`
				}
				resp, data := send(t, "POST", srv.URL+"/v1/embeddings", body+"}")
				if resp.StatusCode != 200 {
					t.Fatalf("%d %s", resp.StatusCode, data)
				}
				var l embeddingList
				if err := json.Unmarshal(data, &l); err != nil || l.Object != "list" || l.Model != tc.model {
					t.Fatalf("%v %s", err, data)
				}
				vecs := l.vectors(t, format == "base64")
				if len(vecs) != len(texts) {
					t.Fatalf("%d vectors for %d inputs", len(vecs), len(texts))
				}
				for i, v := range vecs {
					if !slices.Equal(v, vectorFor(texts[i], 0)) {
						t.Fatalf("vector %d: %v, want %v", i, v, vectorFor(texts[i], 0))
					}
				}
				want := tc.wantUsage
				if want == 0 {
					want = countTokens(t, texts...)
					if resp.Header.Get(gateway.TokenCountHeader) != "estimate" {
						t.Fatalf("estimated usage not marked: %v", resp.Header)
					}
				} else if resp.Header.Get(gateway.TokenCountHeader) != "" {
					t.Fatalf("the upstream's count marked %q", resp.Header.Get(gateway.TokenCountHeader))
				}
				if l.Usage.Prompt != want || l.Usage.Total != want {
					t.Fatalf("usage %+v, want %d", l.Usage, want)
				}
			})
		}
	}
	// The OpenAI upstream is asked for base64 whatever the client asked.
	for _, c := range fakes[gateway.TypeOpenAI].all() {
		if c.body["encoding_format"] != "base64" {
			t.Fatalf("openai upstream asked %v", c.body)
		}
	}
}

func countTokens(t *testing.T, texts ...string) int {
	t.Helper()
	c, err := tokencount.Codec("")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range texts {
		k, _ := c.Count(s)
		n += k
	}
	return n
}

// TestEmbeddingsMapped: dimensions reach each upstream in its own field,
// user reaches OpenAI and is dropped with a warning elsewhere, token ids
// reach OpenAI, and large requests are split into the upstream's batches
// (Gemini 100, Cohere 96, Titan one text a call) and put back in order.
func TestEmbeddingsMapped(t *testing.T) {
	srv, fakes := endpointsSetup(t)
	for _, tc := range []struct {
		model, typ, field string
		dims              int
	}{
		{"openai-model", gateway.TypeOpenAI, "dimensions", 8},
		{"mistral-model", gateway.TypeMistral, "output_dimension", 8},
		{"gemini-model", gateway.TypeGemini, "outputDimensionality", 8},
		{"amazon.titan-embed-text-v2:0", gateway.TypeBedrock, "dimensions", 256},
		{"us.cohere.embed-v4:0", gateway.TypeBedrock, "output_dimension", 512},
	} {
		t.Run(tc.model, func(t *testing.T) {
			before := len(fakes[tc.typ].all())
			resp, data := send(t, "POST", srv.URL+"/v1/embeddings", fmt.Sprintf(`{"model":%q,"input":"hello","dimensions":%d,"user":"u-1"}`, tc.model, tc.dims))
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, data)
			}
			var l embeddingList
			json.Unmarshal(data, &l)
			if v := l.vectors(t, false); len(v) != 1 || len(v[0]) != tc.dims {
				t.Fatalf("%s", data)
			}
			calls := fakes[tc.typ].all()[before:]
			var got any
			switch tc.typ {
			case gateway.TypeGemini:
				got = calls[0].body["requests"].([]any)[0].(map[string]any)[tc.field]
			default:
				got = calls[0].body[tc.field]
			}
			if intOf(got) != tc.dims {
				t.Fatalf("%s: %v in %v", tc.field, got, calls[0].body)
			}
			warn := resp.Header.Get(gateway.WarningsHeader)
			if tc.typ == gateway.TypeOpenAI {
				if calls[0].body["user"] != "u-1" || warn != "" {
					t.Fatalf("user not carried to openai: %v %q", calls[0].body, warn)
				}
			} else if warn != "user" {
				t.Fatalf("user dropped without a warning: %q", warn)
			}
		})
	}
	t.Run("tokens to openai", func(t *testing.T) {
		resp, data := send(t, "POST", srv.URL+"/v1/embeddings", `{"model":"openai-model","input":[[1,2,3],[4]]}`)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, data)
		}
		calls := fakes[gateway.TypeOpenAI].all()
		if in := calls[len(calls)-1].body["input"]; fmt.Sprint(in) != "[[1 2 3] [4]]" {
			t.Fatalf("input sent %v", in)
		}
		var l embeddingList
		json.Unmarshal(data, &l)
		if v := l.vectors(t, false); len(v) != 2 || v[0][0] != 3 || v[1][0] != 1 {
			t.Fatalf("%s", data)
		}
	})
	for _, tc := range []struct {
		model, typ string
		n, calls   int
	}{
		{"gemini-model", gateway.TypeGemini, 250, 3},
		{"cohere.embed-english-v3", gateway.TypeBedrock, 200, 3},
		{"amazon.titan-embed-text-v2:0", gateway.TypeBedrock, 9, 9},
	} {
		t.Run("batches/"+tc.model, func(t *testing.T) {
			texts := make([]string, tc.n)
			for i := range texts {
				texts[i] = strings.Repeat("x", i+1)
			}
			in, _ := json.Marshal(texts)
			before := len(fakes[tc.typ].all())
			resp, data := send(t, "POST", srv.URL+"/v1/embeddings", `{"model":"`+tc.model+`","input":`+string(in)+`}`)
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, data)
			}
			if got := len(fakes[tc.typ].all()) - before; got != tc.calls {
				t.Fatalf("%d upstream calls, want %d", got, tc.calls)
			}
			var l embeddingList
			json.Unmarshal(data, &l)
			for i, v := range l.vectors(t, false) {
				if int(v[0]) != i+1 {
					t.Fatalf("vector %d is input %v's", i, v[0])
				}
			}
		})
	}
}

// TestEmbeddingsRefused: what an upstream cannot carry is refused with a
// 400 in OpenAI's shape naming the field and the upstream, before any
// call; a request past the bounds is refused; an upstream's own error
// reaches the client with a status it can act on.
func TestEmbeddingsRefused(t *testing.T) {
	srv, fakes := endpointsSetup(t)
	many, _ := json.Marshal(make([]string, 2049))
	for _, tc := range []struct {
		name, body    string
		status        int
		param, substr string
	}{
		{"no embedding API", `{"model":"anthropic-model","input":"x"}`, 400, "model", "anthropic-up"},
		{"no embedding API deepseek", `{"model":"deepseek-model","input":"x"}`, 400, "model", "deepseek-up"},
		{"tokens to gemini", `{"model":"gemini-model","input":[1,2]}`, 400, "input", "gemini-up"},
		{"tokens to bedrock", `{"model":"us.cohere.embed-v4:0","input":[[1,2]]}`, 400, "input", "bedrock-up"},
		{"titan dims", `{"model":"amazon.titan-embed-text-v2:0","input":"x","dimensions":300}`, 400, "dimensions", "bedrock-up"},
		{"cohere v3 dims", `{"model":"cohere.embed-english-v3","input":"x","dimensions":256}`, 400, "dimensions", "bedrock-up"},
		{"unknown model", `{"model":"nope","input":"x"}`, 404, "model", "nope"},
		{"unknown field", `{"model":"openai-model","input":"x","input_type":"query"}`, 400, "input_type", "not a field"},
		{"empty input", `{"model":"openai-model","input":[]}`, 400, "input", "at least one"},
		{"empty string", `{"model":"openai-model","input":["a",""]}`, 400, "input[1]", "empty"},
		{"mixed", `{"model":"openai-model","input":["a",[1]]}`, 400, "input[1]", "string"},
		{"bad format", `{"model":"openai-model","input":"x","encoding_format":"int8"}`, 400, "encoding_format", "int8"},
		{"too many", `{"model":"openai-model","input":` + string(many) + `}`, 400, "input", "2048"},
		{"negative token", `{"model":"openai-model","input":[1,-2]}`, 400, "input[1]", "token id"},
		{"not JSON", `{"model":`, 400, "", "JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := 0
			for _, f := range fakes {
				before += len(f.all())
			}
			resp, data := send(t, "POST", srv.URL+"/v1/embeddings", tc.body)
			var e struct {
				Error struct {
					Message string
					Type    string
					Param   *string
				}
			}
			if err := json.Unmarshal(data, &e); err != nil || resp.StatusCode != tc.status || e.Error.Type == "" || !strings.Contains(e.Error.Message, tc.substr) {
				t.Fatalf("%d %s", resp.StatusCode, data)
			}
			if tc.param != "" && (e.Error.Param == nil || *e.Error.Param != tc.param) {
				t.Fatalf("param %v, want %s: %s", e.Error.Param, tc.param, data)
			}
			after := 0
			for _, f := range fakes {
				after += len(f.all())
			}
			if after != before {
				t.Fatal("a refused request reached an upstream")
			}
		})
	}
	t.Run("too large", func(t *testing.T) {
		resp, data := send(t, "POST", srv.URL+"/v1/embeddings", `{"model":"openai-model","input":"`+strings.Repeat("x", 5<<20)+`"}`)
		if resp.StatusCode != 413 {
			t.Fatalf("%d %s", resp.StatusCode, data)
		}
	})
	t.Run("one call of many refused", func(t *testing.T) {
		resp, data := send(t, "POST", srv.URL+"/v1/embeddings", `{"model":"amazon.titan-embed-text-v2:0","input":["a","b","boom","c","d","e"]}`)
		if resp.StatusCode != 400 || !strings.Contains(string(data), "upstream bedrock-up: Malformed input request") {
			t.Fatalf("%d %s", resp.StatusCode, data)
		}
	})
	t.Run("upstream refuses", func(t *testing.T) {
		fakes[gateway.TypeMistral].failWith(429)
		defer fakes[gateway.TypeMistral].failWith(0)
		resp, data := send(t, "POST", srv.URL+"/v1/embeddings", `{"model":"mistral-model","input":"x"}`)
		if resp.StatusCode != 429 || !strings.Contains(string(data), "rate_limit_error") || !strings.Contains(string(data), "slow down") {
			t.Fatalf("%d %s", resp.StatusCode, data)
		}
	})
}

// TestCountTokensAnthropicExact: a model routed to an Anthropic upstream
// is counted by the upstream's count_tokens, sent the request without
// the fields that endpoint refuses (named in X-Ctxkit-Warnings) and with
// the client's anthropic-beta header.
func TestCountTokensAnthropicExact(t *testing.T) {
	srv, fakes := endpointsSetup(t)
	resp, data := send(t, "POST", srv.URL+"/v1/messages/count_tokens",
		`{"model":"anthropic-model","max_tokens":100,"temperature":0.5,"system":"be brief","messages":[{"role":"user","content":"hi"}],`+
			`"tools":[{"name":"f","description":"d","input_schema":{"type":"object"}}]}`,
		"anthropic-version", "2023-06-01", "anthropic-beta", "token-counting-2024-11-01")
	if resp.StatusCode != 200 || strings.TrimSpace(string(data)) != `{"input_tokens":42}` {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
	if resp.Header.Get(gateway.TokenCountHeader) != "exact" || resp.Header.Get(gateway.WarningsHeader) != "temperature" {
		t.Fatalf("headers %v", resp.Header)
	}
	calls := fakes[gateway.TypeAnthropic].all()
	c := calls[len(calls)-1]
	if c.header.Get("anthropic-beta") != "token-counting-2024-11-01" || c.body["system"] != "be brief" || c.body["tools"] == nil || c.body["max_tokens"] != nil {
		t.Fatalf("sent %v %v", c.header, c.body)
	}
	// The upstream's refusal reaches the client in Anthropic's shape.
	fakes[gateway.TypeAnthropic].failWith(429)
	defer fakes[gateway.TypeAnthropic].failWith(0)
	resp, data = send(t, "POST", srv.URL+"/v1/messages/count_tokens", `{"model":"anthropic-model","messages":[{"role":"user","content":"hi"}]}`)
	var e struct {
		Type  string
		Error struct{ Type, Message string }
	}
	json.Unmarshal(data, &e)
	if resp.StatusCode != 429 || e.Type != "error" || e.Error.Type != "rate_limit_error" || !strings.Contains(e.Error.Message, "slow down") {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
}

// TestCountTokensEstimate: a model routed to any other upstream is
// counted offline, marked as an estimate, without an upstream call; what
// the count covers moves it the way the upstream would be sent more.
func TestCountTokensEstimate(t *testing.T) {
	srv, fakes := endpointsSetup(t)
	count := func(body string) int {
		t.Helper()
		resp, data := send(t, "POST", srv.URL+"/v1/messages/count_tokens", body)
		if resp.StatusCode != 200 || resp.Header.Get(gateway.TokenCountHeader) != "estimate" {
			t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, data)
		}
		var v struct {
			N *int `json:"input_tokens"`
		}
		if json.Unmarshal(data, &v) != nil || v.N == nil {
			t.Fatalf("%s", data)
		}
		return *v.N
	}
	for _, typ := range []string{gateway.TypeOpenAI, gateway.TypeGemini, gateway.TypeMistral, gateway.TypeDeepSeek} {
		m := typ + "-model"
		plain := count(`{"model":"` + m + `","messages":[{"role":"user","content":"hello there"}]}`)
		if want := 3 + 3 + countTokens(t, "hello there"); plain != want {
			t.Fatalf("%s: %d, want %d", typ, plain, want)
		}
		sys := count(`{"model":"` + m + `","system":"you are terse","messages":[{"role":"user","content":"hello there"}]}`)
		tools := count(`{"model":"` + m + `","messages":[{"role":"user","content":"hello there"}],"tools":[{"name":"get_weather","description":"the weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]}`)
		if sys != plain+countTokens(t, "you are terse") || tools <= plain+countTokens(t, "get_weather", "the weather") {
			t.Fatalf("%s: system %d, tools %d, plain %d", typ, sys, tools, plain)
		}
	}
	if n := len(fakes[gateway.TypeOpenAI].all()); n != 0 {
		t.Fatalf("an estimate called the upstream %d times", n)
	}
	// Errors are Anthropic's.
	for _, tc := range []struct {
		body   string
		status int
		typ    string
	}{
		{`{"model":"nope","messages":[{"role":"user","content":"x"}]}`, 404, "not_found_error"},
		{`{"model":"openai-model","messages":[{"role":"robot","content":"x"}]}`, 400, "invalid_request_error"},
		{`{"messages":[]}`, 400, "invalid_request_error"},
	} {
		resp, data := send(t, "POST", srv.URL+"/v1/messages/count_tokens", tc.body)
		var e struct {
			Type  string
			Error struct{ Type string }
		}
		json.Unmarshal(data, &e)
		if resp.StatusCode != tc.status || e.Type != "error" || e.Error.Type != tc.typ {
			t.Fatalf("%s: %d %s", tc.body, resp.StatusCode, data)
		}
	}
}

func pngOf(t *testing.T, w, h int) string {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// TestEstimateTokensMedia: an image counts by its size, not its bytes
// (capped, and a default when unreadable); a PDF by its pages; a text
// document by its text.
func TestEstimateTokensMedia(t *testing.T) {
	base := func(blocks ...chat.Block) int {
		t.Helper()
		n, err := gateway.EstimateTokens(chat.Request{Messages: []chat.Message{{Role: chat.User, Content: chat.Of(blocks...)}}})
		if err != nil {
			t.Fatal(err)
		}
		return n - 6
	}
	img := func(data string) chat.Block {
		return chat.Block{Type: chat.TypeImage, Source: &chat.Source{Type: "base64", MediaType: "image/png", Data: data}}
	}
	pdf := "%PDF-1.4\n1 0 obj << /Type /Pages /Kids [2 0 R 3 0 R] >>\n2 0 obj << /Type /Page >>\n3 0 obj << /Type/Page >>\n"
	for _, tc := range []struct {
		name  string
		block chat.Block
		want  int
	}{
		{"small image", img(pngOf(t, 300, 250)), 100},
		{"large image", img(pngOf(t, 4000, 3000)), 1600},
		{"unreadable image", img("bm90IGFuIGltYWdl"), 1600},
		{"url image", chat.Block{Type: chat.TypeImage, Source: &chat.Source{Type: "url", URL: "https://example.com/x.png"}}, 1600},
		{"pdf", chat.Block{Type: chat.TypeDocument, Source: &chat.Source{Type: "base64", MediaType: "application/pdf", Data: base64.StdEncoding.EncodeToString([]byte(pdf))}}, 3200},
		{"text document", chat.Block{Type: chat.TypeDocument, Source: &chat.Source{Type: "text", MediaType: "text/plain", Data: "hello there"}}, countTokens(t, "hello there")},
		{"redacted thinking", chat.Block{Type: chat.TypeRedactedThinking, Data: strings.Repeat("x", 5000)}, 0},
	} {
		if got := base(tc.block); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestModelByID: GET /v1/models/{model} answers in OpenAI's shape, or in
// Anthropic's for an Anthropic client; an unknown model is a 404 in the
// same shape. The Gemini paths answer in Google's shape, with pages.
func TestModelByID(t *testing.T) {
	srv, _ := endpointsSetup(t)
	resp, data := send(t, "GET", srv.URL+"/v1/models/openai-model", "")
	var om map[string]any
	json.Unmarshal(data, &om)
	if resp.StatusCode != 200 || om["id"] != "openai-model" || om["object"] != "model" || om["owned_by"] != "openai-up" || om["created"] == nil || om["type"] != nil {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
	resp, data = send(t, "GET", srv.URL+"/v1/models/gemini-model", "", "anthropic-version", "2023-06-01")
	var am map[string]any
	json.Unmarshal(data, &am)
	if resp.StatusCode != 200 || am["type"] != "model" || am["id"] != "gemini-model" || am["display_name"] != "gemini-model" || am["created_at"] == nil || am["object"] != nil {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
	// A model id with a slash, escaped as the SDKs send it, or not.
	for _, path := range []string{"/v1/models/org%2Fembed-x", "/v1/models/org/embed-x", "/v1/models/us.cohere.embed-v4:0"} {
		resp, data := send(t, "GET", srv.URL+path, "")
		var m map[string]any
		json.Unmarshal(data, &m)
		if resp.StatusCode != 200 || (strings.Contains(path, "embed-x") && m["id"] != "org/embed-x") {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, data)
		}
	}
	resp, data = send(t, "GET", srv.URL+"/v1/models/nope", "")
	if resp.StatusCode != 404 || !strings.Contains(string(data), `"code":"model_not_found"`) || !strings.Contains(string(data), `"param":"model"`) {
		t.Fatalf("OpenAI 404: %d %s", resp.StatusCode, data)
	}
	resp, data = send(t, "GET", srv.URL+"/v1/models/nope", "", "x-api-key", "k")
	if resp.StatusCode != 404 || !strings.Contains(string(data), `"type":"not_found_error"`) || !strings.HasPrefix(string(data), `{"type":"error"`) {
		t.Fatalf("Anthropic 404: %d %s", resp.StatusCode, data)
	}

	resp, data = send(t, "GET", srv.URL+"/v1beta/models/gemini-model", "")
	var gm gateway.GeminiModel
	json.Unmarshal(data, &gm)
	if resp.StatusCode != 200 || gm.Name != "models/gemini-model" || !slices.Contains(gm.SupportedGenerationMethods, "generateContent") {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
	resp, data = send(t, "GET", srv.URL+"/v1beta/models/nope", "")
	if resp.StatusCode != 404 || !strings.Contains(string(data), `"status":"NOT_FOUND"`) || !strings.Contains(string(data), `"code":404`) {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
	// Pages of 3 cover the 9 models once each, in order.
	var names []string
	token := ""
	for range 10 {
		resp, data = send(t, "GET", srv.URL+"/v1beta/models?pageSize=3&pageToken="+token, "")
		var page struct {
			Models        []gateway.GeminiModel
			NextPageToken string
		}
		if json.Unmarshal(data, &page) != nil || resp.StatusCode != 200 || len(page.Models) > 3 {
			t.Fatalf("%d %s", resp.StatusCode, data)
		}
		for _, m := range page.Models {
			names = append(names, m.Name)
		}
		if token = page.NextPageToken; token == "" {
			break
		}
	}
	if len(names) != 9 || !slices.IsSorted(names) {
		t.Fatalf("pages gave %v", names)
	}
	if resp, data := send(t, "GET", srv.URL+"/v1beta/models?pageSize=-1", ""); resp.StatusCode != 400 || !strings.Contains(string(data), "INVALID_ARGUMENT") {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
}

// TestUnknownPathDialect: a path the gateway does not serve answers 404
// in the shape of the caller's dialect, chosen by path and headers.
func TestUnknownPathDialect(t *testing.T) {
	srv, _ := endpointsSetup(t)
	for _, tc := range []struct {
		path   string
		header []string
		want   string
	}{
		{"/v1/files", nil, `{"error":{"message":"no such endpoint: GET /v1/files","type":"invalid_request_error","param":null,"code":"unknown_url"}}`},
		{"/v1/files", []string{"anthropic-version", "2023-06-01"}, `{"type":"error","error":{"type":"not_found_error","message":"no such endpoint: GET /v1/files"}}`},
		{"/v1/messages/batches", nil, `{"type":"error","error":{"type":"not_found_error","message":"no such endpoint: GET /v1/messages/batches"}}`},
		{"/v1beta/files", nil, `{"error":{"code":404,"message":"no such endpoint: GET /v1beta/files","status":"NOT_FOUND"}}`},
		{"/v1/files", []string{"x-goog-api-key", "k"}, `{"error":{"code":404,"message":"no such endpoint: GET /v1/files","status":"NOT_FOUND"}}`},
	} {
		resp, data := send(t, "GET", srv.URL+tc.path, "", tc.header...)
		if resp.StatusCode != 404 || strings.TrimSpace(string(data)) != tc.want {
			t.Errorf("%s %v: %d %s", tc.path, tc.header, resp.StatusCode, data)
		}
	}
}

// embedFake is an OpenAI-type embedding upstream on loopback that fails
// on demand: each call gets the next step of plan (the last repeats):
// "ok", a status ("503", "429 ra=2"), or "stall" (no answer until the
// call ends).
type embedFake struct {
	srv  *httptest.Server
	mu   sync.Mutex
	plan []string
	keys []string
}

func newEmbedFake(t *testing.T, plan ...string) *embedFake {
	f := &embedFake{plan: plan}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		f.keys = append(f.keys, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		step := "ok"
		if len(f.plan) > 0 {
			step = f.plan[min(len(f.keys)-1, len(f.plan)-1)]
		}
		f.mu.Unlock()
		switch word, arg, _ := strings.Cut(step, " "); word {
		case "ok":
			var data []map[string]any
			for i, tx := range body.Input {
				data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": vectorFor(tx+body.Model, 0)})
			}
			jsonReply(w, 200, map[string]any{"object": "list", "model": body.Model, "data": data,
				"usage": map[string]any{"prompt_tokens": 7, "total_tokens": 7}})
		case "stall":
			<-r.Context().Done()
		default:
			status, _ := strconv.Atoi(word)
			if ra, ok := strings.CutPrefix(arg, "ra="); ok {
				w.Header().Set("Retry-After", ra)
			}
			jsonReply(w, status, map[string]any{"error": map[string]any{"message": "step " + step, "type": "error"}})
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// embedRouted is a gateway on loopback serving POST /v1/embeddings with
// the configuration cfg (JSON), and its metrics registry.
func embedRouted(t *testing.T, cfg string) (*httptest.Server, *metrics.Registry) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gateway.json")
	os.WriteFile(path, []byte(cfg), 0o600)
	c, err := gateway.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	g := gateway.New(c, gateway.Options{})
	reg := metrics.NewRegistry()
	reg.MustRegister(g.Collectors()...)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/embeddings", g.Embeddings)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, reg
}

// TestEmbeddingsRoute: an embedding model routed to several targets is
// served by them as a chat model is: a target without an embedding API is
// passed over, a target that fails with 5xx, 429, no connection or no
// first byte in time hands over to the next (a Bedrock Titan target that
// embeds in one call a text is one attempt), and the client gets the
// vectors of the one that served, named in X-Ctxkit-Upstream and counted
// in X-Ctxkit-Attempts and the attempts metric; another 4xx is the
// client's at once; max_attempts and max_time bound the attempts; a
// route none of whose targets embeds is refused naming them.
func TestEmbeddingsRoute(t *testing.T) {
	t.Setenv("CTXKIT_TEST_EA", "key-for-a-0123456789")
	t.Setenv("CTXKIT_TEST_KEY_BEDROCK", "key-for-bedrock")
	t.Setenv("CTXKIT_TEST_KEY_ANTHROPIC", "key-for-anthropic")
	titan := newAPIFake(t, gateway.TypeBedrock)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	config := func(aURL, route string) string {
		return fmt.Sprintf(`{"providers":[
			{"name":"anth","type":"anthropic","base_url":"http://127.0.0.1:9","api_key_env":"CTXKIT_TEST_KEY_ANTHROPIC","models":["claude-x"]},
			{"name":"a","type":"openai","base_url":%q,"api_key_env":"CTXKIT_TEST_EA","models":["a-own"],"timeouts":{"first_byte":"300ms"}},
			{"name":"br","type":"bedrock","base_url":%q,"api_key_env":"CTXKIT_TEST_KEY_BEDROCK","models":["amazon.titan-embed-text-v2:0"]}],
			"routes":[%s]}`, aURL, titan.srv.URL+"/base", route)
	}
	both := `{"model":"embed","targets":[{"provider":"anth","model":"claude-x"},{"provider":"a","model":"emb-a"},{"provider":"br","model":"amazon.titan-embed-text-v2:0"}]}`
	texts := `{"model":"embed","input":["a","bb","ccc"]}`
	vectorsOf := func(t *testing.T, data []byte) [][]float32 {
		t.Helper()
		var l embeddingList
		if err := json.Unmarshal(data, &l); err != nil || l.Model != "embed" {
			t.Fatalf("%s", data)
		}
		return l.vectors(t, false)
	}
	for _, tc := range []struct {
		step string
		down bool // a cannot be reached
	}{{"503", false}, {"500", false}, {"529", false}, {"429", false}, {"stall", false}, {"", true}} {
		t.Run("fallback "+tc.step, func(t *testing.T) {
			a := newEmbedFake(t, tc.step)
			url := a.srv.URL
			if tc.down {
				url = deadURL
			}
			srv, reg := embedRouted(t, config(url, both))
			before := len(titan.all())
			resp, data := send(t, "POST", srv.URL+"/v1/embeddings", texts)
			if resp.StatusCode != 200 || resp.Header.Get("X-Ctxkit-Upstream") != "br/amazon.titan-embed-text-v2:0" || resp.Header.Get("X-Ctxkit-Attempts") != "2" {
				t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, data)
			}
			if v := vectorsOf(t, data); len(v) != 3 || v[0][0] != 1 || v[2][0] != 3 {
				t.Fatalf("vectors %v", v)
			}
			if n := len(titan.all()) - before; n != 3 {
				t.Fatalf("titan got %d calls, want one a text", n)
			}
			if attempts(t, reg, "br", "amazon.titan-embed-text-v2:0", "ok", "key1") != 1 || attempts(t, reg, "anth", "claude-x", "ok", "key1") != 0 {
				t.Fatalf("attempts not counted")
			}
		})
	}
	t.Run("served by the first", func(t *testing.T) {
		a := newEmbedFake(t, "ok")
		srv, reg := embedRouted(t, config(a.srv.URL, both))
		resp, data := send(t, "POST", srv.URL+"/v1/embeddings", texts)
		if resp.StatusCode != 200 || resp.Header.Get("X-Ctxkit-Upstream") != "a/emb-a" || resp.Header.Get("X-Ctxkit-Attempts") != "1" {
			t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, data)
		}
		if v := vectorsOf(t, data); len(v) != 3 || v[1][0] != float32(len("bbemb-a")) {
			t.Fatalf("the upstream was not asked for its own model: %v", v)
		}
		if attempts(t, reg, "a", "emb-a", "ok", "key1") != 1 {
			t.Fatal("attempt not counted")
		}
	})
	t.Run("no fallback on 400", func(t *testing.T) {
		a := newEmbedFake(t, "400")
		srv, reg := embedRouted(t, config(a.srv.URL, both))
		before := len(titan.all())
		resp, data := send(t, "POST", srv.URL+"/v1/embeddings", texts)
		if resp.StatusCode != 400 || !strings.Contains(string(data), "step 400") || resp.Header.Get("X-Ctxkit-Attempts") != "1" || len(titan.all()) != before {
			t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, data)
		}
		if attempts(t, reg, "a", "emb-a", "client_error", "key1") != 1 {
			t.Fatal("attempt not counted")
		}
	})
	t.Run("max_attempts", func(t *testing.T) {
		a := newEmbedFake(t, "503")
		srv, _ := embedRouted(t, config(a.srv.URL, `{"model":"embed","max_attempts":1,"targets":[{"provider":"a","model":"emb-a"},{"provider":"br","model":"amazon.titan-embed-text-v2:0"}]}`))
		before := len(titan.all())
		resp, data := send(t, "POST", srv.URL+"/v1/embeddings", texts)
		if resp.StatusCode != 503 || resp.Header.Get("X-Ctxkit-Attempts") != "1" || len(titan.all()) != before {
			t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, data)
		}
	})
	t.Run("max_time", func(t *testing.T) {
		a := newEmbedFake(t, "stall")
		srv, _ := embedRouted(t, config(a.srv.URL, `{"model":"embed","max_time":"100ms","targets":[{"provider":"a","model":"emb-a"},{"provider":"br","model":"amazon.titan-embed-text-v2:0"}]}`))
		start := time.Now()
		resp, data := send(t, "POST", srv.URL+"/v1/embeddings", texts)
		if resp.StatusCode != 504 || !strings.Contains(string(data), "max_time") || time.Since(start) > 250*time.Millisecond {
			t.Fatalf("%d after %v: %s", resp.StatusCode, time.Since(start), data)
		}
	})
	t.Run("no target embeds", func(t *testing.T) {
		srv, _ := embedRouted(t, config("http://127.0.0.1:9", `{"model":"embed","targets":[{"provider":"anth","model":"claude-x"},{"provider":"anth","model":"claude-y"}]}`))
		resp, data := send(t, "POST", srv.URL+"/v1/embeddings", texts)
		if resp.StatusCode != 400 || !strings.Contains(string(data), `"param":"model"`) || !strings.Contains(string(data), "anth (type anthropic)") || resp.Header.Get("X-Ctxkit-Attempts") != "" {
			t.Fatalf("%d %s", resp.StatusCode, data)
		}
	})
}

// TestEmbeddingsKeyPool: an embedding target's keys are the pool's: a key
// that got 429 rests and the other serves, a refused key leaves.
func TestEmbeddingsKeyPool(t *testing.T) {
	t.Setenv("CTXKIT_TEST_K1", "key-one-0123456789")
	t.Setenv("CTXKIT_TEST_K2", "key-two-0123456789")
	a := newEmbedFake(t, "429 ra=60", "ok")
	srv, reg := embedRouted(t, fmt.Sprintf(`{"providers":[{"name":"a","type":"openai","base_url":%q,"models":["emb"],
		"keys":[{"id":"k1","env":"CTXKIT_TEST_K1"},{"id":"k2","env":"CTXKIT_TEST_K2"}]}]}`, a.srv.URL))
	resp, data := send(t, "POST", srv.URL+"/v1/embeddings", `{"model":"emb","input":"x"}`)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "60" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, data)
	}
	for range 3 {
		if resp, data := send(t, "POST", srv.URL+"/v1/embeddings", `{"model":"emb","input":"x"}`); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, data)
		}
	}
	a.mu.Lock()
	keys := strings.Join(a.keys, ",")
	a.mu.Unlock()
	if keys != "key-one-0123456789,key-two-0123456789,key-two-0123456789,key-two-0123456789" {
		t.Fatalf("keys used: %s", keys)
	}
	if attempts(t, reg, "a", "emb", "rate_limited", "k1") != 1 || attempts(t, reg, "a", "emb", "ok", "k2") != 3 {
		t.Fatal("attempts not counted by key")
	}
}

// TestEmbeddingsCost: an embedding model with a price row — here a
// Bedrock model, which has no built-in price, priced by the
// configuration's prefix row that covers its cross-region profiles —
// answers with its cost in X-Ctxkit-Cost-Usd (the upstream's token count
// at the row's input price); a model without one has no cost header.
func TestEmbeddingsCost(t *testing.T) {
	t.Setenv("CTXKIT_TEST_KEY_BEDROCK", "key-for-bedrock")
	titan := newAPIFake(t, gateway.TypeBedrock)
	srv, reg := embedRouted(t, fmt.Sprintf(`{"providers":[{"name":"br","type":"bedrock","base_url":%q,"api_key_env":"CTXKIT_TEST_KEY_BEDROCK",
		"models":["amazon.titan-embed-text-v2:0","us.amazon.titan-embed-text-v2:0","cohere.embed-english-v3"]}],
		"prices":[{"provider":"br","model":"amazon.titan-embed-text-v2*","input":0.02,"output":0},
			{"provider":"br","model":"us.amazon.titan-embed-text-v2*","input":0.03,"output":0}]}`, titan.srv.URL+"/base"))
	for _, c := range []struct{ model, cost string }{
		{"amazon.titan-embed-text-v2:0", "0.00000018"},    // 3 calls of 3 tokens at $0.02
		{"us.amazon.titan-embed-text-v2:0", "0.00000027"}, // the profile's own row
		{"cohere.embed-english-v3", ""},
	} {
		resp, data := send(t, "POST", srv.URL+"/v1/embeddings", `{"model":"`+c.model+`","input":["a","bb","ccc"]}`)
		if resp.StatusCode != 200 || resp.Header.Get("X-Ctxkit-Cost-Usd") != c.cost {
			t.Fatalf("%s: %d cost %q, want %q: %s", c.model, resp.StatusCode, resp.Header.Get("X-Ctxkit-Cost-Usd"), c.cost, data)
		}
	}
	rec := httptest.NewRecorder()
	reg.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if m := rec.Body.String(); !strings.Contains(m, `ctxkit_gateway_cost_usd_total{agent="",model="amazon.titan-embed-text-v2:0",owner="",provider="br"} 1.8e-07`) ||
		!strings.Contains(m, `ctxkit_gateway_unpriced_total{model="cohere.embed-english-v3",provider="br"} 1`) {
		t.Fatalf("metrics:\n%s", m)
	}
}
