package fakeup

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

var (
	anthropicFields = set("model", "messages", "max_tokens", "system", "metadata", "stop_sequences", "stream",
		"temperature", "top_p", "top_k", "tools", "tool_choice", "thinking", "service_tier", "output_config",
		"output_format", "container", "context_management", "mcp_servers", "inference_geo")
	anthropicCountFields = set("model", "messages", "system", "tools", "tool_choice", "thinking", "output_config",
		"output_format", "cache_control", "context_management", "mcp_servers")
	anthropicID = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
)

// anthropicSigPrefix starts the thinking signatures the fake issues. As
// the API's, a signature covers its thinking text: it is the prefix and a
// keyed hash of the text, so a signature the fake did not issue (another
// provider's, a forged one) or one sent back with other text is refused.
const anthropicSigPrefix = "EqQBCkgIfake"

// anthropicRedactedPrefix starts the redacted_thinking data the fake
// issues; data it did not issue is refused.
const anthropicRedactedPrefix = "EmwKAhgBEgy3fake"

// AnthropicRedactTrigger in a user message makes the fake answer with a
// redacted_thinking block before its thinking, as the string Anthropic
// documents for testing makes the API do.
const AnthropicRedactTrigger = "ANTHROPIC_MAGIC_STRING_TRIGGER_REDACTED_THINKING_46C9A13E193C177646C7398A98432ECCCE4C1253"

func anthropicSignature(thinking string) string {
	h := sha256.Sum256([]byte("fake-anthropic-signing-key\x00" + thinking))
	return anthropicSigPrefix + base64.StdEncoding.EncodeToString(h[:])
}

func anthropicRedacted() string { return anthropicRedactedPrefix + randomID("", 40) }

type anthropicMsg struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type anthropicBlock struct {
	Type         string          `json:"type"`
	Text         *string         `json:"text"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"`
	IsError      *bool           `json:"is_error"`
	Source       json.RawMessage `json:"source"`
	CacheControl json.RawMessage `json:"cache_control"`
	Thinking     *string         `json:"thinking"`
	Signature    *string         `json:"signature"`
	Data         string          `json:"data"`
	Citations    json.RawMessage `json:"citations"`
	Title        string          `json:"title"`
	Context      string          `json:"context"`
}

type anthropicTool struct {
	Type         string          `json:"type"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl json.RawMessage `json:"cache_control"`
	Strict       *bool           `json:"strict"`
}

// anthropicFail writes Anthropic's error shape, with a request id.
func anthropicFail(w http.ResponseWriter, status int, typ, msg string) {
	id := randomID("req_", 24)
	w.Header().Set("request-id", id)
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}, "request_id": id})
}

// NewAnthropic is a fake Anthropic API (base URL: its address):
// POST /v1/messages, /v1/messages/count_tokens and GET /v1/models/{id},
// with the key in x-api-key and anthropic-version required.
func NewAnthropic(key string) *Fake {
	f := newFake("anthropic", key)
	auth := func(next http.HandlerFunc) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("x-api-key") != key {
				anthropicFail(w, 401, "authentication_error", "invalid x-api-key")
				return
			}
			if r.Header.Get("anthropic-version") == "" {
				anthropicFail(w, 400, "invalid_request_error", "anthropic-version: header is required")
				return
			}
			next(w, r)
		})
	}
	f.mux.Handle("POST /v1/messages", auth(func(w http.ResponseWriter, r *http.Request) { f.anthropicMessages(w, r, false) }))
	f.mux.Handle("POST /v1/messages/count_tokens", auth(func(w http.ResponseWriter, r *http.Request) { f.anthropicMessages(w, r, true) }))
	f.mux.Handle("GET /v1/models/{id}", auth(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		writeJSON(w, 200, map[string]any{"type": "model", "id": id, "display_name": id, "created_at": "2025-09-29T00:00:00Z"})
	}))
	f.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		anthropicFail(w, 404, "not_found_error", "Not Found")
	})
	return f
}

func (f *Fake) anthropicMessages(w http.ResponseWriter, r *http.Request, count bool) {
	body, _ := readBody(r)
	fail := func(msg string) { anthropicFail(w, 400, "invalid_request_error", msg) }
	fields := anthropicFields
	if count {
		fields = anthropicCountFields
	}
	top, unknown, err := topLevel(body, fields)
	if err != nil {
		fail("There was an error parsing the body of your request: " + err.Error())
		return
	}
	if unknown != "" {
		fail(unknown + ": Extra inputs are not permitted")
		return
	}
	var model string
	json.Unmarshal(top["model"], &model)
	if model == "" {
		fail("model: Field required")
		return
	}
	if _, ok := top["max_tokens"]; !ok && !count {
		fail("max_tokens: Field required")
		return
	}
	var msgs []anthropicMsg
	if err := strict(top["messages"], &msgs); err != nil || len(msgs) > maxMessages {
		fail("messages: Input should be a valid list of messages")
		return
	}
	if len(msgs) == 0 {
		fail("messages: at least one message is required")
		return
	}
	blocks := make([][]anthropicBlock, len(msgs))
	for i, m := range msgs {
		if m.Role != "user" && m.Role != "assistant" {
			fail(fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i))
			return
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			blocks[i] = []anthropicBlock{{Type: "text", Text: &s}}
			continue
		}
		var raws []json.RawMessage
		if err := json.Unmarshal(m.Content, &raws); err != nil {
			fail(fmt.Sprintf("messages.%d.content: Input should be a valid list", i))
			return
		}
		for j, raw := range raws {
			var b anthropicBlock
			if err := strict(raw, &b); err != nil {
				fail(fmt.Sprintf("messages.%d.content.%d: %v", i, j, err))
				return
			}
			switch b.Type {
			case "tool_use":
				if !anthropicID.MatchString(b.ID) {
					fail(fmt.Sprintf("messages.%d.content.%d.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'", i, j))
					return
				}
			case "tool_result":
				if !anthropicID.MatchString(b.ToolUseID) {
					fail(fmt.Sprintf("messages.%d.content.%d.tool_result.tool_use_id: String should match pattern '^[a-zA-Z0-9_-]+$'", i, j))
					return
				}
			case "thinking":
				if b.Signature == nil || b.Thinking == nil || *b.Signature != anthropicSignature(*b.Thinking) {
					fail(fmt.Sprintf("messages.%d.content.%d: Invalid `signature` in `thinking` block", i, j))
					return
				}
			case "redacted_thinking":
				if !strings.HasPrefix(b.Data, anthropicRedactedPrefix) {
					fail(fmt.Sprintf("messages.%d.content.%d: Invalid `data` in `redacted_thinking` block", i, j))
					return
				}
			case "text", "image", "document", "search_result":
			default:
				fail(fmt.Sprintf("messages.%d.content.%d.type: Input tag '%s' found using 'type' does not match any of the expected tags", i, j, b.Type))
				return
			}
			blocks[i] = append(blocks[i], b)
		}
	}
	// Every tool_use is answered by a tool_result in the next message, and
	// every tool_result answers a tool_use of the previous one.
	for i := range msgs {
		var uses []string
		for _, b := range blocks[i] {
			if b.Type == "tool_use" && msgs[i].Role == "assistant" {
				uses = append(uses, b.ID)
			}
		}
		var prev []string
		if i > 0 {
			for _, b := range blocks[i-1] {
				if b.Type == "tool_use" {
					prev = append(prev, b.ID)
				}
			}
		}
		for j, b := range blocks[i] {
			if b.Type == "tool_result" && indexOf(prev, b.ToolUseID) < 0 {
				fail(fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, b.ToolUseID))
				return
			}
		}
		if len(uses) > 0 {
			var answered []string
			if i+1 < len(msgs) {
				for _, b := range blocks[i+1] {
					if b.Type == "tool_result" {
						answered = append(answered, b.ToolUseID)
					}
				}
			}
			var missing []string
			for _, u := range uses {
				if indexOf(answered, u) < 0 {
					missing = append(missing, u)
				}
			}
			if len(missing) > 0 && i+1 < len(msgs) {
				fail(fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i, strings.Join(missing, ", ")))
				return
			}
		}
	}
	t := turn{}
	last := blocks[len(blocks)-1]
	t.afterTool = len(last) > 0 && last[0].Type == "tool_result"
	if raw, ok := top["tools"]; ok {
		var tools []anthropicTool
		if err := strict(raw, &tools); err != nil {
			fail("tools: " + err.Error())
			return
		}
		for _, td := range tools {
			t.tools = append(t.tools, toolDef{Name: td.Name, Schema: td.InputSchema})
		}
	}
	if raw, ok := top["tool_choice"]; ok {
		var tc struct {
			Type                   string `json:"type"`
			Name                   string `json:"name"`
			DisableParallelToolUse *bool  `json:"disable_parallel_tool_use"`
		}
		if err := strict(raw, &tc); err != nil {
			fail("tool_choice: " + err.Error())
			return
		}
		t.none, t.any = tc.Type == "none", tc.Type == "any"
		if tc.Type == "tool" {
			t.forced = tc.Name
		}
	}
	format := top["output_config"]
	var oc struct {
		Format *struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
		Effort string `json:"effort"`
	}
	if raw, ok := top["output_format"]; ok {
		format = []byte(`{"format":` + string(raw) + `}`)
	}
	if format != nil {
		if err := strict(format, &oc); err != nil {
			fail("output_config: " + err.Error())
			return
		}
		if oc.Format != nil {
			t.schema = oc.Format.Schema
		}
	}
	var thinking struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	}
	if raw, ok := top["thinking"]; ok {
		if err := strict(raw, &thinking); err != nil {
			fail("thinking: " + err.Error())
			return
		}
	}
	if count {
		writeJSON(w, 200, map[string]any{"input_tokens": AnthropicCount})
		return
	}
	thinks := thinking.Type == "enabled" || thinking.Type == "adaptive"
	// With thinking on, the API wants the assistant message of a tool
	// loop (the one before the last tool results) to start with its
	// thinking, as the model gave it.
	// Consecutive messages of a role are one turn to the API.
	if thinks && t.afterTool && len(msgs) > 1 {
		i := len(msgs) - 2
		for i > 0 && msgs[i-1].Role == "assistant" {
			i--
		}
		if first := blocks[i]; msgs[i].Role == "assistant" && len(first) > 0 && first[0].Type != "thinking" && first[0].Type != "redacted_thinking" {
			fail(fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks).", i, first[0].Type))
			return
		}
	}
	a := plan(t, "anthropic", func() string { return randomID("toolu_01", 22) })
	if thinks {
		a.Reasoning = "The user wants a short answer."
		for _, b := range last {
			if b.Type == "text" && b.Text != nil && strings.Contains(*b.Text, AnthropicRedactTrigger) {
				a.Redacted = anthropicRedacted()
			}
		}
	}
	var stream bool
	json.Unmarshal(top["stream"], &stream)
	if !stream {
		writeJSON(w, 200, anthropicMessage(model, a, true))
		return
	}
	anthropicStream(w, model, a)
}

func anthropicUsage(output int) map[string]any {
	return map[string]any{"input_tokens": InputTokens, "output_tokens": output, "cache_creation_input_tokens": 0,
		"cache_read_input_tokens": 0, "service_tier": "standard"}
}

func anthropicStop(a answer) string {
	if len(a.Calls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

// anthropicMessage is the Message of an answer (full, or empty as
// message_start carries it).
func anthropicMessage(model string, a answer, full bool) map[string]any {
	m := map[string]any{"id": randomID("msg_01", 22), "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": anthropicUsage(1)}
	if !full {
		return m
	}
	var content []any
	if a.Redacted != "" {
		content = append(content, map[string]any{"type": "redacted_thinking", "data": a.Redacted})
	}
	if a.Reasoning != "" {
		content = append(content, map[string]any{"type": "thinking", "thinking": a.Reasoning, "signature": anthropicSignature(a.Reasoning)})
	}
	if a.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": a.Text})
	}
	for _, c := range a.Calls {
		content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": json.RawMessage(c.Args)})
	}
	m["content"], m["stop_reason"], m["usage"] = content, anthropicStop(a), anthropicUsage(OutputTokens)
	return m
}

// anthropicStream writes the answer as Messages events: message_start,
// a ping, each block (thinking with its signature_delta, text deltas,
// tool_use with input_json_delta starting with ""), message_delta with
// the stop reason and cumulative usage, message_stop.
func anthropicStream(w http.ResponseWriter, model string, a answer) {
	startStream(w, "text/event-stream")
	ev := func(name string, v map[string]any) {
		v["type"] = name
		sse(w, name, v)
	}
	ev("message_start", map[string]any{"message": anthropicMessage(model, a, false)})
	ev("ping", map[string]any{})
	idx := 0
	if a.Redacted != "" {
		ev("content_block_start", map[string]any{"index": idx, "content_block": map[string]any{"type": "redacted_thinking", "data": a.Redacted}})
		ev("content_block_stop", map[string]any{"index": idx})
		idx++
	}
	if a.Reasoning != "" {
		ev("content_block_start", map[string]any{"index": idx, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
		for _, p := range words(a.Reasoning) {
			ev("content_block_delta", map[string]any{"index": idx, "delta": map[string]any{"type": "thinking_delta", "thinking": p}})
		}
		ev("content_block_delta", map[string]any{"index": idx, "delta": map[string]any{"type": "signature_delta", "signature": anthropicSignature(a.Reasoning)}})
		ev("content_block_stop", map[string]any{"index": idx})
		idx++
	}
	if a.Text != "" {
		ev("content_block_start", map[string]any{"index": idx, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, p := range words(a.Text) {
			ev("content_block_delta", map[string]any{"index": idx, "delta": map[string]any{"type": "text_delta", "text": p}})
		}
		ev("content_block_stop", map[string]any{"index": idx})
		idx++
	}
	for _, c := range a.Calls {
		ev("content_block_start", map[string]any{"index": idx, "content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}})
		for _, p := range append([]string{""}, halves(c.Args)...) {
			ev("content_block_delta", map[string]any{"index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}})
		}
		ev("content_block_stop", map[string]any{"index": idx})
		idx++
	}
	ev("message_delta", map[string]any{"delta": map[string]any{"stop_reason": anthropicStop(a), "stop_sequence": nil},
		"usage": map[string]any{"input_tokens": InputTokens, "output_tokens": OutputTokens, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}})
	ev("message_stop", map[string]any{})
}
