package responses

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/canonjson"
	"github.com/ctxkit/ctxkit/internal/jsonscan"
)

// redactedMarker starts the encrypted_content of a reasoning item that
// stands for a redacted_thinking block (Anthropic's encrypted reasoning):
// a client hands the item back as it got it, and DecodeRequest makes the
// redacted_thinking block again, so a conversation with an Anthropic
// upstream keeps its reasoning across turns. The content of every other
// reasoning item is a signature as the upstream sent it.
const redactedMarker = "ctxkit.redacted_thinking:"

// Item kinds and their id prefixes, as the API names them.
const (
	prefixMessage   = "msg_"
	prefixReasoning = "rs_"
	prefixCall      = "fc_"
)

// callID is the call_id of a call that came without an id (a client
// must name it in its function_call_output): "call_" and its item id's
// own part.
func callID(item string) string { return "call_" + strings.TrimPrefix(item, prefixCall) }

// itemID is the id of the output item at position i of response id: ids
// are derived, not random, so a response read again has the same ones.
func itemID(prefix, id string, i int) string {
	return prefix + strings.TrimPrefix(id, "resp_") + "_" + strconv.Itoa(i)
}

// The output items, as the API writes them.

type outputText struct {
	Type        string     `json:"type"`
	Annotations []struct{} `json:"annotations"`
	Logprobs    []struct{} `json:"logprobs"`
	Text        string     `json:"text"`
	esc         []byte     // Text escaped already, when not nil: see appendText
}

func newOutputText(text string) outputText {
	return outputText{Type: "output_text", Annotations: []struct{}{}, Logprobs: []struct{}{}, Text: text}
}

type messageItem struct {
	ID      string       `json:"id"`
	Type    string       `json:"type"`
	Status  string       `json:"status"`
	Content []outputText `json:"content"`
	Role    string       `json:"role"`
}

type summaryText struct {
	Type string `json:"type"`
	Text string `json:"text"`
	esc  []byte // Text escaped already, when not nil: see appendText
}

type reasoningItem struct {
	ID               string        `json:"id"`
	Type             string        `json:"type"`
	Summary          []summaryText `json:"summary"`
	EncryptedContent *string       `json:"encrypted_content,omitempty"`
}

type callItem struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	Arguments string `json:"arguments"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
}

// marshal is v as JSON without HTML escaping (as the API writes it).
func marshal(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Every value marshalled here is made of strings, numbers and
		// raw JSON this package checked.
		panic(fmt.Sprintf("responses: marshal: %v", err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func newMessage(id, status, text string, done bool) messageItem {
	m := messageItem{ID: id, Type: "message", Status: status, Content: []outputText{}, Role: "assistant"}
	if done {
		m.Content = []outputText{newOutputText(text)}
	}
	return m
}

func newReasoning(id string, summary []string, signature, redacted string) reasoningItem {
	r := reasoningItem{ID: id, Type: "reasoning", Summary: []summaryText{}}
	for _, s := range summary {
		r.Summary = append(r.Summary, summaryText{Type: "summary_text", Text: s})
	}
	switch {
	case redacted != "":
		enc := redactedMarker + redacted
		r.EncryptedContent = &enc
	case signature != "":
		r.EncryptedContent = &signature
	}
	return r
}

// usageObject is the API's usage.
type usageObject struct {
	InputTokens        int64        `json:"input_tokens"`
	InputTokensDetails inputDetails `json:"input_tokens_details"`
	OutputTokens       int64        `json:"output_tokens"`
	OutputDetails      struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
	// CostUSD is the response's cost in US dollars, when it is known.
	CostUSD *float64 `json:"cost_usd,omitempty"`
}

type inputDetails struct {
	CachedTokens     int64 `json:"cached_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
}

func newUsage(u chat.Usage) *usageObject {
	out := &usageObject{InputTokens: u.Input, OutputTokens: u.Output, TotalTokens: u.Input + u.Output,
		InputTokensDetails: inputDetails{CachedTokens: u.CacheRead, CacheWriteTokens: u.CacheWrite}}
	out.OutputDetails.ReasoningTokens = u.Reasoning
	out.CostUSD = u.Cost
	return out
}

// responseObject is the API's Response. The fields after Usage echo the
// request, as the API does.
type responseObject struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	CreatedAt          int64             `json:"created_at"`
	Status             string            `json:"status"`
	Error              *responseError    `json:"error"`
	IncompleteDetails  *incomplete       `json:"incomplete_details"`
	Instructions       *string           `json:"instructions"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	Model              string            `json:"model"`
	Output             []json.RawMessage `json:"output"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID json.RawMessage   `json:"previous_response_id"`
	Reasoning          reasoningEcho     `json:"reasoning"`
	Store              bool              `json:"store"`
	Temperature        *float64          `json:"temperature"`
	Text               json.RawMessage   `json:"text"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Tools              []Tool            `json:"tools"`
	TopP               *float64          `json:"top_p"`
	Truncation         string            `json:"truncation"`
	Usage              *usageObject      `json:"usage"`
	User               json.RawMessage   `json:"user"`
	Metadata           json.RawMessage   `json:"metadata"`
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type incomplete struct {
	Reason string `json:"reason"`
}

type reasoningEcho struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// The echo's defaults, shared: they are only read.
var (
	rawNull       = json.RawMessage("null")
	rawTextFormat = json.RawMessage(`{"format":{"type":"text"}}`)
	rawAuto       = json.RawMessage(`"auto"`)
	rawEmpty      = json.RawMessage("{}")
)

// echo is a response object for the client's request with no output yet:
// the request's settings as the API echoes them.
func echo(req *chat.Request, model, id string, created int64) responseObject {
	r := responseObject{ID: id, Object: "response", CreatedAt: created, Status: "in_progress", Model: model,
		Output: []json.RawMessage{}, ParallelToolCalls: true, PreviousResponseID: rawNull, Store: true,
		Text: rawTextFormat, ToolChoice: rawAuto, Tools: []Tool{}, Truncation: "disabled", User: rawNull,
		Metadata: rawEmpty}
	if req == nil {
		return r
	}
	if req.System != nil {
		s := req.System.PlainText("\n")
		r.Instructions = &s
	}
	if req.MaxTokens > 0 {
		n := req.MaxTokens
		r.MaxOutputTokens = &n
	}
	r.Temperature, r.TopP = req.Temperature, req.TopP
	r.Tools, _ = tools(req.Tools, nil)
	if r.Tools == nil {
		r.Tools = []Tool{}
	}
	if tc := req.ToolChoice; tc != nil {
		if c := toolChoice(tc); c != nil {
			r.ToolChoice = c
		}
		if tc.DisableParallelToolUse != nil && *tc.DisableParallelToolUse {
			r.ParallelToolCalls = false
		}
	}
	if f := textFormat(req.Format); f != nil {
		r.Text = marshal(map[string]any{"format": f})
	}
	x := req.Extra
	if v, ok := x["previous_response_id"]; ok {
		r.PreviousResponseID = v
	}
	if v, ok := x["store"]; ok {
		r.Store = string(v) == "true"
	}
	if v, ok := x["truncation"]; ok {
		_ = json.Unmarshal(v, &r.Truncation)
	}
	if v, ok := x["user"]; ok {
		r.User = v
	}
	if v, ok := x["metadata"]; ok {
		r.Metadata = v
	}
	if req.ReasoningRequested() {
		e := req.ReasoningEffort
		r.Reasoning.Effort = &e
	}
	var kept struct {
		Effort  string `json:"effort"`
		Summary string `json:"summary"`
	}
	if v, ok := x["reasoning"]; ok && json.Unmarshal(v, &kept) == nil {
		if kept.Effort != "" {
			r.Reasoning.Effort = &kept.Effort
		}
		if kept.Summary != "" {
			r.Reasoning.Summary = &kept.Summary
		}
	}
	return r
}

// finish sets the outcome of r: its status, error or incomplete details,
// from the stop and the error of a response.
func finish(r *responseObject, stop chat.Stop, serr *chat.StreamError, usage *chat.Usage) {
	if usage != nil {
		r.Usage = newUsage(*usage)
	}
	switch {
	case serr != nil:
		r.Status = "failed"
		r.Error = &responseError{Code: errorCode(serr), Message: errorMessage(serr)}
	case stop.Reason == chat.StopMaxTokens:
		r.Status, r.IncompleteDetails = "incomplete", &incomplete{Reason: "max_output_tokens"}
	case stop.Reason == chat.StopContentFilter:
		r.Status, r.IncompleteDetails = "incomplete", &incomplete{Reason: "content_filter"}
	case stop.Reason == "" || stop.Reason == chat.StopError:
		// The upstream's stream ended before its answer did.
		r.Status = "failed"
		r.Error = &responseError{Code: "server_error", Message: "the upstream's response ended before it was complete"}
	default:
		r.Status = "completed"
	}
}

// The codes of the API's ResponseError that a gateway's errors map to.
var errorCodes = []string{"server_error", "rate_limit_exceeded", "invalid_prompt", "vector_store_timeout",
	"invalid_image", "invalid_image_format", "invalid_base64_image", "invalid_image_url", "image_too_large",
	"image_too_small", "image_parse_error", "image_content_policy_violation", "invalid_image_mode",
	"image_file_too_large", "unsupported_image_media_type", "empty_image_file", "failed_to_download_image",
	"image_file_not_found"}

// errorCode is the ResponseError code for a stream error: the provider's
// type when it is one of the API's codes, rate_limit_exceeded for a rate
// limit, server_error for another error that may pass on a retry, and
// invalid_prompt, the API's code for a request it will not answer, for
// the rest — so that a client tells the two apart as it would with the
// API itself.
func errorCode(e *chat.StreamError) string {
	for _, c := range errorCodes {
		if e.Type == c {
			return c
		}
	}
	t := strings.ToLower(e.Type)
	switch {
	case strings.Contains(t, "rate_limit") || strings.Contains(t, "ratelimit") || strings.Contains(t, "throttl") || t == "429":
		return "rate_limit_exceeded"
	case e.Retryable:
		return "server_error"
	}
	return "invalid_prompt"
}

// errorMessage is the message of a stream error, after the provider's
// own type when the code does not say it.
func errorMessage(e *chat.StreamError) string {
	if e.Type == "" || e.Type == errorCode(e) {
		return e.Message
	}
	return e.Type + ": " + e.Message
}

// EncodeResponse writes r (a collected stream, see chat.Collect) as the
// body of a non-streaming Responses API answer: a Response object
// ("object":"response") with the id, created_at and model given, the
// request's settings echoed (req may be nil: the API's defaults), and:
//
//   - output: one item per block, in order: thinking → a reasoning item
//     (summary: one summary_text of the thinking, none when it is empty;
//     encrypted_content: the signature, when there is one),
//     redacted_thinking → a reasoning item with no summary whose
//     encrypted_content is the data behind a marker DecodeRequest knows,
//     text → a message item (one output_text part), tool_use → a
//     function_call item (call_id the block's id — "call_" and the item
//     id's own part for a call without one —, arguments the input as
//     compact JSON). Item ids are msg_, rs_ and fc_ followed by the
//     response id's and the item's position. output_text (the SDKs'
//     convenience) is not on the wire.
//   - status: completed; incomplete with incomplete_details.reason
//     max_output_tokens or content_filter for those stops; failed with
//     error {code, message} when r has an error or no stop (the
//     upstream's stream was cut): the code is the provider's own when it
//     is one of the API's, rate_limit_exceeded for a rate limit,
//     server_error for an error a retry may get past (and a cut stream),
//     invalid_prompt for the others; the message is prefixed with the
//     provider's own type when the code does not say it.
//   - usage: input_tokens (Input, cached included),
//     input_tokens_details.cached_tokens (CacheRead; cache_write_tokens
//     when set), output_tokens (Output, reasoning included),
//     output_tokens_details.reasoning_tokens, total_tokens, and cost_usd
//     (Cost, US dollars) when it is set.
//
// A failed response is still a Response: the gateway chooses the HTTP
// status (and may answer an error body instead). An input that is not
// valid JSON is an error.
func EncodeResponse(res chat.Response, req *chat.Request, model, id string, created int64) ([]byte, error) {
	r := echo(req, model, id, created)
	for i := range res.Content {
		b := &res.Content[i]
		var item appender
		switch b.Type {
		case chat.TypeText:
			item = newMessage(itemID(prefixMessage, id, len(r.Output)), "completed", b.Text, true)
		case chat.TypeThinking, chat.TypeReasoning:
			text := b.Thinking
			if b.Type == chat.TypeReasoning {
				text = b.Text
			}
			var summary []string
			if text != "" {
				summary = []string{text}
			}
			item = newReasoning(itemID(prefixReasoning, id, len(r.Output)), summary, b.Signature, "")
		case chat.TypeRedactedThinking:
			item = newReasoning(itemID(prefixReasoning, id, len(r.Output)), nil, "", b.Data)
		case chat.TypeToolUse:
			if len(b.Input) > 0 && !json.Valid(b.Input) {
				return nil, fmt.Errorf("responses: content[%d].input: not valid JSON", i)
			}
			item := callItem{ID: itemID(prefixCall, id, len(r.Output)), Type: "function_call", Status: "completed",
				Arguments: compact(string(b.Input)), CallID: b.ID, Name: b.Name}
			if item.CallID == "" {
				item.CallID = callID(item.ID)
			}
			r.Output = append(r.Output, itemJSON(item))
			continue
		default:
			return nil, fmt.Errorf("responses: content[%d]: a %q block is not part of a model's output", i, b.Type)
		}
		r.Output = append(r.Output, itemJSON(item))
	}
	u := res.Usage
	finish(&r, res.Stop, res.Error, &u)
	return responseJSON(&r), nil
}

// compact is JSON text compacted ("{}" for none).
func compact(s string) string {
	if s == "" {
		return "{}"
	}
	var buf bytes.Buffer
	if json.Compact(&buf, []byte(s)) != nil {
		return s
	}
	return buf.String()
}

// The output items are written by hand rather than by encoding/json: the
// done events and the terminal event repeat the whole text, which may be
// megabytes, and encoding/json would validate it again each time. The
// fields are in the order encoding/json writes them.

func (p outputText) appendJSON(b []byte) []byte {
	b = append(b, `{"type":"output_text","annotations":[],"logprobs":[],"text":`...)
	return append(appendText(b, p.Text, p.esc), '}')
}

func (s summaryText) appendJSON(b []byte) []byte {
	b = append(b, `{"type":"summary_text","text":`...)
	return append(appendText(b, s.Text, s.esc), '}')
}

// appendText appends text as a JSON string; or, when esc is not nil, esc
// in quotes: the text escaped already. The stream encoder keeps a text as
// its deltas wrote it, so that the events that repeat a long text copy it
// rather than escape it again.
func appendText(b []byte, text string, esc []byte) []byte {
	if esc == nil {
		return chat.AppendString(b, text)
	}
	b = append(b, '"')
	b = append(b, esc...)
	return append(b, '"')
}

func (m messageItem) appendJSON(b []byte) []byte {
	b = chat.AppendString(append(b, `{"id":`...), m.ID)
	b = chat.AppendString(append(b, `,"type":"message","status":`...), m.Status)
	b = append(b, `,"content":[`...)
	for i, p := range m.Content {
		if i > 0 {
			b = append(b, ',')
		}
		b = p.appendJSON(b)
	}
	return append(b, `],"role":"assistant"}`...)
}

func (r reasoningItem) appendJSON(b []byte) []byte {
	b = chat.AppendString(append(b, `{"id":`...), r.ID)
	b = append(b, `,"type":"reasoning","summary":[`...)
	for i, s := range r.Summary {
		if i > 0 {
			b = append(b, ',')
		}
		b = s.appendJSON(b)
	}
	b = append(b, ']')
	if r.EncryptedContent != nil {
		b = chat.AppendString(append(b, `,"encrypted_content":`...), *r.EncryptedContent)
	}
	return append(b, '}')
}

func (c callItem) appendJSON(b []byte) []byte {
	b = chat.AppendString(append(b, `{"id":`...), c.ID)
	b = chat.AppendString(append(b, `,"type":"function_call","status":`...), c.Status)
	b = chat.AppendString(append(b, `,"arguments":`...), c.Arguments)
	b = chat.AppendString(append(b, `,"call_id":`...), c.CallID)
	b = chat.AppendString(append(b, `,"name":`...), c.Name)
	return append(b, '}')
}

// appender is an output item or part that writes its own JSON.
type appender interface{ appendJSON([]byte) []byte }

// itemJSON is v's JSON. Its buffer starts large enough for most items,
// so that writing one takes one allocation rather than a few growths.
func itemJSON(v appender) json.RawMessage { return v.appendJSON(make([]byte, 0, 256)) }

// responseJSON is r as JSON.
func responseJSON(r *responseObject) []byte {
	n := 1024
	for _, it := range r.Output {
		n += len(it) + 1
	}
	return r.appendJSON(make([]byte, 0, n))
}

// appendJSON appends r as encoding/json writes it (without HTML
// escaping), by hand: the response is written twice at the start of
// every stream, and again at its end with the whole output. Raw JSON
// fields are checked and compacted as encoding/json does; one that is
// not valid JSON is a bug of the caller, as it is for encoding/json.
func (r *responseObject) appendJSON(b []byte) []byte {
	b = chat.AppendString(append(b, `{"id":`...), r.ID)
	b = chat.AppendString(append(b, `,"object":`...), r.Object)
	b = strconv.AppendInt(append(b, `,"created_at":`...), r.CreatedAt, 10)
	b = chat.AppendString(append(b, `,"status":`...), r.Status)
	b = append(b, `,"error":`...)
	if e := r.Error; e != nil {
		b = chat.AppendString(append(b, `{"code":`...), e.Code)
		b = append(chat.AppendString(append(b, `,"message":`...), e.Message), '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"incomplete_details":`...)
	if d := r.IncompleteDetails; d != nil {
		b = append(chat.AppendString(append(b, `{"reason":`...), d.Reason), '}')
	} else {
		b = append(b, "null"...)
	}
	b = appendOptString(append(b, `,"instructions":`...), r.Instructions)
	b = append(b, `,"max_output_tokens":`...)
	if r.MaxOutputTokens != nil {
		b = strconv.AppendInt(b, int64(*r.MaxOutputTokens), 10)
	} else {
		b = append(b, "null"...)
	}
	b = chat.AppendString(append(b, `,"model":`...), r.Model)
	b = append(b, `,"output":`...)
	if r.Output == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, it := range r.Output {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, it...) // written by this package, compact
		}
		b = append(b, ']')
	}
	b = strconv.AppendBool(append(b, `,"parallel_tool_calls":`...), r.ParallelToolCalls)
	b = appendRawJSON(append(b, `,"previous_response_id":`...), r.PreviousResponseID, "previous_response_id")
	b = appendOptString(append(b, `,"reasoning":{"effort":`...), r.Reasoning.Effort)
	b = appendOptString(append(b, `,"summary":`...), r.Reasoning.Summary)
	b = strconv.AppendBool(append(b, `},"store":`...), r.Store)
	b = appendOptFloat(append(b, `,"temperature":`...), r.Temperature)
	b = appendRawJSON(append(b, `,"text":`...), r.Text, "text")
	b = appendRawJSON(append(b, `,"tool_choice":`...), r.ToolChoice, "tool_choice")
	b = append(b, `,"tools":`...)
	if r.Tools == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range r.Tools {
			if i > 0 {
				b = append(b, ',')
			}
			b = r.Tools[i].appendJSON(b)
		}
		b = append(b, ']')
	}
	b = appendOptFloat(append(b, `,"top_p":`...), r.TopP)
	b = chat.AppendString(append(b, `,"truncation":`...), r.Truncation)
	b = append(b, `,"usage":`...)
	if u := r.Usage; u != nil {
		b = u.appendJSON(b)
	} else {
		b = append(b, "null"...)
	}
	b = appendRawJSON(append(b, `,"user":`...), r.User, "user")
	b = appendRawJSON(append(b, `,"metadata":`...), r.Metadata, "metadata")
	return append(b, '}')
}

func (t *Tool) appendJSON(b []byte) []byte {
	b = chat.AppendString(append(b, `{"type":`...), t.Type)
	b = chat.AppendString(append(b, `,"name":`...), t.Name)
	if t.Description != "" {
		b = chat.AppendString(append(b, `,"description":`...), t.Description)
	}
	b = appendRawJSON(append(b, `,"parameters":`...), t.Parameters, "tools.parameters")
	b = strconv.AppendBool(append(b, `,"strict":`...), t.Strict)
	return append(b, '}')
}

func (u *usageObject) appendJSON(b []byte) []byte {
	b = strconv.AppendInt(append(b, `{"input_tokens":`...), u.InputTokens, 10)
	b = strconv.AppendInt(append(b, `,"input_tokens_details":{"cached_tokens":`...), u.InputTokensDetails.CachedTokens, 10)
	if u.InputTokensDetails.CacheWriteTokens != 0 {
		b = strconv.AppendInt(append(b, `,"cache_write_tokens":`...), u.InputTokensDetails.CacheWriteTokens, 10)
	}
	b = strconv.AppendInt(append(b, `},"output_tokens":`...), u.OutputTokens, 10)
	b = strconv.AppendInt(append(b, `,"output_tokens_details":{"reasoning_tokens":`...), u.OutputDetails.ReasoningTokens, 10)
	b = strconv.AppendInt(append(b, `},"total_tokens":`...), u.TotalTokens, 10)
	if u.CostUSD != nil {
		// In plain decimal, never an exponent, as in every dialect.
		b = strconv.AppendFloat(append(b, `,"cost_usd":`...), *u.CostUSD, 'f', -1, 64)
	}
	return append(b, '}')
}

func appendOptString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return chat.AppendString(b, *s)
}

// appendOptFloat appends f as encoding/json writes a float64
// (canonjson.AppendFloat).
func appendOptFloat(b []byte, f *float64) []byte {
	if f == nil {
		return append(b, "null"...)
	}
	v := *f
	if math.IsNaN(v) || math.IsInf(v, 0) {
		// Every value written here came from JSON.
		panic(fmt.Sprintf("responses: marshal: unsupported value: %v", v))
	}
	b, _ = canonjson.AppendFloat(b, v)
	return b
}

// appendRawJSON appends raw JSON as encoding/json writes a
// json.RawMessage: null for none, else compacted. Raw JSON that is not
// valid is a bug of the caller (every value written here was read as
// JSON), as it is for encoding/json.
func appendRawJSON(b []byte, raw []byte, field string) []byte {
	if raw == nil {
		return append(b, "null"...)
	}
	if s := jsonscan.New(raw); !s.Skip(maxDepth) || !s.End() {
		if _, err := json.Marshal(json.RawMessage(raw)); err != nil {
			panic(fmt.Sprintf("responses: marshal: %s: %v", field, err))
		}
		// Valid, but too deep for the fast path: encoding/json's to write.
		var buf bytes.Buffer
		_ = json.Compact(&buf, raw)
		return append(b, buf.Bytes()...)
	}
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			var buf bytes.Buffer
			_ = json.Compact(&buf, raw)
			return append(b, buf.Bytes()...)
		}
	}
	return append(b, raw...)
}
