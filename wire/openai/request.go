package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/strictjson"
	"github.com/ctxkit/ctxkit/wire/internal/reqjson"
)

// DecodeRequest reads a Chat Completions request body as a canonical
// request: the direction of a gateway that takes OpenAI clients. Errors
// are *chat.Error values naming the place in the body
// (messages[2].content[1].image_url.url).
//
// Messages:
//
//   - system and developer messages, wherever they are, make the system
//     prompt, in order: their text (string content, or text parts) joined
//     with "\n" into a string. When a system text part has cache_control
//     (the Anthropic-style marker of OpenRouter clients), the system prompt
//     is text blocks instead, one per string or part, markers kept. Empty
//     text is skipped; nothing left means no system prompt.
//   - user messages: string content stays a string; parts become blocks:
//     text → text (cache_control kept), refusal → text, image_url with a
//     data URL ("data:image/png;base64,...") → a base64 image, with any
//     other URL → a url image (a "detail" of low or high is kept in the
//     source's Extra), file with file_data (a base64 data URL) → a base64
//     document titled by its filename, file with file_id → a document of
//     source {"type":"file","file_id"}; a part of any other type
//     (input_audio, ...) is kept as a block of that type with its fields,
//     for the converters to carry or refuse with a warning (but a part
//     whose type is one of the canonical block types, such as "image", is
//     refused: it would be read as that block).
//   - tool messages → tool_result blocks (tool_use_id from tool_call_id;
//     content a string, or text parts as blocks) in one user message for
//     each run of consecutive tool messages; a user message that directly
//     follows the run joins that same user message after the results (the
//     inverse of EncodeRequest, which splits such a message).
//   - assistant messages: reasoning_content (DeepSeek) or reasoning
//     (OpenRouter) → a leading reasoning block; reasoning_details → the
//     message's ReasoningDetails as it came; content (string, parts, or
//     null) and refusal → text; tool_calls → tool_use blocks whose input is
//     the arguments parsed: "" → {}; arguments that are not a JSON object
//     (models do produce invalid JSON, and refusing the request would
//     strand the conversation) are kept as {"_raw": "<the arguments>"}. A
//     message with only string content stays a string.
//   - Message fields ctxkit does not model (name, ...) are kept in the
//     message's Extra, except null values and annotations. The legacy
//     function role and function_call are refused.
//
// Tools: {"type":"function","function":{name, description, parameters}}
// → name, description, input_schema (parameters; {"type":"object",
// "properties":{}} when absent); strict true kept in the tool's Extra
// (false is the default, dropped); other tool types are
// refused. tool_choice "auto", "none", "required" (and Mistral's "any") →
// auto, none, any; {"type":"function","function":{"name"}} → tool.
// parallel_tool_calls false → disable_parallel_tool_use (on an auto tool
// choice when none was given).
//
// Parameters: max_completion_tokens, or max_tokens when it is absent →
// max_tokens; temperature; top_p; stop (a string or an array) →
// stop_sequences; reasoning_effort minimal, low, medium or high as it is,
// "none" → thinking disabled; OpenRouter's reasoning object: effort as
// reasoning_effort (when there is none), max_tokens as a thinking budget,
// enabled false as thinking disabled; stream; stream_options.include_usage
// → StreamUsage (the dialect's stream then ends with the usage chunk), its
// include_obfuscation is the transport's and dropped. response_format →
// Format: {"type":"json_object"} as it is,
// {"type":"json_schema","json_schema":{name, description, schema, strict}}
// with its members (name and schema required), {"type":"text"} no format.
// Other top-level fields (user, seed, n, logprobs, ...) are kept in Extra
// under their names, null ones skipped, the form of those whose value
// decides what becomes of them checked (n an integer of 1 to 128,
// top_logprobs 0 to 20, seed an integer, logprobs and store booleans, the
// penalties -2 to 2, ...); wire.CheckFields says, per upstream, which are
// carried, mapped, dropped with a warning or refused.
//
// Limits: a request of more than chat.MaxMessages messages,
// chat.MaxTools tools or chat.MaxStopSequences stop sequences is refused,
// and so is one that makes more than chat.MaxBlocks blocks: every content
// part counts (of system messages too, even when their text is joined
// into a string), every tool call, every tool message (its tool_result
// block), reasoning text, and string content that becomes a block (beside
// tool calls or reasoning, or a user message joining tool results). An
// array is counted before its elements are read. A request of more than
// chat.MaxExtraFields fields that ctxkit does not model is refused too:
// every field not named above counts, whether it is kept in an Extra map
// or dropped (as null ones are), except within the values passed on as
// they are (parameters, arguments, reasoning_details, cache_control); an
// object of so many members that they must run past the bound is refused
// before they are read.
func DecodeRequest(body []byte) (chat.Request, error) {
	var d requestDecoder
	if err := d.request(body); err != nil {
		return chat.Request{}, err
	}
	return d.r, nil
}

type requestDecoder struct {
	r chat.Request
	// system prompt
	sysBlocks []chat.Block
	sysCache  bool
	// toolRun is the position in r.Messages of the user message that holds
	// the current run of tool results, -1 when the last message was not a
	// tool message.
	toolRun int
	// blocks counts the blocks made so far, against chat.MaxBlocks.
	blocks int
	// extras counts the unknown fields read so far, against
	// chat.MaxExtraFields.
	extras int
}

// The fields ctxkit models in each object of a request; the others are
// unknown and count against chat.MaxExtraFields (annotations, detail,
// exclude, include_obfuscation and strict are known, and dropped).
var (
	requestKeys = []string{"messages", "model", "tools", "tool_choice", "parallel_tool_calls", "max_completion_tokens", "max_tokens",
		"temperature", "top_p", "stop", "reasoning_effort", "reasoning", "stream", "stream_options", "response_format"}
	responseFormatKeys = []string{"type", "json_schema"}
	jsonSchemaKeys     = []string{"name", "description", "schema", "strict"}
	reasoningKeys      = []string{"effort", "max_tokens", "enabled", "exclude"}
	streamOptionKeys   = []string{"include_usage", "include_obfuscation"}
	systemMessageKeys  = []string{"role", "content"}
	userMessageKeys    = []string{"role", "content", "annotations"}
	assistantKeys      = []string{"role", "content", "annotations", "reasoning_content", "reasoning", "reasoning_details", "refusal", "tool_calls", "function_call"}
	toolMessageKeys    = []string{"role", "content", "tool_call_id"}
	toolCallKeys       = []string{"id", "type", "function"}
	callFunctionKeys   = []string{"name", "arguments"}
	textPartKeys       = []string{"type", "text", "cache_control"}
	refusalPartKeys    = []string{"type", "refusal", "cache_control"}
	imagePartKeys      = []string{"type", "image_url"}
	filePartKeys       = []string{"type", "file"}
	otherPartKeys      = []string{"type"} // the rest are kept in Extra
	imageURLKeys       = []string{"url", "detail"}
	fileKeys           = []string{"filename", "file_data", "file_id"}
	toolKeys           = []string{"type", "function"}
	toolFunctionKeys   = []string{"name", "description", "parameters", "strict"}
	toolChoiceKeys     = []string{"type", "function"}
	choiceFuncKeys     = []string{"name"}
)

// maxModelled is more than the most fields ctxkit models in any one
// object of a request (the request's own, 14): an object of more than
// maxModelled members past what is left of chat.MaxExtraFields has too
// many unknown ones, whatever they are.
const maxModelled = 16

// tooManyExtras is the error for the object at path whose unknown field
// is past chat.MaxExtraFields.
func tooManyExtras(path string) error {
	return reqjson.FailCode(chat.CodeTooLarge, path, "more than %d unknown fields in the request", chat.MaxExtraFields)
}

// room is the most members an object may have now: more, and its unknown
// ones must run past chat.MaxExtraFields.
func (d *requestDecoder) room() int { return chat.MaxExtraFields - d.extras + maxModelled }

// split reads the fields of the object at path: one of more than room
// is refused before they are read. The caller counts the unknown ones
// (unknown).
func (d *requestDecoder) split(data []byte, path string) (strictjson.Members, error) {
	f, err := fieldsAtMost(data, path, d.room())
	if tooMany(err) {
		return nil, tooManyExtras(path)
	}
	return f, err
}

// unknown counts the fields of f, the object at path, that are not among
// known against chat.MaxExtraFields.
func (d *requestDecoder) unknown(f strictjson.Members, path string, known ...string) error {
	for _, m := range f {
		if slices.Contains(known, m.Key) {
			continue
		}
		if d.extras == chat.MaxExtraFields {
			return tooManyExtras(path)
		}
		d.extras++
	}
	return nil
}

// object reads the fields of the object at path, those not among known
// counted against chat.MaxExtraFields.
func (d *requestDecoder) object(data []byte, path string, known ...string) (strictjson.Members, error) {
	f, err := d.split(data, path)
	if err != nil {
		return nil, err
	}
	return f, d.unknown(f, path, known...)
}

// tooManyBlocks is the error for the block at path past chat.MaxBlocks.
func tooManyBlocks(path string) error {
	return reqjson.FailCode(chat.CodeTooLarge, path, "more than %d content blocks in the request", chat.MaxBlocks)
}

// block counts one block, made from the value at path.
func (d *requestDecoder) block(path string) error {
	if d.blocks == chat.MaxBlocks {
		return tooManyBlocks(path)
	}
	d.blocks++
	return nil
}

// blockArray reads the array at path whose elements each make a block,
// and counts them: past chat.MaxBlocks it stops before reading the rest.
// A value that is not an array is refused with the message notArray.
func (d *requestDecoder) blockArray(v json.RawMessage, path, notArray string) ([]json.RawMessage, error) {
	room := chat.MaxBlocks - d.blocks
	raw, err := arrayAtMost(v, path, room)
	if tooMany(err) {
		return nil, tooManyBlocks(strictjson.Index(path, room))
	}
	if err != nil {
		return nil, reqjson.Fail(path, "%s", notArray)
	}
	d.blocks += len(raw)
	return raw, nil
}

// index is the path of element i of the array at path.
func index(path string, i int) string { return strictjson.Index(path, i) }

// tooMany reports whether err says that an object or array has more
// members than its caller allows (fieldsAtMost, arrayAtMost).
func tooMany(err error) bool { return strictjson.CodeOf(err) == strictjson.CodeTooMany }

// fieldsOf reads a JSON object's members, sorted by key. A key given
// twice is an error, as in chat.DecodeRequest. The values are the
// object's own bytes, not copies: what is kept of them is cloned.
func fieldsOf(data []byte, path string) (strictjson.Members, error) {
	return fieldsAtMost(data, path, math.MaxInt)
}

// fieldsAtMost is fieldsOf for an object of at most max members: one of
// more is a too-many error (tooMany), found before they are read.
func fieldsAtMost(data []byte, path string, max int) (strictjson.Members, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, reqjson.Fail(path, "must be a JSON object")
	}
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		return nil, &chat.Error{Code: chat.CodeInvalidJSON, Path: path, Msg: fmt.Sprintf("not valid JSON: %v", err), Err: err}
	}
	f, err := strictjson.Object(data, path, max, true)
	if err == nil {
		return f, nil
	}
	switch e := err.(*strictjson.Error); e.Code {
	case strictjson.CodeTooMany:
		return nil, err
	case strictjson.CodeDuplicateKey:
		return nil, reqjson.FailCode(chat.CodeDuplicateField, e.Path, "given twice")
	default:
		return nil, &chat.Error{Code: chat.CodeInvalidJSON, Path: path, Msg: fmt.Sprintf("not valid JSON: %v", e.Err), Err: e.Err}
	}
}

// arrayAtMost reads a JSON array's elements (its own bytes, not copies),
// or stops with a too-many error (tooMany) at the element past the first
// max, before reading the rest.
func arrayAtMost(v json.RawMessage, path string, max int) ([]json.RawMessage, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || v[0] != '[' || !json.Valid(v) {
		return nil, reqjson.Fail(path, "must be an array")
	}
	out, err := strictjson.Array(v, path, max, true)
	if err != nil && !tooMany(err) {
		return nil, reqjson.Fail(path, "must be an array")
	}
	return out, err
}

func (d *requestDecoder) request(body []byte) error {
	f, err := d.object(body, "", requestKeys...)
	if err != nil {
		return err
	}
	msgs, ok := f.Get("messages")
	if !ok || reqjson.IsNull(msgs) {
		return reqjson.Fail("messages", "required")
	}
	if err := d.messages(msgs); err != nil {
		return err
	}
	parallel := true
	for _, m := range f {
		k, v := m.Key, m.Value
		if reqjson.IsNull(v) {
			continue
		}
		switch k {
		case "messages":
		case "model":
			d.r.Model, err = reqjson.String(v, k)
		case "tools":
			err = d.tools(v)
		case "tool_choice":
			d.r.ToolChoice, err = d.toolChoice(v)
		case "parallel_tool_calls":
			parallel, err = reqjson.Bool(v, k)
		case "max_completion_tokens":
			d.r.MaxTokens, err = reqjson.Int(v, k)
		case "max_tokens":
			if reqjson.IsNull(reqjson.Get(f, "max_completion_tokens")) {
				d.r.MaxTokens, err = reqjson.Int(v, k)
			}
		case "temperature":
			d.r.Temperature, err = reqjson.Float(v, k)
		case "top_p":
			d.r.TopP, err = reqjson.Float(v, k)
		case "stop":
			d.r.StopSequences, err = stopOf(v)
		case "reasoning_effort":
			err = d.effort(v, k)
		case "reasoning":
			err = d.openRouterReasoning(v)
		case "stream":
			d.r.Stream, err = reqjson.Bool(v, k)
		case "stream_options":
			err = d.streamOptions(v)
		case "response_format":
			d.r.Format, err = d.responseFormat(v)
		default:
			if err = checkCarried(k, v); err != nil {
				break
			}
			if d.r.Extra == nil {
				d.r.Extra = map[string]json.RawMessage{}
			}
			d.r.Extra[k] = chat.CloneRaw(v)
		}
		if err != nil {
			return err
		}
	}
	if !parallel {
		if d.r.ToolChoice == nil {
			d.r.ToolChoice = &chat.ToolChoice{Type: "auto"}
		}
		yes := true
		d.r.ToolChoice.DisableParallelToolUse = &yes
	}
	d.system()
	return nil
}

// responseFormat reads response_format: {"type":"text"} (free text, no
// format), {"type":"json_object"} or {"type":"json_schema","json_schema":
// {name, description, schema, strict}}.
func (d *requestDecoder) responseFormat(v json.RawMessage) (*chat.OutputFormat, error) {
	const path = "response_format"
	f, err := d.object(v, path, responseFormatKeys...)
	if err != nil {
		return nil, err
	}
	typ, err := reqjson.String(reqjson.Get(f, "type"), path+".type")
	if err != nil {
		return nil, err
	}
	switch typ {
	case "text":
		return nil, nil
	case "json_object":
		return &chat.OutputFormat{Type: typ}, nil
	case "json_schema":
	default:
		return nil, reqjson.Fail(path+".type", "%q is not one of text, json_object, json_schema", typ)
	}
	js, ok := f.Get("json_schema")
	if !ok || reqjson.IsNull(js) {
		return nil, reqjson.FailCode(chat.CodeMissingField, path+".json_schema", "required when type is json_schema")
	}
	p := path + ".json_schema"
	sf, err := d.object(js, p, jsonSchemaKeys...)
	if err != nil {
		return nil, err
	}
	out := &chat.OutputFormat{Type: typ}
	if out.Name, err = reqjson.String(reqjson.Get(sf, "name"), p+".name"); err != nil {
		return nil, err
	}
	if !validFormatName(out.Name) {
		return nil, reqjson.Fail(p+".name", "must be 1 to 64 characters of a-z, A-Z, 0-9, _ and -")
	}
	if v, ok := sf.Get("description"); ok && !reqjson.IsNull(v) {
		if out.Description, err = reqjson.String(v, p+".description"); err != nil {
			return nil, err
		}
	}
	sv, ok := sf.Get("schema")
	if !ok || reqjson.IsNull(sv) {
		return nil, reqjson.FailCode(chat.CodeMissingField, p+".schema", "required: the JSON Schema the answer must match")
	}
	if _, err := fieldsOf(sv, p+".schema"); err != nil {
		return nil, reqjson.Fail(p+".schema", "must be a JSON Schema object")
	}
	out.Schema = chat.CloneRaw(bytes.TrimSpace(sv))
	if v, ok := sf.Get("strict"); ok && !reqjson.IsNull(v) {
		b, err := reqjson.Bool(v, p+".strict")
		if err != nil {
			return nil, err
		}
		out.Strict = &b
	}
	return out, nil
}

// validFormatName: OpenAI's rule for a json_schema name.
func validFormatName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// checkCarried checks the form of the fields kept in Extra whose values
// the gateway reads to decide what to do with them (n, logprobs, ...), so
// that a bad value is refused here, naming the field, rather than by the
// upstream or not at all.
func checkCarried(k string, v json.RawMessage) error {
	var err error
	switch k {
	case "n":
		var n int
		if n, err = reqjson.Int(v, k); err == nil && (n < 1 || n > 128) {
			err = reqjson.Fail(k, "must be between 1 and 128")
		}
	case "top_logprobs":
		var n int
		if n, err = reqjson.Int(v, k); err == nil && n > 20 {
			err = reqjson.Fail(k, "must be between 0 and 20")
		}
	case "seed":
		if _, perr := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64); perr != nil {
			err = reqjson.Fail(k, "must be an integer")
		}
	case "logprobs", "store":
		_, err = reqjson.Bool(v, k)
	case "frequency_penalty", "presence_penalty":
		var f *float64
		if f, err = reqjson.Float(v, k); err == nil && (*f < -2 || *f > 2) {
			err = reqjson.Fail(k, "must be between -2 and 2")
		}
	case "user", "safety_identifier", "prompt_cache_key", "service_tier", "verbosity", "prompt_cache_retention":
		_, err = reqjson.String(v, k)
	case "metadata", "logit_bias", "prediction", "audio", "web_search_options":
		if t := bytes.TrimSpace(v); len(t) == 0 || t[0] != '{' {
			err = reqjson.Fail(k, "must be a JSON object")
		}
	case "modalities":
		if t := bytes.TrimSpace(v); len(t) == 0 || t[0] != '[' {
			err = reqjson.Fail(k, "must be an array")
		}
	}
	return err
}

func (d *requestDecoder) effort(v json.RawMessage, path string) error {
	e, err := reqjson.String(v, path)
	if err != nil {
		return err
	}
	switch e {
	case "":
	case "none":
		d.r.Thinking = &chat.Thinking{Type: "disabled"}
	case "minimal", "low", "medium", "high":
		d.r.ReasoningEffort = e
	default:
		return reqjson.Fail(path, "%q is not one of none, minimal, low, medium, high", e)
	}
	return nil
}

// openRouterReasoning reads {"effort","max_tokens","enabled"}; its other
// fields (exclude) are the router's business.
func (d *requestDecoder) openRouterReasoning(v json.RawMessage) error {
	f, err := d.object(v, "reasoning", reasoningKeys...)
	if err != nil {
		return err
	}
	for _, m := range f {
		k, val := m.Key, m.Value
		p := "reasoning." + k
		if reqjson.IsNull(val) {
			continue
		}
		switch k {
		case "effort":
			if d.r.ReasoningEffort == "" && d.r.Thinking == nil {
				err = d.effort(val, p)
			}
		case "max_tokens":
			var n int
			if n, err = reqjson.Int(val, p); err == nil {
				d.r.Thinking = &chat.Thinking{Type: "enabled", BudgetTokens: n}
			}
		case "enabled":
			var on bool
			if on, err = reqjson.Bool(val, p); err == nil && !on {
				d.r.Thinking = &chat.Thinking{Type: "disabled"}
				d.r.ReasoningEffort = ""
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func stopOf(v json.RawMessage) ([]string, error) {
	if reqjson.IsString(v) {
		s, err := reqjson.String(v, "stop")
		if err != nil || s == "" {
			return nil, err
		}
		return []string{s}, nil
	}
	a, err := arrayAtMost(v, "stop", chat.MaxStopSequences)
	if tooMany(err) {
		return nil, reqjson.Fail("stop", "more than %d stop sequences", chat.MaxStopSequences)
	}
	if err != nil {
		return nil, reqjson.Fail("stop", "must be a string or an array of strings")
	}
	out := make([]string, 0, len(a))
	for i, e := range a {
		s, err := reqjson.String(e, index("stop", i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (d *requestDecoder) system() {
	if !d.sysCache {
		var texts []string
		for _, b := range d.sysBlocks {
			texts = append(texts, b.Text)
		}
		if len(texts) > 0 {
			s := chat.Str(strings.Join(texts, "\n"))
			d.r.System = &s
		}
		return
	}
	c := chat.Of(d.sysBlocks...)
	d.r.System = &c
}

func (d *requestDecoder) messages(v json.RawMessage) error {
	raw, err := arrayAtMost(v, "messages", chat.MaxMessages)
	if tooMany(err) {
		return reqjson.Fail("messages", "more than %d messages", chat.MaxMessages)
	}
	if err != nil {
		return err
	}
	d.r.Messages = make([]chat.Message, 0, len(raw))
	d.toolRun = -1
	for i, m := range raw {
		if err := d.message(m, chat.MessagePath(i)); err != nil {
			return err
		}
	}
	return nil
}

func (d *requestDecoder) message(data []byte, path string) error {
	f, err := d.split(data, path)
	if err != nil {
		return err
	}
	rv, ok := f.Get("role")
	if !ok {
		return reqjson.Fail(path+".role", "required")
	}
	role, err := reqjson.String(rv, path+".role")
	if err != nil {
		return err
	}
	switch role {
	case "system", "developer":
		if err := d.unknown(f, path, systemMessageKeys...); err != nil {
			return err
		}
		return d.systemMessage(f, path)
	case "user":
		if err := d.unknown(f, path, userMessageKeys...); err != nil {
			return err
		}
		return d.userMessage(f, path)
	case "assistant":
		if err := d.unknown(f, path, assistantKeys...); err != nil {
			return err
		}
		d.toolRun = -1
		return d.assistantMessage(f, path)
	case "tool":
		if err := d.unknown(f, path, toolMessageKeys...); err != nil {
			return err
		}
		return d.toolMessage(f, path)
	case "function":
		return reqjson.Fail(path+".role", "legacy function messages are not supported: use tool messages")
	}
	return reqjson.Fail(path+".role", "%q is not one of system, developer, user, assistant, tool", role)
}

// extras keeps the fields of a message that ctxkit does not model.
func extras(m *chat.Message, f strictjson.Members, known ...string) {
	for _, field := range f {
		k, v := field.Key, field.Value
		if reqjson.IsNull(v) || k == "annotations" || slices.Contains(known, k) {
			continue
		}
		if m.Extra == nil {
			m.Extra = map[string]json.RawMessage{}
		}
		m.Extra[k] = chat.CloneRaw(v)
	}
}

func (d *requestDecoder) systemMessage(f strictjson.Members, path string) error {
	v, ok := f.Get("content")
	p := path + ".content"
	if !ok || reqjson.IsNull(v) {
		return reqjson.Fail(p, "required")
	}
	if reqjson.IsString(v) {
		s, err := reqjson.String(v, p)
		if err != nil {
			return err
		}
		if s != "" {
			if err := d.block(p); err != nil {
				return err
			}
			d.sysBlocks = append(d.sysBlocks, chat.Block{Type: chat.TypeText, Text: s})
		}
		return nil
	}
	blocks, err := d.parts(v, p)
	if err != nil {
		return err
	}
	for j, b := range blocks {
		if b.Type != chat.TypeText {
			return reqjson.Fail(index(p, j), "a system message takes text parts, not %q", b.Type)
		}
		if len(b.CacheControl) > 0 {
			d.sysCache = true
		}
		if b.Text != "" || len(b.CacheControl) > 0 {
			d.sysBlocks = append(d.sysBlocks, b)
		}
	}
	return nil
}

// content reads string or part content; null is allowed when nullable.
func (d *requestDecoder) content(f strictjson.Members, path string, nullable bool) (chat.Content, error) {
	v, ok := f.Get("content")
	p := path + ".content"
	if !ok || reqjson.IsNull(v) {
		if nullable {
			return chat.Str(""), nil
		}
		return chat.Content{}, reqjson.Fail(p, "required")
	}
	if reqjson.IsString(v) {
		s, err := reqjson.String(v, p)
		return chat.Str(s), err
	}
	blocks, err := d.parts(v, p)
	if err != nil {
		return chat.Content{}, err
	}
	return chat.Of(blocks...), nil
}

func (d *requestDecoder) userMessage(f strictjson.Members, path string) error {
	c, err := d.content(f, path, false)
	if err != nil {
		return err
	}
	if d.toolRun >= 0 {
		if c.IsString && c.Text != "" {
			// The string joins the tool results as a text block.
			if err := d.block(path + ".content"); err != nil {
				return err
			}
		}
		m := &d.r.Messages[d.toolRun]
		m.Content.Blocks = append(m.Content.Blocks, c.AsBlocks()...)
		extras(m, f, "role", "content")
		d.toolRun = -1
		return nil
	}
	m := chat.Message{Role: chat.User, Content: c}
	extras(&m, f, "role", "content")
	d.r.Messages = append(d.r.Messages, m)
	return nil
}

func (d *requestDecoder) toolMessage(f strictjson.Members, path string) error {
	v, ok := f.Get("tool_call_id")
	if !ok || reqjson.IsNull(v) {
		return reqjson.Fail(path+".tool_call_id", "required")
	}
	id, err := reqjson.String(v, path+".tool_call_id")
	if err != nil {
		return err
	}
	if id == "" {
		return reqjson.Fail(path+".tool_call_id", "empty")
	}
	if err := d.block(path); err != nil { // its tool_result block
		return err
	}
	c, err := d.content(f, path, true)
	if err != nil {
		return err
	}
	b := chat.Block{Type: chat.TypeToolResult, ToolUseID: id, Content: &c}
	if d.toolRun >= 0 {
		m := &d.r.Messages[d.toolRun]
		m.Content.Blocks = append(m.Content.Blocks, b)
		return nil
	}
	d.toolRun = len(d.r.Messages)
	d.r.Messages = append(d.r.Messages, chat.Message{Role: chat.User, Content: chat.Of(b)})
	return nil
}

func (d *requestDecoder) assistantMessage(f strictjson.Members, path string) error {
	if v, ok := f.Get("function_call"); ok && !reqjson.IsNull(v) {
		return reqjson.Fail(path+".function_call", "legacy function calls are not supported: use tool_calls")
	}
	var blocks []chat.Block
	reasoning, reasoningPath := "", ""
	for _, k := range []string{"reasoning_content", "reasoning"} {
		if v, ok := f.Get(k); ok && !reqjson.IsNull(v) && reasoning == "" {
			s, err := reqjson.String(v, path+"."+k)
			if err != nil {
				return err
			}
			reasoning, reasoningPath = s, path+"."+k
		}
	}
	if reasoning != "" {
		if err := d.block(reasoningPath); err != nil {
			return err
		}
		blocks = append(blocks, chat.Block{Type: chat.TypeReasoning, Text: reasoning})
	}
	c, err := d.content(f, path, true)
	if err != nil {
		return err
	}
	textPath := path + ".content" // where string content came from
	if v, ok := f.Get("refusal"); ok && !reqjson.IsNull(v) {
		s, err := reqjson.String(v, path+".refusal")
		if err != nil {
			return err
		}
		if s != "" && len(c.AsBlocks()) == 0 {
			c, textPath = chat.Str(s), path+".refusal"
		}
	}
	var calls []chat.Block
	if v, ok := f.Get("tool_calls"); ok && !reqjson.IsNull(v) {
		if calls, err = d.toolCalls(v, path+".tool_calls"); err != nil {
			return err
		}
	}
	m := chat.Message{Role: chat.Assistant}
	if len(blocks) == 0 && len(calls) == 0 && c.IsString {
		m.Content = c
	} else {
		if c.IsString && c.Text != "" {
			// The string becomes a text block beside the others.
			if err := d.block(textPath); err != nil {
				return err
			}
		}
		blocks = append(blocks, c.AsBlocks()...)
		m.Content = chat.Of(append(blocks, calls...)...)
	}
	if v, ok := f.Get("reasoning_details"); ok && !reqjson.IsNull(v) {
		// Checked, not split: the array is kept as it came.
		if t := bytes.TrimSpace(v); t[0] != '[' {
			return reqjson.Fail(path+".reasoning_details", "must be an array")
		}
		m.ReasoningDetails = chat.CloneRaw(v)
	}
	extras(&m, f, "role", "content", "reasoning_content", "reasoning", "reasoning_details", "refusal", "tool_calls", "function_call")
	d.r.Messages = append(d.r.Messages, m)
	return nil
}

func (d *requestDecoder) toolCalls(v json.RawMessage, path string) ([]chat.Block, error) {
	raw, err := d.blockArray(v, path, "must be an array")
	if err != nil {
		return nil, err
	}
	out := make([]chat.Block, 0, len(raw))
	for i, tc := range raw {
		p := index(path, i)
		f, err := d.object(tc, p, toolCallKeys...)
		if err != nil {
			return nil, err
		}
		if t, ok := f.Get("type"); ok && !reqjson.IsNull(t) {
			s, err := reqjson.String(t, p+".type")
			if err != nil {
				return nil, err
			}
			if s != "function" {
				return nil, reqjson.Fail(p+".type", "%q is not function", s)
			}
		}
		b := chat.Block{Type: chat.TypeToolUse}
		if v, ok := f.Get("id"); ok && !reqjson.IsNull(v) {
			if b.ID, err = reqjson.String(v, p+".id"); err != nil {
				return nil, err
			}
		}
		if b.ID == "" {
			return nil, reqjson.Fail(p+".id", "required")
		}
		fn, ok := f.Get("function")
		if !ok || reqjson.IsNull(fn) {
			return nil, reqjson.Fail(p+".function", "required")
		}
		ff, err := d.object(fn, p+".function", callFunctionKeys...)
		if err != nil {
			return nil, err
		}
		if v, ok := ff.Get("name"); ok && !reqjson.IsNull(v) {
			if b.Name, err = reqjson.String(v, p+".function.name"); err != nil {
				return nil, err
			}
		}
		if b.Name == "" {
			return nil, reqjson.Fail(p+".function.name", "required")
		}
		if b.Input, err = argumentsInput(reqjson.Get(ff, "arguments"), p+".function.arguments"); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// argumentsInput is a tool call's arguments as a tool_use input: a JSON
// object as it is (compacted), "" or absent as {}, anything else (invalid
// JSON, another kind of value, an object with a key given twice) wrapped
// as {"_raw": text}.
func argumentsInput(v json.RawMessage, path string) (json.RawMessage, error) {
	if reqjson.IsNull(v) {
		return json.RawMessage("{}"), nil
	}
	text := ""
	if reqjson.IsString(v) {
		s, err := reqjson.String(v, path)
		if err != nil {
			return nil, err
		}
		text = s
	} else {
		text = string(v) // some clients send the object itself
	}
	t := strings.TrimSpace(text)
	if t == "" {
		return json.RawMessage("{}"), nil
	}
	if _, err := fieldsOf([]byte(t), path); err == nil {
		var buf bytes.Buffer
		if json.Compact(&buf, []byte(t)) == nil {
			return json.RawMessage(buf.Bytes()), nil
		}
	}
	return chat.RawArguments(text), nil
}

// parts reads an array of content parts as blocks.
func (d *requestDecoder) parts(v json.RawMessage, path string) ([]chat.Block, error) {
	raw, err := d.blockArray(v, path, "must be a string or an array of content parts")
	if err != nil {
		return nil, err
	}
	out := make([]chat.Block, 0, len(raw))
	for j, pv := range raw {
		b, err := d.part(pv, index(path, j))
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func (d *requestDecoder) part(data []byte, path string) (chat.Block, error) {
	f, err := d.split(data, path)
	if err != nil {
		return chat.Block{}, err
	}
	tv, ok := f.Get("type")
	if !ok {
		return chat.Block{}, reqjson.Fail(path+".type", "required")
	}
	typ, err := reqjson.String(tv, path+".type")
	if err != nil {
		return chat.Block{}, err
	}
	known := otherPartKeys
	switch typ {
	case "text":
		known = textPartKeys
	case "refusal":
		known = refusalPartKeys
	case "image_url":
		known = imagePartKeys
	case "file":
		known = filePartKeys
	}
	if err := d.unknown(f, path, known...); err != nil {
		return chat.Block{}, err
	}
	switch typ {
	case "text", "refusal":
		s, err := reqjson.String(reqjson.Get(f, typ), path+"."+typ)
		if err != nil {
			return chat.Block{}, err
		}
		b := chat.Block{Type: chat.TypeText, Text: s}
		if cc, ok := f.Get("cache_control"); ok && !reqjson.IsNull(cc) {
			b.CacheControl = chat.CloneRaw(cc)
		}
		return b, nil
	case "image_url":
		return d.imagePart(reqjson.Get(f, "image_url"), path+".image_url")
	case "file":
		return d.filePart(reqjson.Get(f, "file"), path+".file")
	case "":
		return chat.Block{}, reqjson.Fail(path+".type", "empty")
	}
	b := chat.Block{Type: typ}
	if b.Known() {
		return b, reqjson.Fail(path+".type", "%q is not a content part type of the OpenAI format", typ)
	}
	for _, m := range f {
		k := m.Key
		if k == "type" {
			continue
		}
		if b.Extra == nil {
			b.Extra = map[string]json.RawMessage{}
		}
		b.Extra[k] = chat.CloneRaw(m.Value)
	}
	return b, nil
}

func (d *requestDecoder) imagePart(v json.RawMessage, path string) (chat.Block, error) {
	b, detail, err := d.image(v, path)
	if err == nil && detail != "" && detail != "auto" {
		// The image's resolution (and cost): kept in the source's Extra
		// for an OpenAI upstream to carry and the others to name in a
		// warning; auto is the default and says nothing.
		b.Source.Extra = map[string]json.RawMessage{"detail": chat.AppendString(nil, detail)}
	}
	return b, err
}

func (d *requestDecoder) image(v json.RawMessage, path string) (b chat.Block, detail string, err error) {
	if reqjson.IsNull(v) {
		return chat.Block{}, "", reqjson.Fail(path, "required")
	}
	url := ""
	if reqjson.IsString(v) {
		url, err = reqjson.String(v, path)
	} else {
		var f strictjson.Members
		if f, err = d.object(v, path, imageURLKeys...); err == nil {
			if dv, ok := f.Get("detail"); ok && !reqjson.IsNull(dv) {
				if detail, err = reqjson.String(dv, path+".detail"); err == nil && detail != "low" && detail != "high" && detail != "auto" {
					err = reqjson.Fail(path+".detail", "%q is not one of low, high, auto", detail)
				}
			}
			if u, ok := f.Get("url"); ok && err == nil {
				url, err = reqjson.String(u, path+".url")
			}
			path += ".url"
		}
	}
	if err != nil {
		return chat.Block{}, "", err
	}
	if url == "" {
		return chat.Block{}, "", reqjson.Fail(path, "required")
	}
	if !reqjson.IsDataURL(url) {
		return chat.Block{Type: chat.TypeImage, Source: &chat.Source{Type: "url", URL: url}}, detail, nil
	}
	mt, data, err := reqjson.ParseDataURL(url, path)
	if err != nil {
		return chat.Block{}, "", err
	}
	return chat.Block{Type: chat.TypeImage, Source: &chat.Source{Type: "base64", MediaType: mt, Data: data}}, detail, nil
}

func (d *requestDecoder) filePart(v json.RawMessage, path string) (chat.Block, error) {
	if reqjson.IsNull(v) {
		return chat.Block{}, reqjson.Fail(path, "required")
	}
	f, err := d.object(v, path, fileKeys...)
	if err != nil {
		return chat.Block{}, err
	}
	b := chat.Block{Type: chat.TypeDocument}
	if n, ok := f.Get("filename"); ok && !reqjson.IsNull(n) {
		if b.Title, err = reqjson.String(n, path+".filename"); err != nil {
			return b, err
		}
	}
	if fd, ok := f.Get("file_data"); ok && !reqjson.IsNull(fd) {
		s, err := reqjson.String(fd, path+".file_data")
		if err != nil {
			return b, err
		}
		if !reqjson.IsDataURL(s) {
			return b, reqjson.Fail(path+".file_data", "must be a data URL (data:<media type>;base64,...)")
		}
		mt, data, err := reqjson.ParseDataURL(s, path+".file_data")
		if err != nil {
			return b, err
		}
		b.Source = &chat.Source{Type: "base64", MediaType: mt, Data: data}
		return b, nil
	}
	if id, ok := f.Get("file_id"); ok && !reqjson.IsNull(id) {
		s, err := reqjson.String(id, path+".file_id")
		if err != nil {
			return b, err
		}
		idJSON, _ := json.Marshal(s)
		b.Source = &chat.Source{Type: "file", Extra: map[string]json.RawMessage{"file_id": idJSON}}
		return b, nil
	}
	return b, reqjson.Fail(path, "needs file_data or file_id")
}

func (d *requestDecoder) tools(v json.RawMessage) error {
	raw, err := arrayAtMost(v, "tools", chat.MaxTools)
	if tooMany(err) {
		return reqjson.Fail("tools", "more than %d tools", chat.MaxTools)
	}
	if err != nil {
		return err
	}
	d.r.Tools = make([]chat.Tool, 0, len(raw))
	for i, t := range raw {
		p := index("tools", i)
		f, err := d.object(t, p, toolKeys...)
		if err != nil {
			return err
		}
		typ := "function"
		if tv, ok := f.Get("type"); ok && !reqjson.IsNull(tv) {
			if typ, err = reqjson.String(tv, p+".type"); err != nil {
				return err
			}
		}
		if typ != "function" {
			return reqjson.Fail(p+".type", "%q tools are not supported: only function tools", typ)
		}
		fv, ok := f.Get("function")
		if !ok || reqjson.IsNull(fv) {
			return reqjson.Fail(p+".function", "required")
		}
		ff, err := d.object(fv, p+".function", toolFunctionKeys...)
		if err != nil {
			return err
		}
		tool := chat.Tool{}
		if n, ok := ff.Get("name"); ok && !reqjson.IsNull(n) {
			if tool.Name, err = reqjson.String(n, p+".function.name"); err != nil {
				return err
			}
		}
		if tool.Name == "" {
			return reqjson.Fail(p+".function.name", "required")
		}
		if desc, ok := ff.Get("description"); ok && !reqjson.IsNull(desc) {
			if tool.Description, err = reqjson.String(desc, p+".function.description"); err != nil {
				return err
			}
		}
		tool.InputSchema = json.RawMessage(`{"type":"object","properties":{}}`)
		if ps, ok := ff.Get("parameters"); ok && !reqjson.IsNull(ps) {
			if _, err := fieldsOf(ps, p+".function.parameters"); err != nil {
				return reqjson.Fail(p+".function.parameters", "must be a JSON Schema object")
			}
			tool.InputSchema = chat.CloneRaw(ps)
		}
		// strict true asks for schema adherence: kept in the tool's Extra,
		// for an OpenAI upstream to carry and the others to name in a
		// warning; false is the default and says nothing.
		if sv, ok := ff.Get("strict"); ok && !reqjson.IsNull(sv) {
			b, err := reqjson.Bool(sv, p+".function.strict")
			if err != nil {
				return err
			}
			if b {
				tool.Extra = map[string]json.RawMessage{"strict": json.RawMessage("true")}
			}
		}
		d.r.Tools = append(d.r.Tools, tool)
	}
	return nil
}

func (d *requestDecoder) toolChoice(v json.RawMessage) (*chat.ToolChoice, error) {
	if reqjson.IsString(v) {
		s, err := reqjson.String(v, "tool_choice")
		if err != nil {
			return nil, err
		}
		switch s {
		case "auto", "none":
			return &chat.ToolChoice{Type: s}, nil
		case "required", "any":
			return &chat.ToolChoice{Type: "any"}, nil
		}
		return nil, reqjson.Fail("tool_choice", "%q is not one of auto, none, required", s)
	}
	f, err := fieldsAtMost(v, "tool_choice", d.room())
	if tooMany(err) {
		return nil, tooManyExtras("tool_choice")
	}
	if err != nil {
		return nil, reqjson.Fail("tool_choice", "must be a string or a {\"type\":\"function\"} object")
	}
	if err := d.unknown(f, "tool_choice", toolChoiceKeys...); err != nil {
		return nil, err
	}
	if t, err := reqjson.String(reqjson.Get(f, "type"), "tool_choice.type"); err != nil || t != "function" {
		return nil, reqjson.Fail("tool_choice.type", "must be function")
	}
	ff, err := d.object(reqjson.Get(f, "function"), "tool_choice.function", choiceFuncKeys...)
	if err != nil {
		return nil, err
	}
	name, err := reqjson.String(reqjson.Get(ff, "name"), "tool_choice.function.name")
	if err != nil || name == "" {
		return nil, reqjson.Fail("tool_choice.function.name", "required")
	}
	return &chat.ToolChoice{Type: "tool", Name: name}, nil
}
