package fakeup

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"regexp"
	"strings"
)

// NewOpenAI is a fake OpenAI API under /v1 (configure the base URL as
// its address + "/v1"): Chat Completions, the Responses API, embeddings
// and models, with the key as a bearer token.
func NewOpenAI(key string) *Fake {
	f := newFake("openai", key)
	rules := chatRules{
		provider:  "openai",
		fields:    oaiFields,
		msgFields: set("role", "content", "name", "tool_calls", "tool_call_id", "refusal", "audio", "function_call"),
		fail:      openAIFail,
		checkIDs:  openAIIDs,
		newID:     func() string { return randomID("call_", 24) },
	}
	f.mux.Handle("POST /v1/chat/completions", f.bearer(openAIFail, f.serveChat(rules)))
	f.mux.Handle("POST /v1/responses", f.bearer(openAIFail, f.serveResponses()))
	f.mux.Handle("POST /v1/embeddings", f.bearer(openAIFail, f.serveEmbeddings(set("model", "input", "encoding_format", "dimensions", "user"), openAIFail, false)))
	f.mux.Handle("GET /v1/models/{id}", f.bearer(openAIFail, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if strings.HasPrefix(id, "missing") {
			openAIFail(w, 404, "invalid_request_error", "model_not_found", "model", "The model '"+id+"' does not exist")
			return
		}
		writeJSON(w, 200, map[string]any{"id": id, "object": "model", "created": 1700000000, "owned_by": "openai"})
	})))
	f.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		openAIFail(w, 404, "invalid_request_error", "unknown_url", "", "Invalid URL ("+r.Method+" "+r.URL.Path+")")
	})
	return f
}

// NewDeepSeek is a fake DeepSeek API (base URL: its address): Chat
// Completions with DeepSeek's own field list (thinking,
// reasoning_content; no n, seed or json_schema), reasoning content from
// deepseek-reasoner. It refuses fields DeepSeek does not document
// (DeepSeek itself ignores some): a field the gateway sends that the
// provider would drop is a silent drop.
func NewDeepSeek(key string) *Fake {
	f := newFake("deepseek", key)
	rules := chatRules{
		provider: "deepseek",
		fields: set("model", "messages", "thinking", "frequency_penalty", "max_tokens", "presence_penalty",
			"response_format", "stop", "stream", "stream_options", "temperature", "top_p", "tools", "tool_choice",
			"logprobs", "top_logprobs"),
		msgFields:    set("role", "content", "name", "tool_calls", "tool_call_id", "reasoning_content", "prefix"),
		fail:         openAIFail,
		checkIDs:     func(int, int, string, bool) (string, string, string, bool) { return "", "", "", true },
		newID:        func() string { return randomID("call_00_", 24) },
		noJSONSchema: true,
		reasoning: func(model string) string {
			if model == "deepseek-reasoner" {
				return "The user wants the weather; I answer briefly."
			}
			return ""
		},
	}
	f.mux.Handle("POST /chat/completions", f.bearer(openAIFail, f.serveChat(rules)))
	f.mux.Handle("POST /v1/chat/completions", f.bearer(openAIFail, f.serveChat(rules)))
	return f
}

// NewMistral is a fake Mistral API under /v1: chat completions with
// Mistral's validator rules (ids of nine alphanumerics, the order of
// roles, a user message never directly after tool messages, the last
// message user or tool) and embeddings.
func NewMistral(key string) *Fake {
	f := newFake("mistral", key)
	idRule := regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)
	rules := chatRules{
		provider: "mistral",
		fields: set("model", "messages", "temperature", "top_p", "max_tokens", "stream", "stop", "random_seed",
			"response_format", "tools", "tool_choice", "presence_penalty", "frequency_penalty", "n", "prediction",
			"parallel_tool_calls", "prompt_mode", "safe_prompt", "metadata"),
		msgFields: set("role", "content", "name", "tool_calls", "tool_call_id", "prefix"),
		fail:      mistralShape,
		checkIDs: func(i, j int, id string, _ bool) (string, string, string, bool) {
			if idRule.MatchString(id) {
				return "", "", "", true
			}
			return "", "3280", "Tool call id was " + id + " but must be a-z, A-Z, 0-9, with a length of 9.", false
		},
		newID:       func() string { return randomID("", 9) },
		usageAlways: true,
		mistral:     true,
	}
	f.mux.Handle("POST /v1/chat/completions", f.bearer(mistralShape, f.serveChat(rules)))
	f.mux.Handle("POST /v1/embeddings", f.bearer(mistralShape, f.serveEmbeddings(set("model", "input", "output_dimension", "output_dtype", "encoding_format", "metadata"), mistralShape, true)))
	return f
}

// mistralShape writes Mistral's error shape.
func mistralShape(w http.ResponseWriter, status int, typ, code, param, msg string) {
	e := map[string]any{"object": "error", "message": msg, "type": typ, "param": nil, "code": nil}
	if param != "" {
		e["param"] = param
	}
	if code != "" {
		e["code"] = code
	}
	writeJSON(w, status, e)
}

func mistralFail(w http.ResponseWriter, status int, typ, msg string) {
	mistralShape(w, status, typ, "", "", msg)
}

// mistralExtra is Mistral's answer to a field it does not take: 422 with
// the validation detail (loc names the message's role before the field,
// as Mistral's validator does).
func mistralExtra(w http.ResponseWriter, loc []any) {
	writeJSON(w, 422, map[string]any{"object": "error", "type": "invalid_request_error", "param": nil, "code": nil,
		"message": map[string]any{"detail": []any{map[string]any{"type": "extra_forbidden", "loc": loc, "msg": "Extra inputs are not permitted", "input": nil}}}})
}

// bearer refuses a request without the fake's key as a bearer token.
func (f *Fake) bearer(fail func(http.ResponseWriter, int, string, string, string, string), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+f.key {
			fail(w, 401, "invalid_request_error", "invalid_api_key", "", "Incorrect API key provided.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// serveEmbeddings answers POST /v1/embeddings: float or base64 (float32
// little-endian) vectors, usage.
func (f *Fake) serveEmbeddings(fields map[string]bool, fail func(http.ResponseWriter, int, string, string, string, string), mistral bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := readBody(r)
		top, unknown, err := topLevel(body, fields)
		if err != nil {
			fail(w, 400, "invalid_request_error", "", "", "We could not parse the JSON body of your request.")
			return
		}
		if unknown != "" {
			if mistral {
				mistralExtra(w, []any{"body", unknown})
				return
			}
			fail(w, 400, "invalid_request_error", "", "", "Unrecognized request argument supplied: "+unknown)
			return
		}
		var model, format string
		json.Unmarshal(top["model"], &model)
		if model == "" {
			fail(w, 400, "invalid_request_error", "", "model", "you must provide a model parameter")
			return
		}
		if raw, ok := top["encoding_format"]; ok && json.Unmarshal(raw, &format) != nil || (format != "" && format != "float" && format != "base64") {
			fail(w, 400, "invalid_request_error", "invalid_value", "encoding_format", "Invalid value for 'encoding_format': expected 'float' or 'base64'.")
			return
		}
		// The length of each input: characters of a string, tokens of a
		// token array.
		var lengths []int
		var one string
		var many []json.RawMessage
		var tokens []int
		switch {
		case json.Unmarshal(top["input"], &one) == nil && one != "":
			lengths = []int{len(one)}
		case json.Unmarshal(top["input"], &tokens) == nil && len(tokens) > 0:
			lengths = []int{len(tokens)}
		case json.Unmarshal(top["input"], &many) == nil && len(many) > 0 && len(many) <= 2048:
			for _, raw := range many {
				var s string
				var toks []int
				switch {
				case json.Unmarshal(raw, &s) == nil && s != "":
					lengths = append(lengths, len(s))
				case json.Unmarshal(raw, &toks) == nil && len(toks) > 0:
					lengths = append(lengths, len(toks))
				default:
					fail(w, 400, "invalid_request_error", "", "input", "'input' : input must be a string or an array of 1 to 2048 strings or token arrays, none empty.")
					return
				}
			}
		default:
			fail(w, 400, "invalid_request_error", "", "input", "'input' : input must be a string or an array of 1 to 2048 strings or token arrays, none empty.")
			return
		}
		var data []any
		n := len(lengths)
		for i, l := range lengths {
			var v any = Embedding(l)
			if format == "base64" {
				v = base64Floats(Embedding(l))
			}
			data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": v})
		}
		usage := map[string]any{"prompt_tokens": n * EmbeddingTokens, "total_tokens": n * EmbeddingTokens}
		out := map[string]any{"object": "list", "data": data, "model": model, "usage": usage}
		if mistral {
			usage["completion_tokens"] = 0
			out["id"] = randomID("", 32)
		}
		writeJSON(w, 200, out)
	}
}

// base64Floats is OpenAI's base64 encoding of a vector: float32 values,
// little-endian, standard base64.
func base64Floats(v []float64) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(x)))
	}
	return base64.StdEncoding.EncodeToString(b)
}
