package fakeup

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

var geminiFields = set("contents", "systemInstruction", "tools", "toolConfig", "safetySettings", "cachedContent",
	"generationConfig", "labels", "serviceTier")

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

type geminiPart struct {
	Text             *string         `json:"text"`
	InlineData       *geminiBlob     `json:"inlineData"`
	FileData         json.RawMessage `json:"fileData"`
	FunctionCall     *geminiCall     `json:"functionCall"`
	FunctionResponse *geminiResult   `json:"functionResponse"`
	Thought          bool            `json:"thought"`
	ThoughtSignature string          `json:"thoughtSignature"`
	ExecutableCode   json.RawMessage `json:"executableCode"`
	CodeResult       json.RawMessage `json:"codeExecutionResult"`
	VideoMetadata    json.RawMessage `json:"videoMetadata"`
	MediaResolution  json.RawMessage `json:"mediaResolution"`
}

type geminiBlob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type geminiCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type geminiResult struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Response     json.RawMessage `json:"response"`
	Parts        json.RawMessage `json:"parts"`
	WillContinue *bool           `json:"willContinue"`
	Scheduling   string          `json:"scheduling"`
}

type geminiTool struct {
	FunctionDeclarations []struct {
		Name                 string          `json:"name"`
		Description          string          `json:"description"`
		Parameters           json.RawMessage `json:"parameters"`
		ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
		Response             json.RawMessage `json:"response"`
		ResponseJSONSchema   json.RawMessage `json:"responseJsonSchema"`
		Behavior             string          `json:"behavior"`
	} `json:"functionDeclarations"`
	GoogleSearch          json.RawMessage `json:"googleSearch"`
	CodeExecution         json.RawMessage `json:"codeExecution"`
	URLContext            json.RawMessage `json:"urlContext"`
	GoogleSearchRetrieval json.RawMessage `json:"googleSearchRetrieval"`
}

type geminiGenConfig struct {
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"topP"`
	TopK               *float64        `json:"topK"`
	CandidateCount     *int            `json:"candidateCount"`
	MaxOutputTokens    *int            `json:"maxOutputTokens"`
	StopSequences      []string        `json:"stopSequences"`
	ResponseLogprobs   *bool           `json:"responseLogprobs"`
	Logprobs           *int            `json:"logprobs"`
	PresencePenalty    *float64        `json:"presencePenalty"`
	FrequencyPenalty   *float64        `json:"frequencyPenalty"`
	Seed               *int64          `json:"seed"`
	ResponseMimeType   string          `json:"responseMimeType"`
	ResponseSchema     json.RawMessage `json:"responseSchema"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	ResponseModalities []string        `json:"responseModalities"`
	MediaResolution    string          `json:"mediaResolution"`
	SpeechConfig       json.RawMessage `json:"speechConfig"`
	AudioTimestamp     *bool           `json:"audioTimestamp"`
	ThinkingConfig     *struct {
		IncludeThoughts *bool  `json:"includeThoughts"`
		ThinkingBudget  *int   `json:"thinkingBudget"`
		ThinkingLevel   string `json:"thinkingLevel"`
	} `json:"thinkingConfig"`
	ImageConfig json.RawMessage `json:"imageConfig"`
}

// geminiSigPrefix starts (decoded) the thought signatures the fake
// issues; the placeholders Google documents for history the model did not
// produce are accepted too.
const geminiSigPrefix = "fakesig:"

var geminiPlaceholders = set("skip_thought_signature_validator", "context_engineering_is_the_way_to_go")

// geminiFail writes Google's error shape.
func geminiFail(w http.ResponseWriter, code int, status, msg string) {
	writeJSON(w, code, map[string]any{"error": map[string]any{"code": code, "message": msg, "status": status}})
}

// NewGemini is a fake Gemini Developer API (base URL: its address):
// POST /v1beta/models/{model}:generateContent, :streamGenerateContent
// (SSE with alt=sse, else a JSON array), :countTokens, :embedContent,
// :batchEmbedContents and GET /v1beta/models/{model}, with the key in
// x-goog-api-key (or ?key=). Models named gemini-3… sign their function
// calls and refuse calls of the current turn without a signature.
func NewGemini(key string) *Fake {
	f := newFake("gemini", key)
	auth := func(next http.HandlerFunc) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("x-goog-api-key") != key && r.URL.Query().Get("key") != key {
				geminiFail(w, 400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.")
				return
			}
			next(w, r)
		})
	}
	f.mux.Handle("POST /v1beta/models/{call}", auth(func(w http.ResponseWriter, r *http.Request) {
		model, method, ok := strings.Cut(r.PathValue("call"), ":")
		if !ok {
			geminiFail(w, 404, "NOT_FOUND", "Method not found.")
			return
		}
		switch method {
		case "generateContent":
			f.geminiGenerate(w, r, model, "")
		case "streamGenerateContent":
			mode := "array"
			if r.URL.Query().Get("alt") == "sse" {
				mode = "sse"
			}
			f.geminiGenerate(w, r, model, mode)
		case "countTokens":
			body, _ := readBody(r)
			var v struct {
				Contents               json.RawMessage `json:"contents"`
				GenerateContentRequest json.RawMessage `json:"generateContentRequest"`
			}
			if err := strict(body, &v); err != nil {
				geminiFail(w, 400, "INVALID_ARGUMENT", "Invalid JSON payload received. "+err.Error())
				return
			}
			writeJSON(w, 200, map[string]any{"totalTokens": GeminiCount})
		case "embedContent", "batchEmbedContents":
			f.geminiEmbed(w, r, model, method == "batchEmbedContents")
		default:
			geminiFail(w, 404, "NOT_FOUND", "Method not found.")
		}
	}))
	f.mux.Handle("GET /v1beta/models/{model}", auth(func(w http.ResponseWriter, r *http.Request) {
		m := r.PathValue("model")
		writeJSON(w, 200, map[string]any{"name": "models/" + m, "displayName": m, "version": "001", "inputTokenLimit": 1048576,
			"outputTokenLimit": 65536, "supportedGenerationMethods": []string{"generateContent", "countTokens"}})
	}))
	f.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		geminiFail(w, 404, "NOT_FOUND", "Requested entity was not found.")
	})
	return f
}

func (f *Fake) geminiGenerate(w http.ResponseWriter, r *http.Request, model, stream string) {
	body, _ := readBody(r)
	fail := func(msg string) { geminiFail(w, 400, "INVALID_ARGUMENT", msg) }
	top, unknown, err := topLevel(body, geminiFields)
	if err != nil {
		fail("Invalid JSON payload received. " + err.Error())
		return
	}
	if unknown != "" {
		fail(fmt.Sprintf("Invalid JSON payload received. Unknown name %q: Cannot find field.", unknown))
		return
	}
	var contents []geminiContent
	if err := strict(top["contents"], &contents); err != nil {
		fail("Invalid JSON payload received. contents: " + err.Error())
		return
	}
	if len(contents) == 0 || len(contents) > maxMessages {
		fail("* GenerateContentRequest.contents: contents is not specified\n")
		return
	}
	if raw, ok := top["systemInstruction"]; ok {
		var si geminiContent
		if err := strict(raw, &si); err != nil {
			fail("Invalid JSON payload received. systemInstruction: " + err.Error())
			return
		}
	}
	var gc geminiGenConfig
	if raw, ok := top["generationConfig"]; ok {
		if err := strict(raw, &gc); err != nil {
			fail("Invalid JSON payload received. generationConfig: " + err.Error())
			return
		}
	}
	t := turn{}
	if raw, ok := top["tools"]; ok {
		var tools []geminiTool
		if err := strict(raw, &tools); err != nil {
			fail("Invalid JSON payload received. tools: " + err.Error())
			return
		}
		for _, tl := range tools {
			for _, fd := range tl.FunctionDeclarations {
				schema := fd.ParametersJSONSchema
				if schema == nil {
					schema = fd.Parameters
				}
				t.tools = append(t.tools, toolDef{Name: fd.Name, Schema: schema})
			}
		}
	}
	if raw, ok := top["toolConfig"]; ok {
		var tc struct {
			FunctionCallingConfig struct {
				Mode                 string   `json:"mode"`
				AllowedFunctionNames []string `json:"allowedFunctionNames"`
			} `json:"functionCallingConfig"`
			RetrievalConfig json.RawMessage `json:"retrievalConfig"`
		}
		if err := strict(raw, &tc); err != nil {
			fail("Invalid JSON payload received. toolConfig: " + err.Error())
			return
		}
		fc := tc.FunctionCallingConfig
		t.none, t.any = fc.Mode == "NONE", fc.Mode == "ANY"
		if fc.Mode == "ANY" && len(fc.AllowedFunctionNames) == 1 {
			t.forced = fc.AllowedFunctionNames[0]
		}
	}
	if gc.ResponseSchema != nil && gc.ResponseJSONSchema != nil {
		fail("response_schema and response_json_schema cannot both be set.")
		return
	}
	if gc.ResponseSchema != nil || gc.ResponseJSONSchema != nil {
		if gc.ResponseMimeType != "application/json" {
			fail("response_mime_type must be application/json when a response schema is set.")
			return
		}
		t.schema = gc.ResponseJSONSchema
		if t.schema == nil {
			t.schema = gc.ResponseSchema
		}
	}
	if msg := geminiOrder(contents, strings.HasPrefix(model, "gemini-3")); msg != "" {
		fail(msg)
		return
	}
	lastParts := contents[len(contents)-1].Parts
	t.afterTool = len(lastParts) > 0 && lastParts[0].FunctionResponse != nil
	a := plan(t, "gemini", func() string { return "" })
	if gc.ThinkingConfig != nil && gc.ThinkingConfig.IncludeThoughts != nil && *gc.ThinkingConfig.IncludeThoughts {
		a.Reasoning = "The user wants a short answer."
	}
	signed := strings.HasPrefix(model, "gemini-3")
	if stream == "" {
		writeJSON(w, 200, geminiResponse(model, geminiParts(a, signed), true))
		return
	}
	geminiStream(w, model, a, signed, stream == "sse")
}

// geminiOrder checks roles, that function responses answer the call
// turn before them part for part, and, for Gemini 3, that every step of
// the current turn (after the last user content with ordinary parts) has
// a signature on its first function call. It returns the API's message,
// "" when all is well.
func geminiOrder(contents []geminiContent, gemini3 bool) string {
	currentFrom := 0
	for i, c := range contents {
		if c.Role != "user" && c.Role != "model" {
			return "Please use a valid role: user, model."
		}
		if len(c.Parts) == 0 {
			return fmt.Sprintf("* GenerateContentRequest.contents[%d].parts: contents.parts must not be empty.\n", i)
		}
		calls, results := 0, 0
		for _, p := range c.Parts {
			if p.FunctionCall != nil {
				calls++
			}
			if p.FunctionResponse != nil {
				results++
			}
			if p.ThoughtSignature != "" && !validGeminiSig(p.ThoughtSignature) {
				return "Thought signature is not valid."
			}
		}
		if c.Role == "user" && results < len(c.Parts) {
			currentFrom = i + 1
		}
		if results > 0 {
			prevCalls := 0
			if i > 0 && contents[i-1].Role == "model" {
				for _, p := range contents[i-1].Parts {
					if p.FunctionCall != nil {
						prevCalls++
					}
				}
			}
			if prevCalls == 0 {
				return "Please ensure that function response turn comes immediately after a function call turn."
			}
			if prevCalls != results {
				return "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn."
			}
		}
		_ = calls
	}
	if !gemini3 {
		return ""
	}
	for i := currentFrom; i < len(contents); i++ {
		c := contents[i]
		if c.Role != "model" {
			continue
		}
		for k, p := range c.Parts {
			if p.FunctionCall == nil {
				continue
			}
			if p.ThoughtSignature == "" {
				return fmt.Sprintf("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `%s` , position %d. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.", p.FunctionCall.Name, k+1)
			}
			break // only the first call of a step is signed
		}
	}
	return ""
}

func validGeminiSig(s string) bool {
	if geminiPlaceholders[s] {
		return true
	}
	b, err := base64.StdEncoding.DecodeString(s)
	return err == nil && strings.HasPrefix(string(b), geminiSigPrefix)
}

func geminiSignature() string {
	return base64.StdEncoding.EncodeToString([]byte(geminiSigPrefix + randomID("", 24)))
}

// geminiParts are the parts of an answer: a thought, text, function
// calls (Gemini sends no call ids; a Gemini 3 model signs the first
// call, or the last part when there is none).
func geminiParts(a answer, signed bool) []map[string]any {
	var parts []map[string]any
	if a.Reasoning != "" {
		parts = append(parts, map[string]any{"text": a.Reasoning, "thought": true})
	}
	if a.Text != "" {
		parts = append(parts, map[string]any{"text": a.Text})
	}
	for i, c := range a.Calls {
		p := map[string]any{"functionCall": map[string]any{"name": c.Name, "args": json.RawMessage(c.Args)}}
		if signed && i == 0 {
			p["thoughtSignature"] = geminiSignature()
		}
		parts = append(parts, p)
	}
	if signed && len(a.Calls) == 0 && len(parts) > 0 {
		parts[len(parts)-1]["thoughtSignature"] = geminiSignature()
	}
	return parts
}

func geminiResponse(model string, parts []map[string]any, last bool) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	usage := map[string]any{"promptTokenCount": InputTokens, "totalTokenCount": InputTokens}
	if last {
		cand["finishReason"] = "STOP" // also after function calls: Gemini has no tool-call reason
		usage["candidatesTokenCount"], usage["totalTokenCount"] = OutputTokens, InputTokens+OutputTokens
	}
	return map[string]any{"candidates": []any{cand}, "usageMetadata": usage, "modelVersion": model, "responseId": randomID("", 22)}
}

// geminiStream writes the answer in chunks: one per word of text, the
// calls whole, the last chunk with finishReason STOP and full usage; as
// SSE (data lines, no terminator) or as a JSON array.
func geminiStream(w http.ResponseWriter, model string, a answer, signed, sseMode bool) {
	var chunks []map[string]any
	parts := geminiParts(a, signed)
	for _, p := range parts {
		if text, ok := p["text"].(string); ok && p["thought"] == nil && p["thoughtSignature"] == nil {
			for _, wd := range words(text) {
				chunks = append(chunks, geminiResponse(model, []map[string]any{{"text": wd}}, false))
			}
			continue
		}
		chunks = append(chunks, geminiResponse(model, []map[string]any{p}, false))
	}
	if len(chunks) == 0 {
		chunks = append(chunks, geminiResponse(model, []map[string]any{{"text": ""}}, false))
	}
	lastParts := chunks[len(chunks)-1]["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]map[string]any)
	chunks[len(chunks)-1] = geminiResponse(model, lastParts, true)
	if sseMode {
		startStream(w, "text/event-stream")
		for _, c := range chunks {
			sse(w, "", c)
		}
		return
	}
	startStream(w, "application/json")
	w.Write([]byte("["))
	for i, c := range chunks {
		data, _ := json.Marshal(c)
		if i > 0 {
			w.Write([]byte(",\r\n"))
		}
		w.Write(data)
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
	}
	w.Write([]byte("]"))
}

func (f *Fake) geminiEmbed(w http.ResponseWriter, r *http.Request, model string, batch bool) {
	body, _ := readBody(r)
	type one struct {
		Model                string         `json:"model"`
		Content              *geminiContent `json:"content"`
		TaskType             string         `json:"taskType"`
		Title                string         `json:"title"`
		OutputDimensionality *int           `json:"outputDimensionality"`
	}
	if batch {
		var v struct {
			Requests []one `json:"requests"`
		}
		if err := strict(body, &v); err != nil {
			geminiFail(w, 400, "INVALID_ARGUMENT", "Invalid JSON payload received. "+err.Error())
			return
		}
		if len(v.Requests) == 0 || len(v.Requests) > 100 {
			geminiFail(w, 400, "INVALID_ARGUMENT", "* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch\n")
			return
		}
		var out []any
		for i, rq := range v.Requests {
			if rq.Model != "models/"+model {
				geminiFail(w, 400, "INVALID_ARGUMENT", fmt.Sprintf("* BatchEmbedContentsRequest.requests[%d].model: the model of every request must be the batch's, models/%s\n", i, model))
				return
			}
			if rq.Content == nil {
				geminiFail(w, 400, "INVALID_ARGUMENT", fmt.Sprintf("* BatchEmbedContentsRequest.requests[%d].content: content is not specified\n", i))
				return
			}
			out = append(out, map[string]any{"values": Embedding(textLen(rq.Content))})
		}
		writeJSON(w, 200, map[string]any{"embeddings": out})
		return
	}
	var v one
	if err := strict(body, &v); err != nil || v.Content == nil {
		geminiFail(w, 400, "INVALID_ARGUMENT", "* EmbedContentRequest.content: content is not specified\n")
		return
	}
	writeJSON(w, 200, map[string]any{"embedding": map[string]any{"values": Embedding(textLen(v.Content))}})
}

// textLen is the length of the text of a content's parts.
func textLen(c *geminiContent) int {
	n := 0
	for _, p := range c.Parts {
		if p.Text != nil {
			n += len(*p.Text)
		}
	}
	return n
}
