package fakeup

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

var responsesFields = set("model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "text",
	"reasoning", "max_output_tokens", "store", "previous_response_id", "include", "stream", "stream_options",
	"temperature", "top_p", "top_logprobs", "truncation", "metadata", "user", "safety_identifier", "prompt_cache_key",
	"prompt_cache_retention", "service_tier", "background", "conversation", "prompt", "max_tool_calls")

// responsesItem is an input item of any type (the fields of all of them).
type responsesItem struct {
	Type             string          `json:"type"`
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ID               string          `json:"id"`
	Status           string          `json:"status"`
	CallID           string          `json:"call_id"`
	Name             string          `json:"name"`
	Arguments        *string         `json:"arguments"`
	Output           json.RawMessage `json:"output"`
	Summary          json.RawMessage `json:"summary"`
	EncryptedContent *string         `json:"encrypted_content"`
	Phase            string          `json:"phase"`
}

type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// responsesEncryptedPrefix starts the encrypted_content the fake issues
// for its reasoning items; the rest is a nonce and a keyed hash of it, so
// the fake, which keeps nothing, knows its own and refuses any other (a
// signature of another provider, a forged one), as the API does.
const responsesEncryptedPrefix = "gAAAAABfake"

func responsesEncrypted() string {
	nonce := randomID("", 24)
	return responsesEncryptedPrefix + nonce + "." + responsesSeal(nonce)
}

func responsesSeal(nonce string) string {
	h := sha256.Sum256([]byte("fake-openai-reasoning-key\x00" + nonce))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

func responsesIssued(enc string) bool {
	rest, ok := strings.CutPrefix(enc, responsesEncryptedPrefix)
	nonce, mac, ok2 := strings.Cut(rest, ".")
	return ok && ok2 && mac == responsesSeal(nonce)
}

// serveResponses answers POST /v1/responses, streamed or not. Nothing is
// stored: a previous_response_id is never found.
func (f *Fake) serveResponses() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := readBody(r)
		fail := func(param, code, msg string) { openAIFail(w, 400, "invalid_request_error", code, param, msg) }
		top, unknown, err := topLevel(body, responsesFields)
		if err != nil {
			fail("", "", "We could not parse the JSON body of your request.")
			return
		}
		if unknown != "" {
			fail(unknown, "unknown_parameter", fmt.Sprintf("Unknown parameter: '%s'.", unknown))
			return
		}
		var model string
		json.Unmarshal(top["model"], &model)
		if model == "" {
			fail("model", "missing_required_parameter", "Missing required parameter: 'model'.")
			return
		}
		var stream bool
		json.Unmarshal(top["stream"], &stream)
		if raw, ok := top["stream_options"]; ok && string(raw) != "null" && !stream {
			fail("stream_options", "", "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
			return
		}
		if raw, ok := top["previous_response_id"]; ok && string(raw) != "null" {
			var id string
			json.Unmarshal(raw, &id)
			fail("previous_response_id", "previous_response_not_found", fmt.Sprintf("Previous response with id '%s' not found.", id))
			return
		}
		var items []responsesItem
		t := turn{}
		var text string
		switch {
		case json.Unmarshal(top["input"], &text) == nil:
		default:
			var raws []json.RawMessage
			if err := json.Unmarshal(top["input"], &raws); err != nil || len(raws) > maxMessages {
				fail("input", "invalid_type", "Invalid type for 'input': expected one of a string or an array of input items.")
				return
			}
			items = make([]responsesItem, len(raws))
			calls := map[string]bool{}
			for i, raw := range raws {
				if err := strict(raw, &items[i]); err != nil {
					fail(fmt.Sprintf("input[%d]", i), "", fmt.Sprintf("Invalid 'input[%d]': %v", i, err))
					return
				}
				it := items[i]
				switch it.Type {
				case "function_call":
					calls[it.CallID] = true
				case "function_call_output":
					if !calls[it.CallID] {
						fail("input", "", fmt.Sprintf("No tool call found for function call output with call_id %s.", it.CallID))
						return
					}
				case "reasoning":
					if it.EncryptedContent != nil && !responsesIssued(*it.EncryptedContent) {
						fail("", "invalid_encrypted_content", "The encrypted content for item input["+strconv.Itoa(i)+"] could not be verified.")
						return
					}
				case "", "message", "item_reference":
				default:
					fail(fmt.Sprintf("input[%d].type", i), "invalid_value", fmt.Sprintf("Invalid value: '%s'.", it.Type))
					return
				}
			}
			t.afterTool = len(items) > 0 && items[len(items)-1].Type == "function_call_output"
		}
		var tools []responsesTool
		if raw, ok := top["tools"]; ok && string(raw) != "null" {
			if err := strict(raw, &tools); err != nil {
				fail("tools", "", "Invalid 'tools': "+err.Error())
				return
			}
			for _, td := range tools {
				t.tools = append(t.tools, toolDef{Name: td.Name, Schema: td.Parameters})
			}
		}
		if raw, ok := top["tool_choice"]; ok {
			var s string
			var obj struct{ Type, Name string }
			switch {
			case json.Unmarshal(raw, &s) == nil:
				t.none, t.any = s == "none", s == "required"
			case json.Unmarshal(raw, &obj) == nil:
				t.forced = obj.Name
			}
		}
		if raw, ok := top["text"]; ok && string(raw) != "null" {
			var tf struct {
				Format *struct {
					Type        string          `json:"type"`
					Name        string          `json:"name"`
					Schema      json.RawMessage `json:"schema"`
					Description string          `json:"description"`
					Strict      *bool           `json:"strict"`
				} `json:"format"`
				Verbosity string `json:"verbosity"`
			}
			if err := strict(raw, &tf); err != nil {
				fail("text", "", "Invalid 'text': "+err.Error())
				return
			}
			if tf.Format != nil && tf.Format.Type == "json_schema" {
				if tf.Format.Name == "" {
					fail("text.format.name", "missing_required_parameter", "Missing required parameter: 'text.format.name'.")
					return
				}
				t.schema = tf.Format.Schema
			}
		}
		var summary, reasons bool
		if raw, ok := top["reasoning"]; ok && string(raw) != "null" {
			reasons = true
			var rs struct {
				Effort          *string `json:"effort"`
				Summary         *string `json:"summary"`
				GenerateSummary *string `json:"generate_summary"`
			}
			if err := strict(raw, &rs); err != nil {
				fail("reasoning", "", "Invalid 'reasoning': "+err.Error())
				return
			}
			summary = rs.Summary != nil && *rs.Summary != ""
		}
		a := plan(t, "openai", func() string { return randomID("call_", 24) })
		if summary {
			a.Reasoning = "The user wants a short answer."
		}
		// With reasoning.encrypted_content included, the reasoning item
		// carries the reasoning, encrypted, for the next turn.
		var include []string
		json.Unmarshal(top["include"], &include)
		if reasons && slices.Contains(include, "reasoning.encrypted_content") {
			a.Encrypted = responsesEncrypted()
		}
		resp := responsesObject(model, a)
		if !stream {
			writeJSON(w, 200, resp)
			return
		}
		responsesStream(w, resp, a)
	}
}

func responsesUsage() map[string]any {
	return map[string]any{"input_tokens": InputTokens, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": OutputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": InputTokens + OutputTokens}
}

// responsesObject is the completed Response of an answer.
func responsesObject(model string, a answer) map[string]any {
	var output []any
	if a.Reasoning != "" || a.Encrypted != "" {
		summary := []any{}
		if a.Reasoning != "" {
			summary = append(summary, map[string]any{"type": "summary_text", "text": a.Reasoning})
		}
		var enc any
		if a.Encrypted != "" {
			enc = a.Encrypted
		}
		output = append(output, map[string]any{"type": "reasoning", "id": randomID("rs_", 24), "summary": summary, "encrypted_content": enc})
	}
	if a.Text != "" {
		output = append(output, map[string]any{"type": "message", "id": randomID("msg_", 24), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": a.Text, "annotations": []any{}, "logprobs": []any{}}}})
	}
	for _, c := range a.Calls {
		output = append(output, map[string]any{"type": "function_call", "id": randomID("fc_", 24), "call_id": c.ID,
			"name": c.Name, "arguments": c.Args, "status": "completed"})
	}
	now := time.Now().Unix()
	return map[string]any{"id": randomID("resp_", 24), "object": "response", "created_at": now, "completed_at": now,
		"status": "completed", "error": nil, "incomplete_details": nil, "instructions": nil, "model": model,
		"output": output, "parallel_tool_calls": true, "previous_response_id": nil, "store": false,
		"temperature": 1.0, "tool_choice": "auto", "tools": []any{}, "top_p": 1.0, "truncation": "disabled",
		"usage": responsesUsage(), "metadata": map[string]any{}, "text": map[string]any{"format": map[string]any{"type": "text"}}}
}

// responsesStream writes the Response as the typed events, each with an
// event line and a sequence_number, then data: [DONE].
func responsesStream(w http.ResponseWriter, done map[string]any, a answer) {
	startStream(w, "text/event-stream")
	seq := 0
	emit := func(typ string, fields map[string]any) {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		sse(w, typ, fields)
	}
	pending := map[string]any{}
	for k, v := range done {
		pending[k] = v
	}
	pending["status"], pending["output"], pending["usage"], pending["completed_at"] = "in_progress", []any{}, nil, nil
	emit("response.created", map[string]any{"response": pending})
	emit("response.in_progress", map[string]any{"response": pending})
	for oi, raw := range done["output"].([]any) {
		item := raw.(map[string]any)
		id := item["id"].(string)
		switch item["type"] {
		case "reasoning":
			emit("response.output_item.added", map[string]any{"output_index": oi, "item": map[string]any{"type": "reasoning", "id": id, "summary": []any{}}})
			if a.Reasoning == "" {
				break
			}
			emit("response.reasoning_summary_part.added", map[string]any{"item_id": id, "output_index": oi, "summary_index": 0, "part": map[string]any{"type": "summary_text", "text": ""}})
			for _, p := range words(a.Reasoning) {
				emit("response.reasoning_summary_text.delta", map[string]any{"item_id": id, "output_index": oi, "summary_index": 0, "delta": p})
			}
			emit("response.reasoning_summary_text.done", map[string]any{"item_id": id, "output_index": oi, "summary_index": 0, "text": a.Reasoning})
			emit("response.reasoning_summary_part.done", map[string]any{"item_id": id, "output_index": oi, "summary_index": 0, "part": map[string]any{"type": "summary_text", "text": a.Reasoning}})
		case "message":
			emit("response.output_item.added", map[string]any{"output_index": oi, "item": map[string]any{"type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": []any{}}})
			emit("response.content_part.added", map[string]any{"item_id": id, "output_index": oi, "content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			for _, p := range words(a.Text) {
				emit("response.output_text.delta", map[string]any{"item_id": id, "output_index": oi, "content_index": 0, "delta": p, "logprobs": []any{}})
			}
			emit("response.output_text.done", map[string]any{"item_id": id, "output_index": oi, "content_index": 0, "text": a.Text, "logprobs": []any{}})
			emit("response.content_part.done", map[string]any{"item_id": id, "output_index": oi, "content_index": 0, "part": map[string]any{"type": "output_text", "text": a.Text, "annotations": []any{}}})
		case "function_call":
			args := item["arguments"].(string)
			emit("response.output_item.added", map[string]any{"output_index": oi, "item": map[string]any{"type": "function_call", "id": id,
				"call_id": item["call_id"], "name": item["name"], "arguments": "", "status": "in_progress"}})
			for _, p := range halves(args) {
				emit("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": oi, "delta": p})
			}
			emit("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": oi, "arguments": args, "name": item["name"]})
		}
		emit("response.output_item.done", map[string]any{"output_index": oi, "item": item})
	}
	emit("response.completed", map[string]any{"response": done})
	sse(w, "", "[DONE]")
}
