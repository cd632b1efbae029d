package responses

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/strictjson"
	"github.com/ctxkit/ctxkit/wire/internal/reqjson"
)

// MaxDepth bounds how deeply a request's JSON nests (a tool's parameters
// schema, metadata): a request nested deeper is refused before it is read.
const MaxDepth = 64

// MaxMetadata bounds the pairs of a request's metadata, as the API does.
const MaxMetadata = 16

// maxModelled is more than the most fields ctxkit reads in any one object
// of a request (the request's own, about 30 with those it refuses): an
// object of more than maxModelled members past what is left of
// chat.MaxExtraFields has too many unknown ones, whatever they are.
const maxModelled = 40

// The fields each object of a request may have that ctxkit reads; the
// others count against chat.MaxExtraFields (and are kept or dropped as
// DecodeRequest says).
var (
	messageKeys   = []string{"type", "role", "content", "id", "status", "phase"}
	callKeys      = []string{"type", "call_id", "name", "arguments", "id", "status"}
	outputKeys    = []string{"type", "call_id", "output", "id", "status"}
	reasoningKeys = []string{"type", "id", "summary", "encrypted_content", "content", "status"}
	summaryKeys   = []string{"type", "text"}
	textPartKeys  = []string{"type", "text", "annotations", "logprobs"}
	refusalKeys   = []string{"type", "refusal"}
	imageKeys     = []string{"type", "image_url", "file_id", "detail"}
	fileKeys      = []string{"type", "file_data", "file_id", "file_url", "filename", "detail"}
	toolKeys      = []string{"type", "name", "description", "parameters", "strict"}
	choiceKeys    = []string{"type", "name", "mode", "tools"}
	allowedKeys   = []string{"type", "name"}
	textKeys      = []string{"format", "verbosity"}
	formatKeys    = []string{"type", "name", "schema", "description", "strict"}
	effortKeys    = []string{"effort", "summary", "generate_summary"}
	streamOptKeys = []string{"include_obfuscation"}
)

// The values of include the API knows; message.output_text.logprobs is
// refused (ctxkit's chunks carry no log probabilities).
var includable = []string{"file_search_call.results", "web_search_call.results", "web_search_call.action.sources",
	"message.input_image.image_url", "computer_call_output.output.image_url", "code_interpreter_call.outputs",
	"reasoning.encrypted_content", "message.output_text.logprobs"}

// DecodeRequest reads a Responses API request body (POST /v1/responses)
// as a canonical request: the direction of a gateway that takes Responses
// clients. Errors are *chat.Error values naming the place in the body
// (input[2].content[0].image_url).
//
// # Input
//
// input is a string (one user message) or an array of items, read in
// order:
//
//   - messages ({"role","content"}, with or without "type":"message"):
//     system and developer messages join instructions in the system
//     prompt (their text, after instructions, joined with "\n"; the
//     system prompt is a string); user messages keep string content as a
//     string, and parts become blocks: input_text → text, input_image →
//     an image (a data URL → base64, another URL → url, a file_id → a
//     source {"type":"file","file_id"}; detail, a resolution hint, has no
//     canonical place and is dropped), input_file → a document (file_data,
//     a data URL or bare base64 read as a PDF, → base64; file_url → url;
//     file_id → file; titled by filename); assistant messages' output_text,
//     input_text and refusal parts (or string content) → text blocks
//     (annotations and logprobs are dropped: they are the model's own
//     output, not input).
//   - The items of one model turn — reasoning, assistant messages and
//     function_call items that follow each other — make one assistant
//     message, their blocks in order: function_call → tool_use (id from
//     call_id; the item's own id is not kept: the API takes calls back
//     without it), arguments parsed as a JSON object ("" → {}; anything
//     else kept as {"_raw": text}, as chat does).
//   - reasoning items: with encrypted_content → a thinking block whose
//     signature is the encrypted content and whose thinking is the
//     summary texts joined with "\n\n" (what the Responses upstream
//     sends back, and what a thinking block of another provider's answer
//     was written as — see EncodeResponse), or a redacted_thinking block
//     when the encrypted content is the redacted marker EncodeResponse
//     writes; without it (a reasoning item of a stored response, which
//     ctxkit cannot look up) → a reasoning block of the summary or
//     reasoning text, which converters carry as plain reasoning or drop
//     with a warning.
//   - function_call_output items → tool_result blocks (tool_use_id from
//     call_id; output a string, or input_text / input_image / input_file
//     parts as blocks) in one user message for each run of them; a user
//     message right after the run joins it, after the results.
//   - item_reference items, and items of the built-in tools (web search,
//     file search, computer use, MCP, custom tools...), are refused: ctxkit
//     keeps no items of OpenAI's and calls no built-in tools.
//
// # Fields
//
// instructions → the system prompt. tools: function tools {"type":
// "function","name","description","parameters","strict"} → tools
// (parameters absent or null: an empty object schema); strict true is
// kept in the tool's Extra (the Responses upstream sends it back; for the
// others it is the tool's own field), strict false or null is the
// canonical default and dropped; other tool types are refused.
// tool_choice "auto", "none", "required" → auto, none, any;
// {"type":"function","name"} → tool; {"type":"allowed_tools","mode",
// "tools"} keeps only the named function tools, mode auto or required →
// auto or any; a built-in tool choice is refused. parallel_tool_calls
// false → disable_parallel_tool_use. text.format: json_schema (name and
// schema required) and json_object → Request.Format, text → none.
// reasoning.effort: none → thinking disabled, minimal/low/medium/high →
// ReasoningEffort, xhigh and max → ReasoningEffort high with the value
// kept (below). max_output_tokens → MaxTokens; temperature; top_p;
// stream. stream_options (obfuscation padding, which ctxkit's streams do
// not add) is read and dropped, like truncation "disabled", background
// false and top_logprobs 0 (the defaults).
//
// Kept in Extra under their own names, for the gateway and the Responses
// upstream encoder: store and previous_response_id (the gateway serves
// them); metadata (at most MaxMetadata pairs); user, safety_identifier,
// prompt_cache_key, prompt_cache_retention, service_tier, max_tool_calls,
// include (known values), truncation "auto", prompt; "text" with the
// fields of text other than format (verbosity); "reasoning" with what the
// canonical request cannot hold: summary (generate_summary, its older
// name, when summary is absent) and an effort of none, xhigh or max.
// Fields ctxkit does not know are kept there too. See Advisory for which
// of them an upstream may drop.
//
// Refused, naming the field: background true (ctxkit answers in the
// request), conversation (use previous_response_id), top_logprobs above 0
// and include message.output_text.logprobs (ctxkit's chunks carry no log
// probabilities).
//
// # Limits
//
// A body nested deeper than MaxDepth is refused; so is one of more than
// chat.MaxMessages input items, chat.MaxTools tools, chat.MaxBlocks
// blocks (every part, call, call output and reasoning item counts, and
// string content that becomes a block), or chat.MaxExtraFields fields
// that ctxkit does not read (counted across the whole request, except
// within the values passed on as they are: parameters, schema, arguments,
// metadata). An array or object is counted before its elements are read.
func DecodeRequest(body []byte) (chat.Request, error) {
	if !json.Valid(body) {
		var v any
		err := json.Unmarshal(body, &v)
		return chat.Request{}, &chat.Error{Code: chat.CodeInvalidJSON, Msg: "not valid JSON: " + err.Error(), Err: err}
	}
	if strictjson.Nesting(body) > MaxDepth {
		return chat.Request{}, reqjson.FailCode(chat.CodeTooLarge, "", "nested deeper than %d", MaxDepth)
	}
	d := requestDecoder{turn: -1, toolRun: -1}
	if err := d.request(body); err != nil {
		return chat.Request{}, err
	}
	return d.r, nil
}

type requestDecoder struct {
	r   chat.Request
	sys []string
	// turn is the position in r.Messages of the assistant message the
	// current run of model output items goes to, -1 when the last item
	// was not one.
	turn int
	// toolRun is the position of the user message that holds the current
	// run of function_call_output items, -1 when the last item was not one.
	toolRun int
	blocks  int // blocks made, against chat.MaxBlocks
	extras  int // unknown fields read, against chat.MaxExtraFields
}

func tooManyExtras(path string) error {
	return reqjson.FailCode(chat.CodeTooLarge, path, "more than %d unknown fields in the request", chat.MaxExtraFields)
}

func tooManyBlocks(path string) error {
	return reqjson.FailCode(chat.CodeTooLarge, path, "more than %d content blocks in the request", chat.MaxBlocks)
}

// object reads the object at path, its fields not among known counted
// against chat.MaxExtraFields; an object of so many members that they
// must run past the bound is refused before they are read.
func (d *requestDecoder) object(data []byte, path string, known ...string) (strictjson.Members, error) {
	f, err := objectAtMost(data, path, chat.MaxExtraFields-d.extras+maxModelled)
	if tooMany(err) {
		return nil, tooManyExtras(path)
	}
	if err != nil {
		return nil, err
	}
	return f, d.unknown(f, path, known...)
}

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

// block counts one block made from the value at path.
func (d *requestDecoder) block(path string) error {
	if d.blocks == chat.MaxBlocks {
		return tooManyBlocks(path)
	}
	d.blocks++
	return nil
}

// blockArray reads the array at path whose elements each make a block,
// and counts them; past chat.MaxBlocks it stops before reading the rest.
func (d *requestDecoder) blockArray(v json.RawMessage, path string) ([]json.RawMessage, error) {
	room := chat.MaxBlocks - d.blocks
	raw, err := arrayAtMost(v, path, room)
	if tooMany(err) {
		return nil, tooManyBlocks(index(path, room))
	}
	if err != nil {
		return nil, err
	}
	d.blocks += len(raw)
	return raw, nil
}

func (d *requestDecoder) extra(k string, v json.RawMessage) {
	if d.r.Extra == nil {
		d.r.Extra = map[string]json.RawMessage{}
	}
	d.r.Extra[k] = chat.CloneRaw(v)
}

// requestKeys are the top-level fields DecodeRequest reads (all of the
// API's; the others count as unknown).
var requestKeys = []string{"model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "text",
	"reasoning", "max_output_tokens", "temperature", "top_p", "stream", "stream_options", "metadata", "store",
	"previous_response_id", "include", "user", "safety_identifier", "prompt_cache_key", "prompt_cache_retention",
	"service_tier", "truncation", "background", "conversation", "prompt", "top_logprobs", "max_tool_calls"}

func (d *requestDecoder) request(body []byte) error {
	f, err := d.object(body, "", requestKeys...)
	if err != nil {
		return err
	}
	if v, ok := f.Get("instructions"); ok && !reqjson.IsNull(v) {
		s, err := reqjson.String(v, "instructions")
		if err != nil {
			return err
		}
		if s != "" {
			d.sys = append(d.sys, s)
		}
	}
	v, ok := f.Get("input")
	if !ok || reqjson.IsNull(v) {
		return reqjson.Fail("input", "required")
	}
	if err := d.input(v); err != nil {
		return err
	}
	parallel := true
	var choice json.RawMessage
	for _, m := range f {
		k, v := m.Key, m.Value
		if reqjson.IsNull(v) {
			continue
		}
		switch k {
		case "input", "instructions":
		case "model":
			d.r.Model, err = reqjson.String(v, k)
		case "tools":
			err = d.tools(v)
		case "tool_choice":
			choice = v
		case "parallel_tool_calls":
			parallel, err = reqjson.Bool(v, k)
		case "text":
			err = d.text(v)
		case "reasoning":
			err = d.reasoning(v)
		case "max_output_tokens":
			d.r.MaxTokens, err = reqjson.Int(v, k)
		case "temperature":
			d.r.Temperature, err = reqjson.Float(v, k)
		case "top_p":
			d.r.TopP, err = reqjson.Float(v, k)
		case "stream":
			d.r.Stream, err = reqjson.Bool(v, k)
		case "stream_options":
			if !d.r.Stream {
				// As the API: stream options only with a stream (read
				// before them: the members are in key order).
				err = reqjson.Fail(k, "only allowed when stream is true")
				break
			}
			var so strictjson.Members
			if so, err = d.object(v, k, streamOptKeys...); err == nil {
				if iv, ok := so.Get("include_obfuscation"); ok && !reqjson.IsNull(iv) {
					_, err = reqjson.Bool(iv, k+".include_obfuscation")
				}
			}
		case "metadata":
			err = d.metadata(v)
		case "store":
			if _, err = reqjson.Bool(v, k); err == nil {
				d.extra(k, v)
			}
		case "previous_response_id", "user", "safety_identifier", "prompt_cache_key":
			var s string
			if s, err = reqjson.String(v, k); err == nil && s != "" {
				d.extra(k, v)
			}
		case "prompt_cache_retention":
			var s string
			if s, err = reqjson.String(v, k); err == nil {
				if err = oneOf(s, k, "in_memory", "24h"); err == nil {
					d.extra(k, v)
				}
			}
		case "service_tier":
			var s string
			if s, err = reqjson.String(v, k); err == nil {
				if err = oneOf(s, k, "auto", "default", "flex", "scale", "priority"); err == nil {
					d.extra(k, v)
				}
			}
		case "truncation":
			var s string
			if s, err = reqjson.String(v, k); err == nil {
				if err = oneOf(s, k, "auto", "disabled"); err == nil && s == "auto" {
					d.extra(k, v)
				}
			}
		case "include":
			err = d.include(v)
		case "background":
			var on bool
			if on, err = reqjson.Bool(v, k); err == nil && on {
				err = reqjson.Fail(k, "background responses are not supported by ctxkit: send the request without it (or stream it)")
			}
		case "conversation":
			err = reqjson.Fail(k, "conversations are not supported by ctxkit: continue with previous_response_id")
		case "top_logprobs":
			var n int
			if n, err = reqjson.Int(v, k); err == nil && n > 0 {
				err = reqjson.Fail(k, "log probabilities are not supported by ctxkit: send 0 or leave it out")
			}
		case "max_tool_calls":
			if _, err = reqjson.Int(v, k); err == nil {
				d.extra(k, v)
			}
		case "prompt":
			if _, err = d.object(v, k); err == nil {
				d.extra(k, v)
			}
		default:
			d.extra(k, v)
		}
		if err != nil {
			return err
		}
	}
	if choice != nil {
		if err := d.toolChoice(choice); err != nil {
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
	if len(d.sys) > 0 {
		s := chat.Str(strings.Join(d.sys, "\n"))
		d.r.System = &s
	}
	return nil
}

func (d *requestDecoder) metadata(v json.RawMessage) error {
	f, err := objectAtMost(v, "metadata", MaxMetadata)
	if tooMany(err) {
		return reqjson.Fail("metadata", "more than %d pairs", MaxMetadata)
	}
	if err != nil {
		return err
	}
	for _, m := range f {
		p := join("metadata", m.Key)
		if len(m.Key) > 64 {
			return reqjson.Fail(p, "a key of more than 64 characters")
		}
		s, err := reqjson.String(m.Value, p)
		if err != nil {
			return err
		}
		if len(s) > 512 {
			return reqjson.Fail(p, "a value of more than 512 characters")
		}
	}
	d.extra("metadata", v)
	return nil
}

func (d *requestDecoder) include(v json.RawMessage) error {
	raw, err := arrayAtMost(v, "include", len(includable))
	if tooMany(err) {
		return reqjson.Fail("include", "more than %d values", len(includable))
	}
	if err != nil {
		return err
	}
	for i, e := range raw {
		p := index("include", i)
		s, err := reqjson.String(e, p)
		if err != nil {
			return err
		}
		if err := oneOf(s, p, includable...); err != nil {
			return err
		}
		if s == "message.output_text.logprobs" {
			return reqjson.Fail(p, "log probabilities are not supported by ctxkit")
		}
	}
	if len(raw) > 0 {
		d.extra("include", v)
	}
	return nil
}

func (d *requestDecoder) text(v json.RawMessage) error {
	f, err := d.object(v, "text", textKeys...)
	if err != nil {
		return err
	}
	keep := map[string]json.RawMessage{}
	for _, m := range f {
		if reqjson.IsNull(m.Value) {
			continue
		}
		p := join("text", m.Key)
		switch m.Key {
		case "format":
			if err := d.format(m.Value, p); err != nil {
				return err
			}
		case "verbosity":
			s, err := reqjson.String(m.Value, p)
			if err != nil {
				return err
			}
			if err := oneOf(s, p, "low", "medium", "high"); err != nil {
				return err
			}
			keep[m.Key] = chat.CloneRaw(m.Value)
		default:
			keep[m.Key] = chat.CloneRaw(m.Value)
		}
	}
	if len(keep) > 0 {
		raw, _ := json.Marshal(keep)
		d.extra("text", raw)
	}
	return nil
}

func (d *requestDecoder) format(v json.RawMessage, path string) error {
	f, err := d.object(v, path, formatKeys...)
	if err != nil {
		return err
	}
	typ, err := reqjson.String(reqjson.Get(f, "type"), join(path, "type"))
	if err != nil {
		return err
	}
	switch typ {
	case "text":
		return nil
	case "json_object":
		d.r.Format = &chat.OutputFormat{Type: typ}
		return nil
	case "json_schema":
	default:
		return reqjson.Fail(join(path, "type"), "%q is not one of text, json_object, json_schema", typ)
	}
	out := &chat.OutputFormat{Type: typ}
	if out.Name, err = optString(f, "name", path); err != nil {
		return err
	}
	if out.Name == "" {
		return reqjson.Fail(join(path, "name"), "required")
	}
	if out.Description, err = optString(f, "description", path); err != nil {
		return err
	}
	s, ok := f.Get("schema")
	if !ok || reqjson.IsNull(s) {
		return reqjson.Fail(join(path, "schema"), "required")
	}
	if _, err := objectAtMost(s, join(path, "schema"), chat.MaxExtraFields); err != nil {
		return reqjson.Fail(join(path, "schema"), "must be a JSON Schema object")
	}
	out.Schema = chat.CloneRaw(s)
	if sv, ok := f.Get("strict"); ok && !reqjson.IsNull(sv) {
		b, err := reqjson.Bool(sv, join(path, "strict"))
		if err != nil {
			return err
		}
		out.Strict = &b
	}
	d.r.Format = out
	return nil
}

func (d *requestDecoder) reasoning(v json.RawMessage) error {
	f, err := d.object(v, "reasoning", effortKeys...)
	if err != nil {
		return err
	}
	keep := map[string]json.RawMessage{}
	for _, m := range f {
		if reqjson.IsNull(m.Value) {
			continue
		}
		p := join("reasoning", m.Key)
		switch m.Key {
		case "effort":
			s, err := reqjson.String(m.Value, p)
			if err != nil {
				return err
			}
			if err := oneOf(s, p, "none", "minimal", "low", "medium", "high", "xhigh", "max"); err != nil {
				return err
			}
			switch s {
			case "none":
				d.r.Thinking = &chat.Thinking{Type: "disabled"}
				keep["effort"] = chat.CloneRaw(m.Value)
			case "xhigh", "max":
				d.r.ReasoningEffort = "high"
				keep["effort"] = chat.CloneRaw(m.Value)
			default:
				d.r.ReasoningEffort = s
			}
		case "summary", "generate_summary":
			s, err := reqjson.String(m.Value, p)
			if err != nil {
				return err
			}
			if err := oneOf(s, p, "auto", "concise", "detailed"); err != nil {
				return err
			}
			if m.Key == "summary" || reqjson.IsNull(reqjson.Get(f, "summary")) {
				keep["summary"] = chat.CloneRaw(m.Value)
			}
		default:
			keep[m.Key] = chat.CloneRaw(m.Value)
		}
	}
	if len(keep) > 0 {
		raw, _ := json.Marshal(keep)
		d.extra("reasoning", raw)
	}
	return nil
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
		typ, err := reqjson.String(reqjson.Get(f, "type"), join(p, "type"))
		if err != nil {
			return err
		}
		if typ != "function" {
			return reqjson.Fail(join(p, "type"), "%q tools are not supported by ctxkit: only function tools", typ)
		}
		tool := chat.Tool{}
		if tool.Name, err = optString(f, "name", p); err != nil {
			return err
		}
		if tool.Name == "" {
			return reqjson.Fail(join(p, "name"), "required")
		}
		if tool.Description, err = optString(f, "description", p); err != nil {
			return err
		}
		tool.InputSchema = json.RawMessage(`{"type":"object","properties":{}}`)
		if ps, ok := f.Get("parameters"); ok && !reqjson.IsNull(ps) {
			if _, err := objectAtMost(ps, join(p, "parameters"), chat.MaxExtraFields); err != nil {
				return reqjson.Fail(join(p, "parameters"), "must be a JSON Schema object")
			}
			tool.InputSchema = chat.CloneRaw(ps)
		}
		if sv, ok := f.Get("strict"); ok && !reqjson.IsNull(sv) {
			strict, err := reqjson.Bool(sv, join(p, "strict"))
			if err != nil {
				return err
			}
			if strict {
				tool.Extra = map[string]json.RawMessage{"strict": json.RawMessage("true")}
			}
		}
		d.r.Tools = append(d.r.Tools, tool)
	}
	return nil
}

func (d *requestDecoder) toolChoice(v json.RawMessage) error {
	const k = "tool_choice"
	if reqjson.IsString(v) {
		s, err := reqjson.String(v, k)
		if err != nil {
			return err
		}
		switch s {
		case "auto", "none":
			d.r.ToolChoice = &chat.ToolChoice{Type: s}
		case "required":
			d.r.ToolChoice = &chat.ToolChoice{Type: "any"}
		default:
			return reqjson.Fail(k, "%q is not one of auto, none, required", s)
		}
		return nil
	}
	f, err := d.object(v, k, choiceKeys...)
	if err != nil {
		return err
	}
	typ, err := reqjson.String(reqjson.Get(f, "type"), k+".type")
	if err != nil {
		return err
	}
	switch typ {
	case "function":
		name, err := optString(f, "name", k)
		if err != nil {
			return err
		}
		if name == "" {
			return reqjson.Fail(k+".name", "required")
		}
		d.r.ToolChoice = &chat.ToolChoice{Type: "tool", Name: name}
		return nil
	case "allowed_tools":
		return d.allowedTools(f)
	}
	return reqjson.Fail(k+".type", "%q is not supported by ctxkit: only function tools (function, allowed_tools)", typ)
}

// allowedTools keeps only the tools {"type":"allowed_tools"} names.
func (d *requestDecoder) allowedTools(f strictjson.Members) error {
	const k = "tool_choice"
	mode, err := optString(f, "mode", k)
	if err != nil {
		return err
	}
	if err := oneOf(mode, k+".mode", "auto", "required"); err != nil {
		return err
	}
	raw, err := arrayAtMost(reqjson.Get(f, "tools"), k+".tools", chat.MaxTools)
	if tooMany(err) {
		return reqjson.Fail(k+".tools", "more than %d tools", chat.MaxTools)
	}
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for i, t := range raw {
		p := index(k+".tools", i)
		tf, err := d.object(t, p, allowedKeys...)
		if err != nil {
			return err
		}
		typ, err := reqjson.String(reqjson.Get(tf, "type"), join(p, "type"))
		if err != nil {
			return err
		}
		if typ != "function" {
			return reqjson.Fail(join(p, "type"), "%q tools are not supported by ctxkit: only function tools", typ)
		}
		name, err := optString(tf, "name", p)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(d.r.Tools, func(t chat.Tool) bool { return t.Name == name }) {
			return reqjson.Fail(join(p, "name"), "%q is not one of the request's tools", name)
		}
		names[name] = true
	}
	d.r.Tools = slices.DeleteFunc(d.r.Tools, func(t chat.Tool) bool { return !names[t.Name] })
	d.r.ToolChoice = &chat.ToolChoice{Type: "auto"}
	if mode == "required" {
		d.r.ToolChoice.Type = "any"
	}
	return nil
}

// input reads input: a string, or an array of items.
func (d *requestDecoder) input(v json.RawMessage) error {
	if reqjson.IsString(v) {
		s, err := reqjson.String(v, "input")
		if err != nil {
			return err
		}
		d.r.Messages = []chat.Message{{Role: chat.User, Content: chat.Str(s)}}
		return nil
	}
	raw, err := arrayAtMost(v, "input", chat.MaxMessages)
	if tooMany(err) {
		return reqjson.Fail("input", "more than %d items", chat.MaxMessages)
	}
	if err != nil {
		return reqjson.Fail("input", "must be a string or an array of items")
	}
	for i, item := range raw {
		if err := d.item(item, index("input", i)); err != nil {
			return err
		}
	}
	return nil
}

func (d *requestDecoder) item(data []byte, path string) error {
	f, err := objectAtMost(data, path, chat.MaxExtraFields-d.extras+maxModelled)
	if tooMany(err) {
		return tooManyExtras(path)
	}
	if err != nil {
		return err
	}
	typ := "message"
	if tv, ok := f.Get("type"); ok && !reqjson.IsNull(tv) {
		if typ, err = reqjson.String(tv, join(path, "type")); err != nil {
			return err
		}
	}
	switch typ {
	case "message":
		if err := d.unknown(f, path, messageKeys...); err != nil {
			return err
		}
		return d.message(f, path)
	case "function_call":
		if err := d.unknown(f, path, callKeys...); err != nil {
			return err
		}
		return d.functionCall(f, path)
	case "function_call_output":
		if err := d.unknown(f, path, outputKeys...); err != nil {
			return err
		}
		return d.callOutput(f, path)
	case "reasoning":
		if err := d.unknown(f, path, reasoningKeys...); err != nil {
			return err
		}
		return d.reasoningItem(f, path)
	case "item_reference":
		return reqjson.Fail(join(path, "type"), "item references are not supported by ctxkit: send the item itself, or continue with previous_response_id")
	}
	return reqjson.Fail(join(path, "type"), "%q items are not supported by ctxkit: only messages, function calls, their outputs and reasoning", typ)
}

// assistant is the assistant message the current model turn goes to.
func (d *requestDecoder) assistant() *chat.Message {
	d.toolRun = -1
	if d.turn < 0 {
		d.turn = len(d.r.Messages)
		d.r.Messages = append(d.r.Messages, chat.Message{Role: chat.Assistant, Content: chat.Of()})
	}
	return &d.r.Messages[d.turn]
}

func (d *requestDecoder) message(f strictjson.Members, path string) error {
	role, err := optString(f, "role", path)
	if err != nil {
		return err
	}
	cv, ok := f.Get("content")
	cp := join(path, "content")
	if !ok || reqjson.IsNull(cv) {
		return reqjson.Fail(cp, "required")
	}
	switch role {
	case "system", "developer":
		return d.systemMessage(cv, cp)
	case "user":
		return d.userMessage(cv, cp)
	case "assistant":
		return d.assistantMessage(cv, cp)
	case "":
		return reqjson.Fail(join(path, "role"), "required")
	}
	return reqjson.Fail(join(path, "role"), "%q is not one of user, assistant, system, developer", role)
}

func (d *requestDecoder) systemMessage(v json.RawMessage, path string) error {
	if reqjson.IsString(v) {
		s, err := reqjson.String(v, path)
		if err != nil {
			return err
		}
		if s != "" {
			d.sys = append(d.sys, s)
		}
		return nil
	}
	blocks, err := d.parts(v, path, partsInput)
	if err != nil {
		return err
	}
	for j, b := range blocks {
		if b.Type != chat.TypeText {
			return reqjson.Fail(index(path, j), "a system message takes input_text parts, not %q", b.Type)
		}
		if b.Text != "" {
			d.sys = append(d.sys, b.Text)
		}
	}
	return nil
}

func (d *requestDecoder) userMessage(v json.RawMessage, path string) error {
	d.turn = -1
	var c chat.Content
	if reqjson.IsString(v) {
		s, err := reqjson.String(v, path)
		if err != nil {
			return err
		}
		c = chat.Str(s)
	} else {
		blocks, err := d.parts(v, path, partsInput)
		if err != nil {
			return err
		}
		c = chat.Of(blocks...)
	}
	if d.toolRun >= 0 {
		if c.IsString && c.Text != "" {
			if err := d.block(path); err != nil {
				return err
			}
		}
		m := &d.r.Messages[d.toolRun]
		m.Content.Blocks = append(m.Content.Blocks, c.AsBlocks()...)
		d.toolRun = -1
		return nil
	}
	d.r.Messages = append(d.r.Messages, chat.Message{Role: chat.User, Content: c})
	return nil
}

func (d *requestDecoder) assistantMessage(v json.RawMessage, path string) error {
	var blocks []chat.Block
	if reqjson.IsString(v) {
		s, err := reqjson.String(v, path)
		if err != nil {
			return err
		}
		if s != "" {
			if err := d.block(path); err != nil {
				return err
			}
			blocks = []chat.Block{{Type: chat.TypeText, Text: s}}
		}
	} else {
		var err error
		if blocks, err = d.parts(v, path, partsOutput); err != nil {
			return err
		}
	}
	m := d.assistant()
	m.Content.Blocks = append(m.Content.Blocks, blocks...)
	return nil
}

func (d *requestDecoder) functionCall(f strictjson.Members, path string) error {
	b := chat.Block{Type: chat.TypeToolUse}
	var err error
	if b.ID, err = optString(f, "call_id", path); err != nil {
		return err
	}
	if b.ID == "" {
		return reqjson.Fail(join(path, "call_id"), "required")
	}
	if b.Name, err = optString(f, "name", path); err != nil {
		return err
	}
	if b.Name == "" {
		return reqjson.Fail(join(path, "name"), "required")
	}
	args, err := optString(f, "arguments", path)
	if err != nil {
		return err
	}
	b.Input = argumentsInput(args)
	if err := d.block(path); err != nil {
		return err
	}
	m := d.assistant()
	m.Content.Blocks = append(m.Content.Blocks, b)
	return nil
}

// argumentsInput is a call's arguments as a tool_use input: a JSON object
// compacted, "" as {}, anything else kept as {"_raw": text}.
func argumentsInput(args string) json.RawMessage {
	t := strings.TrimSpace(args)
	if t == "" {
		return json.RawMessage("{}")
	}
	if t[0] == '{' && json.Valid([]byte(t)) {
		if _, err := objectAtMost([]byte(t), "", chat.MaxExtraFields); err == nil {
			return json.RawMessage(compact(t))
		}
	}
	return chat.RawArguments(args)
}

func (d *requestDecoder) callOutput(f strictjson.Members, path string) error {
	d.turn = -1
	id, err := optString(f, "call_id", path)
	if err != nil {
		return err
	}
	if id == "" {
		return reqjson.Fail(join(path, "call_id"), "required")
	}
	if err := d.block(path); err != nil {
		return err
	}
	ov, ok := f.Get("output")
	op := join(path, "output")
	if !ok || reqjson.IsNull(ov) {
		return reqjson.Fail(op, "required")
	}
	var c chat.Content
	if reqjson.IsString(ov) {
		s, err := reqjson.String(ov, op)
		if err != nil {
			return err
		}
		c = chat.Str(s)
	} else {
		blocks, err := d.parts(ov, op, partsInput)
		if err != nil {
			return err
		}
		c = chat.Of(blocks...)
	}
	b := chat.Block{Type: chat.TypeToolResult, ToolUseID: id, Content: &c}
	if d.toolRun < 0 {
		d.toolRun = len(d.r.Messages)
		d.r.Messages = append(d.r.Messages, chat.Message{Role: chat.User, Content: chat.Of()})
	}
	m := &d.r.Messages[d.toolRun]
	m.Content.Blocks = append(m.Content.Blocks, b)
	return nil
}

func (d *requestDecoder) reasoningItem(f strictjson.Members, path string) error {
	var texts []string
	for _, k := range []string{"summary", "content"} {
		v, ok := f.Get(k)
		if !ok || reqjson.IsNull(v) {
			continue
		}
		p := join(path, k)
		raw, err := arrayAtMost(v, p, chat.MaxBlocks-d.blocks)
		if tooMany(err) {
			return tooManyBlocks(p)
		}
		if err != nil {
			return err
		}
		d.blocks += len(raw)
		for i, e := range raw {
			ep := index(p, i)
			pf, err := d.object(e, ep, summaryKeys...)
			if err != nil {
				return err
			}
			typ, err := optString(pf, "type", ep)
			if err != nil {
				return err
			}
			want := "summary_text"
			if k == "content" {
				want = "reasoning_text"
			}
			if typ != want && !(k == "content" && typ == "text") {
				return reqjson.Fail(join(ep, "type"), "%q is not %s", typ, want)
			}
			s, err := optString(pf, "text", ep)
			if err != nil {
				return err
			}
			if s != "" {
				texts = append(texts, s)
			}
		}
		if k == "summary" && len(texts) > 0 {
			break // the summary is what is written back; content is raw reasoning
		}
	}
	enc, err := optString(f, "encrypted_content", path)
	if err != nil {
		return err
	}
	if err := d.block(path); err != nil {
		return err
	}
	text := strings.Join(texts, "\n\n")
	var b chat.Block
	switch {
	case strings.HasPrefix(enc, redactedMarker):
		b = chat.Block{Type: chat.TypeRedactedThinking, Data: enc[len(redactedMarker):]}
	case enc != "":
		b = chat.Block{Type: chat.TypeThinking, Thinking: text, Signature: enc}
	case text != "":
		b = chat.Block{Type: chat.TypeReasoning, Text: text}
	default:
		// Nothing to carry: a reference to reasoning ctxkit never saw.
		return nil
	}
	m := d.assistant()
	m.Content.Blocks = append(m.Content.Blocks, b)
	return nil
}

// Which parts a content array may hold.
const (
	partsInput  = iota // input_text, input_image, input_file
	partsOutput        // output_text, refusal, input_text
)

func (d *requestDecoder) parts(v json.RawMessage, path string, kind int) ([]chat.Block, error) {
	raw, err := d.blockArray(v, path)
	if err != nil {
		if ce, ok := err.(*chat.Error); ok && ce.Code == chat.CodeInvalidValue {
			return nil, reqjson.Fail(path, "must be a string or an array of content parts")
		}
		return nil, err
	}
	out := make([]chat.Block, 0, len(raw))
	for j, pv := range raw {
		p := index(path, j)
		f, err := objectAtMost(pv, p, chat.MaxExtraFields-d.extras+maxModelled)
		if tooMany(err) {
			return nil, tooManyExtras(p)
		}
		if err != nil {
			return nil, err
		}
		typ, err := optString(f, "type", p)
		if err != nil {
			return nil, err
		}
		var b chat.Block
		switch {
		case typ == "input_text" || (kind == partsOutput && typ == "output_text"):
			if err := d.unknown(f, p, textPartKeys...); err != nil {
				return nil, err
			}
			b = chat.Block{Type: chat.TypeText}
			if b.Text, err = reqjson.String(reqjson.Get(f, "text"), join(p, "text")); err != nil {
				return nil, err
			}
		case kind == partsOutput && typ == "refusal":
			if err := d.unknown(f, p, refusalKeys...); err != nil {
				return nil, err
			}
			b = chat.Block{Type: chat.TypeText}
			if b.Text, err = reqjson.String(reqjson.Get(f, "refusal"), join(p, "refusal")); err != nil {
				return nil, err
			}
		case kind == partsInput && typ == "input_image":
			if err := d.unknown(f, p, imageKeys...); err != nil {
				return nil, err
			}
			if b, err = imagePart(f, p); err != nil {
				return nil, err
			}
		case kind == partsInput && typ == "input_file":
			if err := d.unknown(f, p, fileKeys...); err != nil {
				return nil, err
			}
			if b, err = filePart(f, p); err != nil {
				return nil, err
			}
		case typ == "":
			return nil, reqjson.Fail(join(p, "type"), "required")
		case kind == partsInput:
			return nil, reqjson.Fail(join(p, "type"), "%q is not one of input_text, input_image, input_file", typ)
		default:
			return nil, reqjson.Fail(join(p, "type"), "%q is not one of output_text, refusal, input_text (an assistant message holds text)", typ)
		}
		out = append(out, b)
	}
	return out, nil
}

func imagePart(f strictjson.Members, path string) (chat.Block, error) {
	detail := ""
	if dv, ok := f.Get("detail"); ok && !reqjson.IsNull(dv) {
		s, err := reqjson.String(dv, join(path, "detail"))
		if err != nil {
			return chat.Block{}, err
		}
		if err := oneOf(s, join(path, "detail"), "low", "high", "auto", "original"); err != nil {
			return chat.Block{}, err
		}
		detail = s
	}
	b, err := image(f, path)
	if err == nil && detail != "" && detail != "auto" {
		// The image's resolution (and cost): kept in the source's Extra
		// for an OpenAI-shaped upstream to carry and the others to name
		// in a warning; auto is the default and says nothing.
		if b.Source.Extra == nil {
			b.Source.Extra = map[string]json.RawMessage{}
		}
		b.Source.Extra["detail"] = rawString(detail)
	}
	return b, err
}

func image(f strictjson.Members, path string) (chat.Block, error) {
	url, err := optString(f, "image_url", path)
	if err != nil {
		return chat.Block{}, err
	}
	if url != "" {
		if !reqjson.IsDataURL(url) {
			return chat.Block{Type: chat.TypeImage, Source: &chat.Source{Type: "url", URL: url}}, nil
		}
		mt, data, err := reqjson.ParseDataURL(url, join(path, "image_url"))
		if err != nil {
			return chat.Block{}, err
		}
		return chat.Block{Type: chat.TypeImage, Source: &chat.Source{Type: "base64", MediaType: mt, Data: data}}, nil
	}
	id, err := optString(f, "file_id", path)
	if err != nil {
		return chat.Block{}, err
	}
	if id == "" {
		return chat.Block{}, reqjson.Fail(path, "needs image_url or file_id")
	}
	return chat.Block{Type: chat.TypeImage, Source: fileSource(id)}, nil
}

func fileSource(id string) *chat.Source {
	return &chat.Source{Type: "file", Extra: map[string]json.RawMessage{"file_id": rawString(id)}}
}

func filePart(f strictjson.Members, path string) (chat.Block, error) {
	b := chat.Block{Type: chat.TypeDocument}
	var err error
	if b.Title, err = optString(f, "filename", path); err != nil {
		return b, err
	}
	if _, err := optString(f, "detail", path); err != nil {
		return b, err
	}
	data, err := optString(f, "file_data", path)
	if err != nil {
		return b, err
	}
	if data != "" {
		p := join(path, "file_data")
		if reqjson.IsDataURL(data) {
			mt, payload, err := reqjson.ParseDataURL(data, p)
			if err != nil {
				return b, err
			}
			b.Source = &chat.Source{Type: "base64", MediaType: mt, Data: payload}
			return b, nil
		}
		// Bare base64, as the SDKs' examples send a PDF.
		b.Source = &chat.Source{Type: "base64", MediaType: "application/pdf", Data: data}
		return b, nil
	}
	url, err := optString(f, "file_url", path)
	if err != nil {
		return b, err
	}
	if url != "" {
		b.Source = &chat.Source{Type: "url", URL: url}
		return b, nil
	}
	id, err := optString(f, "file_id", path)
	if err != nil {
		return b, err
	}
	if id == "" {
		return b, reqjson.Fail(path, "needs file_data, file_url or file_id")
	}
	b.Source = fileSource(id)
	return b, nil
}
