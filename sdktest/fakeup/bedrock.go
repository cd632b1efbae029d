package fakeup

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

var (
	bedrockFields = set("messages", "system", "inferenceConfig", "toolConfig", "guardrailConfig",
		"additionalModelRequestFields", "additionalModelResponseFieldPaths", "promptVariables", "requestMetadata",
		"performanceConfig", "outputConfig", "serviceTier")
	bedrockID   = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	bedrockName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
)

type bedrockMsg struct {
	Role    string         `json:"role"`
	Content []bedrockBlock `json:"content"`
}

type bedrockBlock struct {
	Text     *string         `json:"text"`
	Image    json.RawMessage `json:"image"`
	Document json.RawMessage `json:"document"`
	Video    json.RawMessage `json:"video"`
	ToolUse  *struct {
		ToolUseID string          `json:"toolUseId"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
	} `json:"toolUse"`
	ToolResult *struct {
		ToolUseID string          `json:"toolUseId"`
		Content   json.RawMessage `json:"content"`
		Status    string          `json:"status"`
	} `json:"toolResult"`
	ReasoningContent json.RawMessage `json:"reasoningContent"`
	CachePoint       json.RawMessage `json:"cachePoint"`
	GuardContent     json.RawMessage `json:"guardContent"`
	CitationsContent json.RawMessage `json:"citationsContent"`
}

// bedrockSigPrefix starts the reasoning signatures the fake issues for
// Claude's thinking on Bedrock; like anthropicSignature, a signature
// covers its text, and is Bedrock's own (Anthropic's are refused).
const bedrockSigPrefix = "EqoBbedrockfake"

func bedrockSignature(text string) string {
	h := sha256.Sum256([]byte("fake-bedrock-signing-key\x00" + text))
	return bedrockSigPrefix + base64.StdEncoding.EncodeToString(h[:])
}

// bedrockRedactedMark starts the bytes of the redacted reasoning the fake
// gives (Converse's redactedContent, base64 in JSON): the mark, 16
// random bytes and a MAC of them, so the fake knows its own and refuses
// bytes it did not give or that changed on the way.
const bedrockRedactedMark = "bedrockfake-redacted:"

func bedrockRedacted() string {
	nonce := randomID("", 16)
	mac := sha256.Sum256([]byte("fake-bedrock-signing-key\x01" + nonce))
	return base64.StdEncoding.EncodeToString([]byte(bedrockRedactedMark + nonce + string(mac[:16])))
}

// bedrockRedactedOK says data is redacted content the fake gave.
func bedrockRedactedOK(data string) bool {
	b, err := base64.StdEncoding.Strict().DecodeString(data)
	if err != nil || len(b) != len(bedrockRedactedMark)+16+16 || !strings.HasPrefix(string(b), bedrockRedactedMark) {
		return false
	}
	nonce := string(b[len(bedrockRedactedMark) : len(bedrockRedactedMark)+16])
	mac := sha256.Sum256([]byte("fake-bedrock-signing-key\x01" + nonce))
	return string(b[len(bedrockRedactedMark)+16:]) == string(mac[:16])
}

// bedrockRedactsFor says the fake answers msgs, a request with thinking
// on, with redacted reasoning first: the user message of the turn (the
// last one that is not tool results) holds AnthropicRedactTrigger, the
// string that makes Claude's API redact its thinking.
func bedrockRedactsFor(msgs []bedrockMsg) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role != "user" || len(m.Content) > 0 && m.Content[0].ToolResult != nil {
			continue
		}
		for _, b := range m.Content {
			if b.Text != nil && strings.Contains(*b.Text, AnthropicRedactTrigger) {
				return true
			}
		}
		return false
	}
	return false
}

// bedrockThinking checks the reasoning of a request that turned Claude's
// thinking on (additionalModelRequestFields.thinking): every signed
// reasoningText must carry the signature the fake gave its text, and the
// assistant message before the last tool results must start with its
// reasoning, as Claude on Bedrock requires. It returns the error message,
// "" when the request is fine.
func bedrockThinking(msgs []bedrockMsg, afterTool bool) string {
	for i, m := range msgs {
		for j, b := range m.Content {
			if len(b.ReasoningContent) == 0 {
				continue
			}
			var rc struct {
				ReasoningText *struct {
					Text      string `json:"text"`
					Signature string `json:"signature"`
				} `json:"reasoningText"`
				RedactedContent string `json:"redactedContent"`
			}
			if err := strict(b.ReasoningContent, &rc); err != nil {
				return fmt.Sprintf("Malformed input request: messages.%d.content.%d.reasoningContent: %v", i, j, err)
			}
			if rt := rc.ReasoningText; rt != nil && rt.Signature != "" && rt.Signature != bedrockSignature(rt.Text) {
				return fmt.Sprintf("The model returned the following errors: messages.%d.content.%d: Invalid `signature` in `thinking` block", i, j)
			}
			if rc.ReasoningText == nil && !bedrockRedactedOK(rc.RedactedContent) {
				return fmt.Sprintf("The model returned the following errors: messages.%d.content.%d: Invalid `data` in `redacted_thinking` block", i, j)
			}
		}
	}
	if !afterTool || len(msgs) < 2 {
		return ""
	}
	if m := msgs[len(msgs)-2]; m.Role == "assistant" && len(m.Content) > 0 && len(m.Content[0].ReasoningContent) == 0 {
		return fmt.Sprintf("The model returned the following errors: messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks).", len(msgs)-2)
	}
	// The turn that made the tool calls redacted its reasoning: that
	// reasoning must come back whole, the redacted block first, as the
	// model gave it.
	if k := len(msgs) - 2; msgs[k].Role == "assistant" && len(msgs[k].Content) > 0 && bedrockRedactsFor(msgs[:k]) {
		var first struct {
			RedactedContent string `json:"redactedContent"`
		}
		if json.Unmarshal(msgs[k].Content[0].ReasoningContent, &first) != nil || first.RedactedContent == "" {
			return fmt.Sprintf("The model returned the following errors: messages.%d.content.0: the turn's `redacted_thinking` block is missing: thinking blocks must be passed back unmodified", k)
		}
	}
	return ""
}

type bedrockToolConfig struct {
	Tools []struct {
		ToolSpec *struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			InputSchema struct {
				JSON json.RawMessage `json:"json"`
			} `json:"inputSchema"`
			Strict *bool `json:"strict"`
		} `json:"toolSpec"`
		CachePoint json.RawMessage `json:"cachePoint"`
	} `json:"tools"`
	ToolChoice *struct {
		Auto *struct{} `json:"auto"`
		Any  *struct{} `json:"any"`
		Tool *struct {
			Name string `json:"name"`
		} `json:"tool"`
	} `json:"toolChoice"`
}

// bedrockFail writes an AWS error: the type in X-Amzn-ErrorType, the
// message in the body.
func bedrockFail(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("X-Amzn-ErrorType", typ+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	w.Header().Set("X-Amzn-RequestId", randomID("", 32))
	writeJSON(w, status, map[string]any{"message": msg})
}

// NewBedrock is a fake Bedrock runtime (base URL: its address): POST
// /model/{id}/converse and /converse-stream (an event stream of binary
// frames), /model/{id}/invoke for Titan and Cohere embeddings, with a
// Bedrock API key as a bearer token. It enforces what Converse validates:
// roles that alternate from user, toolUseId [a-zA-Z0-9_-]{1,64}, tool
// results matching the previous turn's toolUse ids.
func NewBedrock(key string) *Fake {
	f := newFake("bedrock", key)
	auth := func(next http.HandlerFunc) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+key {
				bedrockFail(w, 403, "AccessDeniedException", "Authentication failed: Please make sure your API Key is valid.")
				return
			}
			next(w, r)
		})
	}
	f.mux.Handle("POST /model/{id}/converse", auth(func(w http.ResponseWriter, r *http.Request) { f.bedrockConverse(w, r, false) }))
	f.mux.Handle("POST /model/{id}/converse-stream", auth(func(w http.ResponseWriter, r *http.Request) { f.bedrockConverse(w, r, true) }))
	f.mux.Handle("POST /model/{id}/invoke", auth(f.bedrockInvoke))
	f.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		bedrockFail(w, 404, "UnknownOperationException", "")
	})
	return f
}

func (f *Fake) bedrockConverse(w http.ResponseWriter, r *http.Request, stream bool) {
	body, _ := readBody(r)
	fail := func(msg string) { bedrockFail(w, 400, "ValidationException", msg) }
	top, unknown, err := topLevel(body, bedrockFields)
	if err != nil {
		fail("Malformed input request, please reformat your input and try again.")
		return
	}
	if unknown != "" {
		fail(fmt.Sprintf("Malformed input request: extraneous key [%s] is not permitted, please reformat your input and try again.", unknown))
		return
	}
	var msgs []bedrockMsg
	if err := strict(top["messages"], &msgs); err != nil || len(msgs) > maxMessages {
		fail("Malformed input request: messages: " + fmt.Sprint(err))
		return
	}
	if len(msgs) == 0 || msgs[0].Role != "user" {
		fail("A conversation must start with a user message. Try again with a conversation that starts with a user message.")
		return
	}
	for i, m := range msgs {
		if i > 0 && m.Role == msgs[i-1].Role {
			fail("A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.")
			return
		}
		if m.Role != "user" && m.Role != "assistant" {
			fail(fmt.Sprintf("1 validation error detected: Value '%s' at 'messages.%d.member.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]", m.Role, i+1))
			return
		}
		var uses, results []string
		for j, b := range m.Content {
			if b.ToolUse != nil {
				if !bedrockID.MatchString(b.ToolUse.ToolUseID) {
					fail(fmt.Sprintf("1 validation error detected: Value '%s' at 'messages.%d.member.content.%d.member.toolUse.toolUseId' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+", b.ToolUse.ToolUseID, i+1, j+1))
					return
				}
				uses = append(uses, b.ToolUse.ToolUseID)
			}
			if b.ToolResult != nil {
				if !bedrockID.MatchString(b.ToolResult.ToolUseID) {
					fail(fmt.Sprintf("1 validation error detected: Value '%s' at 'messages.%d.member.content.%d.member.toolResult.toolUseId' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+", b.ToolResult.ToolUseID, i+1, j+1))
					return
				}
				results = append(results, b.ToolResult.ToolUseID)
			}
		}
		if len(results) > 0 {
			var prev []string
			if i > 0 {
				for _, b := range msgs[i-1].Content {
					if b.ToolUse != nil {
						prev = append(prev, b.ToolUse.ToolUseID)
					}
				}
			}
			if len(results) > len(prev) {
				fail(fmt.Sprintf("The number of toolResult blocks at messages.%d.content exceeds the number of toolUse blocks of previous turn.", i))
				return
			}
			for _, id := range prev {
				if indexOf(results, id) < 0 {
					fail(fmt.Sprintf("Expected toolResult blocks at messages.%d.content for the following Ids: %s", i, id))
					return
				}
			}
		}
		if len(uses) > 0 && i+1 < len(msgs) {
			for _, id := range uses {
				found := false
				for _, b := range msgs[i+1].Content {
					found = found || (b.ToolResult != nil && b.ToolResult.ToolUseID == id)
				}
				if !found {
					fail(fmt.Sprintf("Expected toolResult blocks at messages.%d.content for the following Ids: %s", i+1, id))
					return
				}
			}
		}
	}
	t := turn{}
	last := msgs[len(msgs)-1].Content
	t.afterTool = len(last) > 0 && last[0].ToolResult != nil
	if raw, ok := top["toolConfig"]; ok {
		var tc bedrockToolConfig
		if err := strict(raw, &tc); err != nil {
			fail("Malformed input request: toolConfig: " + err.Error())
			return
		}
		for k, tl := range tc.Tools {
			if tl.ToolSpec == nil {
				continue
			}
			if !bedrockName.MatchString(tl.ToolSpec.Name) {
				fail(fmt.Sprintf("1 validation error detected: Value '%s' at 'toolConfig.tools.%d.member.toolSpec.name' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+", tl.ToolSpec.Name, k+1))
				return
			}
			t.tools = append(t.tools, toolDef{Name: tl.ToolSpec.Name, Schema: tl.ToolSpec.InputSchema.JSON})
		}
		if tc.ToolChoice != nil {
			t.any = tc.ToolChoice.Any != nil
			if tc.ToolChoice.Tool != nil {
				t.forced = tc.ToolChoice.Tool.Name
			}
		}
	}
	if raw, ok := top["outputConfig"]; ok {
		var oc struct {
			TextFormat struct {
				Type      string `json:"type"`
				Structure struct {
					JSONSchema struct {
						Schema      string `json:"schema"`
						Name        string `json:"name"`
						Description string `json:"description"`
					} `json:"jsonSchema"`
				} `json:"structure"`
			} `json:"textFormat"`
		}
		if err := strict(raw, &oc); err != nil {
			fail("Malformed input request: outputConfig: " + err.Error())
			return
		}
		if oc.TextFormat.Type == "json_schema" {
			t.schema = []byte(oc.TextFormat.Structure.JSONSchema.Schema)
		}
	}
	var extra struct {
		Thinking struct {
			Type string `json:"type"`
		} `json:"thinking"`
	}
	if raw, ok := top["additionalModelRequestFields"]; ok {
		json.Unmarshal(raw, &extra)
	}
	thinks := extra.Thinking.Type == "enabled"
	if thinks {
		if msg := bedrockThinking(msgs, t.afterTool); msg != "" {
			fail(msg)
			return
		}
	}
	a := plan(t, "bedrock", func() string { return randomID("tooluse_", 22) })
	if thinks {
		a.Reasoning = "The user wants a short answer."
		if !t.afterTool && bedrockRedactsFor(msgs) {
			a.Redacted = bedrockRedacted()
		}
	}
	stop := "end_turn"
	if len(a.Calls) > 0 {
		stop = "tool_use"
	}
	usage := map[string]any{"inputTokens": InputTokens, "outputTokens": OutputTokens, "totalTokens": InputTokens + OutputTokens}
	if !stream {
		var content []any
		if a.Redacted != "" {
			content = append(content, map[string]any{"reasoningContent": map[string]any{"redactedContent": a.Redacted}})
		}
		if a.Reasoning != "" {
			content = append(content, map[string]any{"reasoningContent": map[string]any{"reasoningText": map[string]any{"text": a.Reasoning, "signature": bedrockSignature(a.Reasoning)}}})
		}
		if a.Text != "" {
			content = append(content, map[string]any{"text": a.Text})
		}
		for _, c := range a.Calls {
			content = append(content, map[string]any{"toolUse": map[string]any{"toolUseId": c.ID, "name": c.Name, "input": json.RawMessage(c.Args)}})
		}
		writeJSON(w, 200, map[string]any{"output": map[string]any{"message": map[string]any{"role": "assistant", "content": content}},
			"stopReason": stop, "usage": usage, "metrics": map[string]any{"latencyMs": 42}})
		return
	}
	startStream(w, "application/vnd.amazon.eventstream")
	enc := eventstream.NewEncoder()
	ev := func(name string, v any) {
		payload, _ := json.Marshal(v)
		var buf bytes.Buffer
		enc.Encode(&buf, eventstream.Message{Headers: eventstream.Headers{
			{Name: ":message-type", Value: eventstream.StringValue("event")},
			{Name: ":event-type", Value: eventstream.StringValue(name)},
			{Name: ":content-type", Value: eventstream.StringValue("application/json")},
		}, Payload: payload})
		w.Write(buf.Bytes())
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
	}
	ev("messageStart", map[string]any{"role": "assistant"})
	idx := 0
	if a.Redacted != "" {
		ev("contentBlockDelta", map[string]any{"contentBlockIndex": idx, "delta": map[string]any{"reasoningContent": map[string]any{"redactedContent": a.Redacted}}})
		ev("contentBlockStop", map[string]any{"contentBlockIndex": idx})
		idx++
	}
	if a.Reasoning != "" {
		for _, p := range words(a.Reasoning) {
			ev("contentBlockDelta", map[string]any{"contentBlockIndex": idx, "delta": map[string]any{"reasoningContent": map[string]any{"text": p}}})
		}
		ev("contentBlockDelta", map[string]any{"contentBlockIndex": idx, "delta": map[string]any{"reasoningContent": map[string]any{"signature": bedrockSignature(a.Reasoning)}}})
		ev("contentBlockStop", map[string]any{"contentBlockIndex": idx})
		idx++
	}
	if a.Text != "" {
		for _, p := range words(a.Text) {
			ev("contentBlockDelta", map[string]any{"contentBlockIndex": idx, "delta": map[string]any{"text": p}})
		}
		ev("contentBlockStop", map[string]any{"contentBlockIndex": idx})
		idx++
	}
	for _, c := range a.Calls {
		ev("contentBlockStart", map[string]any{"contentBlockIndex": idx, "start": map[string]any{"toolUse": map[string]any{"toolUseId": c.ID, "name": c.Name}}})
		for _, p := range halves(c.Args) {
			ev("contentBlockDelta", map[string]any{"contentBlockIndex": idx, "delta": map[string]any{"toolUse": map[string]any{"input": p}}})
		}
		ev("contentBlockStop", map[string]any{"contentBlockIndex": idx})
		idx++
	}
	ev("messageStop", map[string]any{"stopReason": stop})
	ev("metadata", map[string]any{"usage": usage, "metrics": map[string]any{"latencyMs": 42}})
}

// bedrockInvoke answers InvokeModel for the embedding models: Titan Text
// Embeddings (one inputText) and Cohere Embed (texts).
func (f *Fake) bedrockInvoke(w http.ResponseWriter, r *http.Request) {
	body, _ := readBody(r)
	id := r.PathValue("id")
	switch {
	case strings.HasPrefix(id, "amazon.titan-embed"):
		var v struct {
			InputText      string   `json:"inputText"`
			Dimensions     *int     `json:"dimensions"`
			Normalize      *bool    `json:"normalize"`
			EmbeddingTypes []string `json:"embeddingTypes"`
		}
		if err := strict(body, &v); err != nil {
			bedrockFail(w, 400, "ValidationException", "Malformed input request: "+err.Error()+", please reformat your input and try again.")
			return
		}
		if v.InputText == "" {
			bedrockFail(w, 400, "ValidationException", "Malformed input request: #: required key [inputText] not found, please reformat your input and try again.")
			return
		}
		if v.Dimensions != nil && *v.Dimensions != 256 && *v.Dimensions != 512 && *v.Dimensions != 1024 {
			bedrockFail(w, 400, "ValidationException", "Malformed input request: #/dimensions: "+fmt.Sprint(*v.Dimensions)+" is not a valid enum value, please reformat your input and try again.")
			return
		}
		e := Embedding(len(v.InputText))
		writeJSON(w, 200, map[string]any{"embedding": e, "inputTextTokenCount": EmbeddingTokens, "embeddingsByType": map[string]any{"float": e}})
	case strings.HasPrefix(id, "cohere.embed"):
		var v struct {
			Texts          []string `json:"texts"`
			Images         []string `json:"images"`
			InputType      string   `json:"input_type"`
			Truncate       string   `json:"truncate"`
			EmbeddingTypes []string `json:"embedding_types"`
		}
		if err := strict(body, &v); err != nil {
			bedrockFail(w, 400, "ValidationException", "Malformed input request: "+err.Error()+", please reformat your input and try again.")
			return
		}
		if v.InputType == "" {
			bedrockFail(w, 400, "ValidationException", "Malformed input request: #: required key [input_type] not found, please reformat your input and try again.")
			return
		}
		if len(v.Texts) == 0 || len(v.Texts) > 96 {
			bedrockFail(w, 400, "ValidationException", "Malformed input request: #/texts: expected 1 to 96 texts, please reformat your input and try again.")
			return
		}
		var out [][]float64
		for _, text := range v.Texts {
			out = append(out, Embedding(len(text)))
		}
		writeJSON(w, 200, map[string]any{"id": randomID("", 32), "response_type": "embeddings_floats", "embeddings": out, "texts": v.Texts})
	default:
		bedrockFail(w, 400, "ValidationException", "The provided model identifier is invalid.")
	}
}
