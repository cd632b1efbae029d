package fakeup

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// The Chat Completions shape, as OpenAI, DeepSeek and Mistral take it. Each
// of the three has its own field list and rules (chatRules).

type chatMsg struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	Name             string          `json:"name"`
	ToolCalls        []chatToolCall  `json:"tool_calls"`
	ToolCallID       string          `json:"tool_call_id"`
	Refusal          json.RawMessage `json:"refusal"`
	Audio            json.RawMessage `json:"audio"`
	ReasoningContent *string         `json:"reasoning_content"`
	Prefix           *bool           `json:"prefix"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Index    *int   `json:"index"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"function"`
}

type responseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Strict      *bool           `json:"strict"`
	} `json:"json_schema"`
}

// chatRules is one provider's variant of Chat Completions.
type chatRules struct {
	provider    string
	fields      map[string]bool // top-level fields the API takes
	msgFields   map[string]bool // fields of a message
	fail        func(w http.ResponseWriter, status int, typ, code, param, msg string)
	checkIDs    func(i, j int, id string, toolCallID bool) (param, code, msg string, ok bool)
	newID       func() string
	usageAlways bool // the stream's last chunk carries usage unasked (Mistral)
	reasoning   func(model string) string
	mistral     bool
	// noJSONSchema: response_format json_schema is refused (DeepSeek
	// takes text and json_object only).
	noJSONSchema bool
}

var oaiFields = set("model", "messages", "audio", "frequency_penalty", "function_call", "functions", "logit_bias",
	"logprobs", "max_completion_tokens", "max_tokens", "metadata", "modalities", "n", "parallel_tool_calls",
	"prediction", "presence_penalty", "prompt_cache_key", "prompt_cache_retention", "reasoning_effort",
	"response_format", "safety_identifier", "seed", "service_tier", "stop", "store", "stream", "stream_options",
	"temperature", "tool_choice", "tools", "top_logprobs", "top_p", "user", "verbosity", "web_search_options")

// openAIFail writes OpenAI's error shape (all four keys, null when unset).
func openAIFail(w http.ResponseWriter, status int, typ, code, param, msg string) {
	e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if param != "" {
		e["param"] = param
	}
	if code != "" {
		e["code"] = code
	}
	writeJSON(w, status, map[string]any{"error": e})
}

// serveChat answers POST …/chat/completions.
func (f *Fake) serveChat(rules chatRules) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := readBody(r)
		top, unknown, err := topLevel(body, rules.fields)
		if err != nil {
			rules.fail(w, 400, "invalid_request_error", "", "", "We could not parse the JSON body of your request. ("+err.Error()+")")
			return
		}
		if unknown != "" {
			if rules.mistral {
				mistralExtra(w, []any{"body", unknown})
				return
			}
			rules.fail(w, 400, "invalid_request_error", "", "", "Unrecognized request argument supplied: "+unknown)
			return
		}
		var model string
		json.Unmarshal(top["model"], &model)
		if model == "" {
			rules.fail(w, 400, "invalid_request_error", "", "model", "you must provide a model parameter")
			return
		}
		var stream bool
		if raw, ok := top["stream"]; ok && json.Unmarshal(raw, &stream) != nil {
			rules.fail(w, 400, "invalid_request_error", "", "stream", "Invalid type for 'stream': expected a boolean.")
			return
		}
		var so struct {
			IncludeUsage       *bool `json:"include_usage"`
			IncludeObfuscation *bool `json:"include_obfuscation"`
		}
		if raw, ok := top["stream_options"]; ok && string(raw) != "null" {
			if !stream {
				rules.fail(w, 400, "invalid_request_error", "", "stream_options", "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
				return
			}
			if err := strict(raw, &so); err != nil {
				rules.fail(w, 400, "invalid_request_error", "", "stream_options", "Invalid 'stream_options': "+err.Error())
				return
			}
		}
		var rawMsgs []map[string]json.RawMessage
		if err := json.Unmarshal(top["messages"], &rawMsgs); err != nil || len(rawMsgs) == 0 || len(rawMsgs) > maxMessages {
			rules.fail(w, 400, "invalid_request_error", "", "messages", "Invalid 'messages': expected an array of 1 to 4096 messages.")
			return
		}
		msgs := make([]chatMsg, len(rawMsgs))
		for i, m := range rawMsgs {
			for k := range m {
				if !rules.msgFields[k] {
					if rules.mistral {
						var role string
						json.Unmarshal(m["role"], &role)
						mistralExtra(w, []any{"body", "messages", i, role, k})
						return
					}
					rules.fail(w, 400, "invalid_request_error", "", fmt.Sprintf("messages[%d]", i), fmt.Sprintf("Additional properties are not allowed ('%s' was unexpected) - 'messages.%d'", k, i))
					return
				}
			}
			raw, _ := json.Marshal(m)
			if err := strict(raw, &msgs[i]); err != nil {
				rules.fail(w, 400, "invalid_request_error", "", fmt.Sprintf("messages[%d]", i), fmt.Sprintf("Invalid 'messages[%d]': %v", i, err))
				return
			}
		}
		var tools []chatTool
		if raw, ok := top["tools"]; ok && string(raw) != "null" {
			if err := strict(raw, &tools); err != nil {
				rules.fail(w, 400, "invalid_request_error", "", "tools", "Invalid 'tools': "+err.Error())
				return
			}
		}
		var rf *responseFormat
		if raw, ok := top["response_format"]; ok && string(raw) != "null" {
			rf = new(responseFormat)
			if err := strict(raw, rf); err != nil {
				rules.fail(w, 400, "invalid_request_error", "", "response_format", "Invalid 'response_format': "+err.Error())
				return
			}
		}
		n := 1
		if raw, ok := top["n"]; ok && string(raw) != "null" {
			if json.Unmarshal(raw, &n) != nil || n < 1 || n > 128 {
				rules.fail(w, 400, "invalid_request_error", "", "n", "Invalid 'n': expected an integer from 1 to 128.")
				return
			}
		}
		if !f.chatOrder(w, rules, msgs) {
			return
		}
		t := turn{afterTool: msgs[len(msgs)-1].Role == "tool"}
		for _, td := range tools {
			t.tools = append(t.tools, toolDef{Name: td.Function.Name, Schema: td.Function.Parameters})
		}
		if raw, ok := top["tool_choice"]; ok {
			var s string
			var obj struct {
				Function struct{ Name string } `json:"function"`
			}
			switch {
			case json.Unmarshal(raw, &s) == nil:
				t.none, t.any = s == "none", s == "required" || s == "any"
			case json.Unmarshal(raw, &obj) == nil:
				t.forced = obj.Function.Name
			}
		}
		if rf != nil {
			switch rf.Type {
			case "text":
			case "json_object":
				if !bytes.Contains(bytes.ToLower(top["messages"]), []byte("json")) {
					rules.fail(w, 400, "invalid_request_error", "", "messages", "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.")
					return
				}
				t.schema = []byte(`{"type":"object","properties":{"answer":{"type":"string"}}}`)
			case "json_schema":
				if rules.noJSONSchema {
					rules.fail(w, 400, "invalid_request_error", "invalid_request_error", "", "This response_format type is unavailable now")
					return
				}
				if rf.JSONSchema == nil || !regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`).MatchString(rf.JSONSchema.Name) {
					rules.fail(w, 400, "invalid_request_error", "", "response_format.json_schema.name", "Invalid 'response_format.json_schema.name': a name of 1 to 64 characters a-z, A-Z, 0-9, _ and - is required.")
					return
				}
				t.schema = rf.JSONSchema.Schema
				if t.schema == nil {
					t.schema = []byte(`{}`)
				}
			default:
				rules.fail(w, 400, "invalid_request_error", "", "response_format.type", fmt.Sprintf("Invalid value: '%s'. Supported values are: 'json_object', 'json_schema', and 'text'.", rf.Type))
				return
			}
		}
		a := plan(t, rules.provider, rules.newID)
		if rules.reasoning != nil {
			a.Reasoning = rules.reasoning(model)
		}
		id := randomID("chatcmpl-", 24)
		if rules.mistral {
			id = randomID("", 32)
		}
		created := time.Now().Unix()
		if !stream {
			writeJSON(w, 200, chatResponse(id, model, created, a, n, rules.mistral))
			return
		}
		includeUsage := rules.usageAlways || (so.IncludeUsage != nil && *so.IncludeUsage)
		chatStream(w, id, model, created, a, n, includeUsage, rules.mistral)
	}
}

// chatOrder applies the provider's rules on ids and the order of
// messages; false when it has answered with an error.
func (f *Fake) chatOrder(w http.ResponseWriter, rules chatRules, msgs []chatMsg) bool {
	var pending []string // ids of the last assistant's calls not yet answered
	pendingAt := -1
	for i, m := range msgs {
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		default:
			rules.fail(w, 400, "invalid_request_error", "invalid_value", fmt.Sprintf("messages[%d].role", i), fmt.Sprintf("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'tool', and 'developer'.", m.Role))
			return false
		}
		if rules.mistral && i > 0 {
			prev := msgs[i-1].Role
			allowed := map[string]string{"system": "user assistant system", "user": "assistant system user",
				"assistant": "assistant user tool", "tool": "assistant tool"}
			if !strings.Contains(allowed[prev], m.Role) {
				mistralFail(w, 400, "invalid_request_message_order", fmt.Sprintf("Unexpected role '%s' after role '%s'", m.Role, prev))
				return false
			}
		}
		if m.Role != "tool" && len(pending) > 0 {
			if rules.mistral {
				mistralFail(w, 400, "invalid_request_message_order", "Not the same number of function calls and responses")
			} else {
				rules.fail(w, 400, "invalid_request_error", "", fmt.Sprintf("messages.[%d].role", pendingAt), "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: "+strings.Join(pending, ", "))
			}
			return false
		}
		for j, tc := range m.ToolCalls {
			if m.Role != "assistant" {
				break
			}
			if param, code, msg, ok := rules.checkIDs(i, j, tc.ID, false); !ok {
				rules.fail(w, 400, "invalid_request_error", code, param, msg)
				return false
			}
		}
		switch m.Role {
		case "assistant":
			pending, pendingAt = nil, i
			for _, tc := range m.ToolCalls {
				pending = append(pending, tc.ID)
			}
			if rules.mistral && len(m.ToolCalls) == 0 && isEmptyContent(m.Content) && (m.Prefix == nil || !*m.Prefix) {
				mistralFail(w, 400, "invalid_request_message", "Assistant message must have either content or tool_calls, but not none.")
				return false
			}
		case "tool":
			if param, code, msg, ok := rules.checkIDs(i, -1, m.ToolCallID, true); !ok {
				rules.fail(w, 400, "invalid_request_error", code, param, msg)
				return false
			}
			k := indexOf(pending, m.ToolCallID)
			if pendingAt < 0 || (k < 0 && !rules.mistral) {
				rules.fail(w, 400, "invalid_request_error", "", fmt.Sprintf("messages.[%d].role", i), "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.")
				return false
			}
			if k >= 0 {
				pending = append(pending[:k], pending[k+1:]...)
			}
		default:
			pendingAt = -1
		}
	}
	if len(pending) > 0 {
		rules.fail(w, 400, "invalid_request_error", "", fmt.Sprintf("messages.[%d].role", pendingAt), "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: "+strings.Join(pending, ", "))
		return false
	}
	if rules.mistral {
		last := msgs[len(msgs)-1]
		if last.Role != "user" && last.Role != "tool" && !(last.Role == "assistant" && last.Prefix != nil && *last.Prefix) {
			mistralFail(w, 400, "invalid_request_message_order", fmt.Sprintf("Expected last role User or Tool (or Assistant with prefix True) for serving but got %s", last.Role))
			return false
		}
	}
	return true
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func isEmptyContent(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null" || s == `""` || s == "[]"
}

// openAIIDs: OpenAI refuses tool-call ids longer than 40 characters.
func openAIIDs(i, j int, id string, toolCallID bool) (string, string, string, bool) {
	if len(id) <= 40 {
		return "", "", "", true
	}
	param := fmt.Sprintf("messages[%d].tool_calls[%d].id", i, j)
	if toolCallID {
		param = fmt.Sprintf("messages[%d].tool_call_id", i)
	}
	return param, "string_above_max_length", fmt.Sprintf("Invalid '%s': string too long. Expected a string with maximum length 40, but got a string with length %d instead.", param, len(id)), false
}

func chatFinish(a answer) string {
	if len(a.Calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func chatUsage(reasoning string) map[string]any {
	u := map[string]any{"prompt_tokens": InputTokens, "completion_tokens": OutputTokens, "total_tokens": InputTokens + OutputTokens,
		"prompt_tokens_details": map[string]any{"cached_tokens": 0}}
	if reasoning != "" {
		u["completion_tokens_details"] = map[string]any{"reasoning_tokens": 4}
	}
	return u
}

func chatResponse(id, model string, created int64, a answer, n int, mistral bool) map[string]any {
	var choices []any
	for k := range n {
		msg := map[string]any{"role": "assistant", "content": nil}
		if a.Text != "" {
			msg["content"] = a.Text
		}
		if !mistral {
			msg["refusal"] = nil
		}
		if a.Reasoning != "" {
			msg["reasoning_content"] = a.Reasoning
		}
		if len(a.Calls) > 0 {
			var tcs []any
			for i, c := range a.Calls {
				tc := map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Args}}
				if mistral {
					tc["index"] = i
				}
				tcs = append(tcs, tc)
			}
			msg["tool_calls"] = tcs
		}
		choices = append(choices, map[string]any{"index": k, "message": msg, "logprobs": nil, "finish_reason": chatFinish(a)})
	}
	usage := chatUsage(a.Reasoning)
	if mistral {
		usage = map[string]any{"prompt_tokens": InputTokens, "completion_tokens": OutputTokens, "total_tokens": InputTokens + OutputTokens}
	}
	out := map[string]any{"id": id, "object": "chat.completion", "created": created, "model": model, "choices": choices, "usage": usage}
	if !mistral {
		out["system_fingerprint"] = "fp_fake01"
	}
	return out
}

// chatStream writes the answer as chunks: role, reasoning, text words,
// each tool call (id and name first, then its arguments in two pieces; in
// one chunk for Mistral, which sends calls whole), the finish reason, and
// the usage chunk with choices [] when asked (on the last chunk for
// Mistral).
func chatStream(w http.ResponseWriter, id, model string, created int64, a answer, n int, includeUsage, mistral bool) {
	startStream(w, "text/event-stream")
	chunk := func(choices []any, usage any) map[string]any {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model, "choices": choices}
		if !mistral {
			c["system_fingerprint"] = "fp_fake01"
			if includeUsage {
				c["usage"] = usage
			}
		} else if usage != nil {
			c["usage"] = usage
		}
		return c
	}
	each := func(delta map[string]any, finish any) {
		var cs []any
		for k := range n {
			cs = append(cs, map[string]any{"index": k, "delta": delta, "logprobs": nil, "finish_reason": finish})
		}
		sse(w, "", chunk(cs, nil))
	}
	each(map[string]any{"role": "assistant", "content": ""}, nil)
	if a.Reasoning != "" {
		for _, p := range words(a.Reasoning) {
			each(map[string]any{"reasoning_content": p}, nil)
		}
	}
	for _, p := range words(a.Text) {
		each(map[string]any{"content": p}, nil)
	}
	for i, c := range a.Calls {
		if mistral {
			each(map[string]any{"tool_calls": []any{map[string]any{"id": c.ID, "type": "function", "index": i,
				"function": map[string]any{"name": c.Name, "arguments": c.Args}}}}, nil)
			continue
		}
		each(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil)
		for _, p := range halves(c.Args) {
			each(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": p}}}}, nil)
		}
	}
	if mistral {
		var cs []any
		for k := range n {
			cs = append(cs, map[string]any{"index": k, "delta": map[string]any{"content": ""}, "finish_reason": chatFinish(a)})
		}
		sse(w, "", chunk(cs, map[string]any{"prompt_tokens": InputTokens, "completion_tokens": OutputTokens, "total_tokens": InputTokens + OutputTokens}))
	} else {
		each(map[string]any{}, chatFinish(a))
		if includeUsage {
			sse(w, "", chunk([]any{}, chatUsage(a.Reasoning)))
		}
	}
	sse(w, "", "[DONE]")
}

func readBody(r *http.Request) ([]byte, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(r.Body)
	return b.Bytes(), err
}
