package chat

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"strconv"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
	"github.com/ctxkit/ctxkit/internal/strictjson"
)

// MaxNesting bounds how deep tool results may nest content.
const MaxNesting = 4

// Limits on the size of a request. A body of a few megabytes could
// otherwise hold a million tiny blocks, and decoding it (a Block and the
// structures around it for each) would take many times the body's size
// in memory. The limits are far above any real conversation; DecodeRequest
// refuses a request past one of them as soon as it counts the array at
// fault, before it decodes the array's elements.
const (
	// MaxMessages bounds the messages of a request.
	MaxMessages = 10000
	// MaxBlocks bounds the content blocks of a whole request: those of the
	// system prompt, of the messages, and those nested in tool results.
	MaxBlocks = 20000
	// MaxTools bounds the tools of a request.
	MaxTools = 1000
	// MaxStopSequences bounds the stop sequences of a request.
	MaxStopSequences = 1000
	// MaxExtraFields bounds the fields a request gives that ctxkit does
	// not model, counted across the whole request: those of the request,
	// its messages, blocks, sources and tools, which DecodeRequest keeps
	// in their Extra maps (each a map entry and a copy, many times the few
	// bytes of JSON it can take), and those a dialect's decoder drops. An
	// object of so many members that they must run past the bound is
	// refused before its members are read.
	MaxExtraFields = 10000
)

// maxModelled is more than the most fields ctxkit models in any one
// object of a request (the request's own, 13): an object of more than
// maxModelled members past what is left of MaxExtraFields has too many
// unknown ones, whatever they are.
const maxModelled = 16

// DecodeRequest reads a canonical request (the Anthropic Messages shape).
// It is strict about what ctxkit models (a role must be user or assistant;
// a tool_use needs an id, a name and an object input; ...) and keeps what
// it does not (unknown fields and block types). Errors are *Error naming
// the place: messages[3].content[1].source. A request of more than
// MaxMessages messages, MaxBlocks content blocks, MaxTools tools,
// MaxStopSequences stop sequences or MaxExtraFields unknown fields is
// refused.
//
// Structured output: output_config.format, or the structured-outputs
// beta's top-level output_format (one of them, not both), is the
// request's Format; output_config's other members (effort, ...) are kept
// in Extra["output_config"]. A format is {"type":"json_schema","schema":
// {...}} or {"type":"json_object"}; name, description and strict, which
// the canonical JSON writes for formats read from other dialects, are
// read too.
func DecodeRequest(data []byte) (Request, error) {
	// Valid JSON (the common case) is split with a fast scanner; invalid
	// JSON goes through encoding/json, whose errors name what is wrong.
	return reader{valid: json.Valid(data)}.request(data)
}

func (rd reader) request(data []byte) (Request, error) {
	rd.used = new(used)
	var r Request
	fields, err := rd.fields(data, "")
	if err != nil {
		return r, err
	}
	for _, f := range fields {
		k, v := f.Key, f.Value
		switch k {
		case "model":
			err = str(v, k, &r.Model)
		case "system":
			if isNull(v) {
				continue
			}
			var c Content
			if c, err = rd.decodeContent(v, k, 0); err == nil {
				for i, b := range c.Blocks {
					if b.Type != TypeText {
						err = errorf(strictjson.Index("system", i), "the system prompt takes text blocks, not %q", b.Type)
						break
					}
				}
				r.System = &c
			}
		case "messages":
			var raw []json.RawMessage
			if raw, err = rd.array(v, k, MaxMessages); err != nil {
				if tooMany(err) {
					err = codef(CodeTooLarge, k, "more than %d messages", MaxMessages)
				}
				break
			}
			r.Messages = make([]Message, len(raw))
			for i, m := range raw {
				if r.Messages[i], err = rd.decodeMessage(m, MessagePath(i)); err != nil {
					break
				}
			}
		case "tools":
			var raw []json.RawMessage
			if raw, err = rd.array(v, k, MaxTools); err != nil {
				if tooMany(err) {
					err = codef(CodeTooLarge, k, "more than %d tools", MaxTools)
				}
				break
			}
			r.Tools = make([]Tool, len(raw))
			for i, t := range raw {
				if r.Tools[i], err = rd.decodeTool(t, strictjson.Index("tools", i)); err != nil {
					break
				}
			}
		case "tool_choice":
			if isNull(v) {
				continue
			}
			var tc ToolChoice
			if err = strictInto(v, k, &tc); err == nil {
				switch tc.Type {
				case "auto", "any", "none":
				case "tool":
					if tc.Name == "" {
						err = codef(CodeMissingField, strictjson.Join(k, "name"), "required when type is tool")
					}
				default:
					err = errorf(strictjson.Join(k, "type"), "%q is not one of auto, any, tool, none", tc.Type)
				}
				r.ToolChoice = &tc
			}
		case "max_tokens":
			var n int64
			if err = integer(v, k, &n); err == nil {
				if n < 0 || n > math.MaxInt32 {
					err = errorf(k, "must be between 0 and %d", math.MaxInt32)
				}
				r.MaxTokens = int(n)
			}
		case "temperature", "top_p":
			if isNull(v) {
				continue
			}
			var f float64
			if err = number(v, k, &f); err == nil {
				if k == "temperature" {
					r.Temperature = &f
				} else {
					r.TopP = &f
				}
			}
		case "stop_sequences":
			// Counted before they are decoded.
			if t := bytes.TrimSpace(v); len(t) > 0 && t[0] == '[' {
				if _, err = rd.array(t, k, MaxStopSequences); tooMany(err) {
					err = codef(CodeTooLarge, k, "more than %d stop sequences", MaxStopSequences)
					break
				}
			}
			err = strictInto(v, k, &r.StopSequences)
		case "thinking":
			if isNull(v) {
				continue
			}
			var t Thinking
			if err = strictInto(v, k, &t); err == nil {
				switch t.Type {
				case "enabled", "disabled", "adaptive":
				default:
					err = errorf(strictjson.Join(k, "type"), "%q is not one of enabled, disabled, adaptive", t.Type)
				}
				if t.BudgetTokens < 0 {
					err = errorf(strictjson.Join(k, "budget_tokens"), "must not be negative")
				}
				r.Thinking = &t
			}
		case "reasoning_effort":
			if err = str(v, k, &r.ReasoningEffort); err == nil {
				switch r.ReasoningEffort {
				case "", "minimal", "low", "medium", "high":
				default:
					err = errorf(k, "%q is not one of minimal, low, medium, high", r.ReasoningEffort)
				}
			}
		case "stream":
			err = strictInto(v, k, &r.Stream)
		case "metadata":
			r.Metadata = CloneRaw(v)
		case "output_config":
			err = rd.outputConfig(v, &r)
		case "output_format":
			// The structured-outputs beta's form of output_config.format.
			// Members come sorted: output_config has been read.
			if isNull(v) {
				continue
			}
			if r.Format != nil {
				err = errorf(k, "output_format and output_config.format are the same setting: give one")
				break
			}
			r.Format, err = rd.outputFormat(v, k)
		default:
			r.Extra, err = rd.keep(r.Extra, "", k, v)
		}
		if err != nil {
			return Request{}, err
		}
	}
	if r.Messages == nil {
		if !fields.Has("messages") {
			return Request{}, codef(CodeMissingField, "messages", "required")
		}
		r.Messages = []Message{}
	}
	return r, nil
}

// outputConfig reads Anthropic's output_config: its format is the
// request's Format; its other members (effort, ...) stay in
// Extra["output_config"] as they came.
func (rd reader) outputConfig(v json.RawMessage, r *Request) error {
	if isNull(v) {
		return nil
	}
	fields, err := rd.fields(v, "output_config")
	if err != nil {
		return err
	}
	rest := make([]strictjson.Member, 0, len(fields))
	for _, f := range fields {
		if f.Key != "format" {
			rest = append(rest, f)
			continue
		}
		if isNull(f.Value) {
			continue
		}
		if r.Format, err = rd.outputFormat(f.Value, "output_config.format"); err != nil {
			return err
		}
	}
	if len(rest) == 0 {
		return nil
	}
	b := []byte{'{'}
	for i, f := range rest {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, f.Key)
		b = append(b, ':')
		b = append(b, bytes.TrimSpace(f.Value)...)
	}
	// Kept, and counted, like any other unknown field.
	r.Extra, err = rd.keep(r.Extra, "", "output_config", append(b, '}'))
	return err
}

// outputFormat reads a structured-output format: {"type":"json_schema",
// "schema":{...}} (Anthropic's form; the canonical JSON adds name,
// description and strict) or {"type":"json_object"}.
func (rd reader) outputFormat(v json.RawMessage, path string) (*OutputFormat, error) {
	fields, err := rd.object(v, path, maxModelled)
	if tooMany(err) {
		return nil, errorf(path, "must be {\"type\",\"schema\"}: too many fields")
	}
	if err != nil {
		return nil, err
	}
	f := &OutputFormat{}
	for _, m := range fields {
		p := strictjson.Join(path, m.Key)
		switch m.Key {
		case "type":
			err = str(m.Value, p, &f.Type)
		case "name":
			err = str(m.Value, p, &f.Name)
		case "description":
			err = str(m.Value, p, &f.Description)
		case "schema":
			if _, err = rd.object(m.Value, p, math.MaxInt); err == nil {
				f.Schema = CloneRaw(bytes.TrimSpace(m.Value))
			} else {
				err = errorf(p, "must be a JSON Schema object")
			}
		case "strict":
			if !isNull(m.Value) {
				var b bool
				err = strictInto(m.Value, p, &b)
				f.Strict = &b
			}
		default:
			err = errorf(p, "not a field of an output format (type, schema)")
		}
		if err != nil {
			return nil, err
		}
	}
	switch f.Type {
	case "json_schema":
		if f.Schema == nil {
			return nil, codef(CodeMissingField, strictjson.Join(path, "schema"), "required when type is json_schema")
		}
	case "json_object":
		if f.Schema != nil {
			return nil, errorf(strictjson.Join(path, "schema"), "a json_object format takes no schema: use type json_schema")
		}
	case "":
		return nil, codef(CodeMissingField, strictjson.Join(path, "type"), "required")
	default:
		return nil, errorf(strictjson.Join(path, "type"), "%q is not json_schema or json_object", f.Type)
	}
	return f, nil
}

func (rd reader) decodeMessage(data []byte, path string) (Message, error) {
	var m Message
	fields, err := rd.fields(data, path)
	if err != nil {
		return m, err
	}
	role, ok := fields.Get("role")
	if !ok {
		return m, codef(CodeMissingField, strictjson.Join(path, "role"), "required")
	}
	if err := str(role, strictjson.Join(path, "role"), &m.Role); err != nil {
		return m, err
	}
	if m.Role != User && m.Role != Assistant {
		return m, errorf(strictjson.Join(path, "role"), "%q is not user or assistant", m.Role)
	}
	content, ok := fields.Get("content")
	if !ok {
		return m, codef(CodeMissingField, strictjson.Join(path, "content"), "required")
	}
	if m.Content, err = rd.decodeContent(content, strictjson.Join(path, "content"), 0); err != nil {
		return m, err
	}
	for _, f := range fields {
		k, v := f.Key, f.Value
		switch k {
		case "role", "content":
		case "reasoning_details":
			if isNull(v) {
				continue
			}
			if err := rd.isArray(v, strictjson.Join(path, k)); err != nil {
				return m, err
			}
			m.ReasoningDetails = CloneRaw(v)
		default:
			if m.Extra, err = rd.keep(m.Extra, path, k, v); err != nil {
				return m, err
			}
		}
	}
	return m, nil
}

func (rd reader) decodeContent(data []byte, path string, depth int) (Content, error) {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := str(data, path, &s); err != nil {
			return Content{}, err
		}
		return Str(s), nil
	}
	// The blocks are counted before they are read: past MaxBlocks the
	// rest of the array is not even split.
	room := MaxBlocks - rd.used.blocks
	raw, err := rd.array(data, path, room)
	if tooMany(err) {
		return Content{}, codef(CodeTooLarge, strictjson.Index(path, room), "more than %d content blocks in the request", MaxBlocks)
	}
	if err != nil {
		return Content{}, errorf(path, "must be a string or an array of blocks")
	}
	rd.used.blocks += len(raw)
	c := Content{Blocks: make([]Block, len(raw))}
	for i, b := range raw {
		var err error
		if c.Blocks[i], err = rd.decodeBlock(b, strictjson.Index(path, i), depth); err != nil {
			return Content{}, err
		}
	}
	return c, nil
}

func (rd reader) decodeBlock(data []byte, path string, depth int) (Block, error) {
	var b Block
	fields, err := rd.fields(data, path)
	if err != nil {
		return b, err
	}
	t, ok := fields.Get("type")
	if !ok {
		return b, codef(CodeMissingField, strictjson.Join(path, "type"), "required")
	}
	if err := str(t, strictjson.Join(path, "type"), &b.Type); err != nil {
		return b, err
	}
	if b.Type == "" {
		return b, codef(CodeMissingField, strictjson.Join(path, "type"), "empty")
	}
	known := b.Known()
	for _, f := range fields {
		k, v := f.Key, f.Value
		if k == "type" {
			continue
		}
		p := strictjson.Join(path, k)
		if k == "cache_control" {
			if !isNull(v) {
				b.CacheControl = CloneRaw(v)
			}
			continue
		}
		handled := true
		switch {
		case !known:
			handled = false
		case k == "text" && (b.Type == TypeText || b.Type == TypeReasoning):
			err = str(v, p, &b.Text)
		case k == "citations" && (b.Type == TypeText || b.Type == TypeDocument):
			if !isNull(v) {
				b.Citations = CloneRaw(v)
			}
		case k == "source" && (b.Type == TypeImage || b.Type == TypeDocument):
			b.Source, err = rd.decodeSource(v, p)
		case k == "title" && b.Type == TypeDocument:
			err = str(v, p, &b.Title)
		case k == "context" && b.Type == TypeDocument:
			err = str(v, p, &b.Context)
		case k == "id" && b.Type == TypeToolUse:
			err = str(v, p, &b.ID)
		case k == "name" && b.Type == TypeToolUse:
			err = str(v, p, &b.Name)
		case k == "input" && b.Type == TypeToolUse:
			if _, err = rd.object(v, p, math.MaxInt); err == nil {
				b.Input = CloneRaw(v)
			} else {
				err = errorf(p, "must be a JSON object")
			}
		case k == "tool_use_id" && b.Type == TypeToolResult:
			err = str(v, p, &b.ToolUseID)
		case k == "content" && b.Type == TypeToolResult:
			if isNull(v) {
				continue
			}
			if depth+1 >= MaxNesting {
				return b, codef(CodeTooLarge, p, "tool results nested more than %d deep", MaxNesting)
			}
			var c Content
			if c, err = rd.decodeContent(v, p, depth+1); err == nil {
				b.Content = &c
			}
		case k == "is_error" && b.Type == TypeToolResult:
			if !isNull(v) {
				var isError bool // not &b.IsError: b would escape
				err = strictInto(v, p, &isError)
				b.IsError = isError
			}
		case k == "thinking" && b.Type == TypeThinking:
			err = str(v, p, &b.Thinking)
		case k == "signature" && (b.Type == TypeThinking || b.Type == TypeThoughtSignature):
			err = str(v, p, &b.Signature)
		case k == "data" && b.Type == TypeRedactedThinking:
			err = str(v, p, &b.Data)
		default:
			handled = false
		}
		if err != nil {
			return b, err
		}
		if !handled {
			if b.Extra, err = rd.keep(b.Extra, path, k, v); err != nil {
				return b, err
			}
		}
	}
	switch b.Type {
	case TypeToolUse:
		if b.ID == "" {
			return b, codef(CodeMissingField, strictjson.Join(path, "id"), "a tool_use needs an id")
		}
		if b.Name == "" {
			return b, codef(CodeMissingField, strictjson.Join(path, "name"), "a tool_use needs a name")
		}
		if b.Input == nil {
			return b, codef(CodeMissingField, strictjson.Join(path, "input"), "a tool_use needs an input object")
		}
	case TypeToolResult:
		if b.ToolUseID == "" {
			return b, codef(CodeMissingField, strictjson.Join(path, "tool_use_id"), "a tool_result needs the id of its tool_use")
		}
	case TypeImage, TypeDocument:
		if b.Source == nil {
			return b, codef(CodeMissingField, strictjson.Join(path, "source"), "an %s needs a source", b.Type)
		}
		if b.Type == TypeImage {
			switch b.Source.Type {
			case "base64":
				if b.Source.MediaType == "" || b.Source.Data == "" {
					return b, codef(CodeMissingField, strictjson.Join(path, "source"), "a base64 image needs media_type and data")
				}
			case "url":
				if b.Source.URL == "" {
					return b, codef(CodeMissingField, strictjson.Join(path, "source.url"), "required for a url source")
				}
			}
		}
	case TypeRedactedThinking:
		if b.Data == "" {
			return b, codef(CodeMissingField, strictjson.Join(path, "data"), "a redacted_thinking block needs its data")
		}
	}
	return b, nil
}

func (rd reader) decodeSource(data []byte, path string) (*Source, error) {
	fields, err := rd.fields(data, path)
	if err != nil {
		return nil, err
	}
	s := &Source{}
	for _, f := range fields {
		k, v := f.Key, f.Value
		p := strictjson.Join(path, k)
		switch k {
		case "type":
			err = str(v, p, &s.Type)
		case "media_type":
			err = str(v, p, &s.MediaType)
		case "data":
			// A text document's data is a string; other shapes are kept.
			if len(bytes.TrimSpace(v)) > 0 && bytes.TrimSpace(v)[0] == '"' {
				err = str(v, p, &s.Data)
			} else {
				s.Extra, err = rd.keep(s.Extra, path, k, v)
			}
		case "url":
			err = str(v, p, &s.URL)
		default:
			s.Extra, err = rd.keep(s.Extra, path, k, v)
		}
		if err != nil {
			return nil, err
		}
	}
	if s.Type == "" {
		return nil, codef(CodeMissingField, strictjson.Join(path, "type"), "required")
	}
	return s, nil
}

func (rd reader) decodeTool(data []byte, path string) (Tool, error) {
	var t Tool
	fields, err := rd.fields(data, path)
	if err != nil {
		return t, err
	}
	for _, f := range fields {
		k, v := f.Key, f.Value
		p := strictjson.Join(path, k)
		switch k {
		case "name":
			err = str(v, p, &t.Name)
		case "description":
			err = str(v, p, &t.Description)
		case "type":
			err = str(v, p, &t.Type)
		case "input_schema":
			if _, err = rd.object(v, p, math.MaxInt); err == nil {
				t.InputSchema = CloneRaw(v)
			} else {
				err = errorf(p, "must be a JSON Schema object")
			}
		case "cache_control":
			if !isNull(v) {
				t.CacheControl = CloneRaw(v)
			}
		default:
			t.Extra, err = rd.keep(t.Extra, path, k, v)
		}
		if err != nil {
			return t, err
		}
	}
	if t.Name == "" {
		return t, codef(CodeMissingField, strictjson.Join(path, "name"), "required")
	}
	if t.Type == "" && t.InputSchema == nil {
		return t, codef(CodeMissingField, strictjson.Join(path, "input_schema"), "required for a custom tool")
	}
	return t, nil
}

// reader decodes one request. valid says the whole request is valid JSON,
// so every value within it is too; used is what the request has used of
// the limits so far.
type reader struct {
	valid bool
	used  *used
}

// used counts what a request has used of the limits on the whole request.
type used struct {
	blocks int // content blocks, against MaxBlocks
	extras int // unknown fields, against MaxExtraFields
}

// tooManyExtras is the error for the object at path whose unknown field
// is past MaxExtraFields.
func tooManyExtras(path string) error {
	return codef(CodeTooLarge, path, "more than %d unknown fields in the request", MaxExtraFields)
}

// fields reads the fields of an object whose unknown fields are kept
// (the request, a message, a block, a source, a tool): an object of so
// many that the unknown ones must run past MaxExtraFields is refused
// before they are read.
func (rd reader) fields(data []byte, path string) (strictjson.Members, error) {
	fields, err := rd.object(data, path, MaxExtraFields-rd.used.extras+maxModelled)
	if tooMany(err) {
		return nil, tooManyExtras(path)
	}
	return fields, err
}

// keep puts the unknown field k of the object at path in m (made when m
// is nil), counted against MaxExtraFields.
func (rd reader) keep(m map[string]json.RawMessage, path, k string, v json.RawMessage) (map[string]json.RawMessage, error) {
	if rd.used.extras == MaxExtraFields {
		return m, tooManyExtras(path)
	}
	rd.used.extras++
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	m[k] = CloneRaw(v)
	return m, nil
}

// object reads a JSON object's fields; duplicate keys are refused, and so
// is an object of more than max fields (tooMany), before a key given
// twice.
func (rd reader) object(data []byte, path string, max int) (strictjson.Members, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, errorf(path, "must be a JSON object")
	}
	fields, err := strictjson.Object(data, path, max, rd.valid)
	if err != nil {
		return nil, jsonErr(err)
	}
	return fields, nil
}

// jsonErr is the *Error for an error of strictjson, but a too-many error
// is kept: its caller names the bound.
func jsonErr(err error) error {
	e := err.(*strictjson.Error)
	switch e.Code {
	case strictjson.CodeTooMany:
		return e
	case strictjson.CodeDuplicateKey:
		return codef(CodeDuplicateField, e.Path, "given twice")
	case strictjson.CodeTrailing:
		return codef(CodeInvalidJSON, e.Path, "more than one JSON value")
	}
	return &Error{Code: CodeInvalidJSON, Path: e.Path, Msg: e.Err.Error(), Err: e.Err}
}

// tooMany reports whether err says that an object or array has more
// members than its caller allows.
func tooMany(err error) bool { return strictjson.CodeOf(err) == strictjson.CodeTooMany }

// SortedKeys is m's keys in ascending order (nil when m is empty): the
// order in which the unmodelled fields of a request are read and warned
// about, so that map order never shows.
func SortedKeys(m map[string]json.RawMessage) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// array reads a JSON array's elements; an array of more than max elements
// is a too-many error (tooMany), found before the elements past max are
// read.
func (rd reader) array(data []byte, path string, max int) ([]json.RawMessage, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '[' {
		return nil, errorf(path, "must be an array")
	}
	out, err := strictjson.Array(data, path, max, rd.valid)
	if err != nil {
		return nil, jsonErr(err)
	}
	return out, nil
}

// isArray checks that data is a JSON array without splitting it.
func (rd reader) isArray(data []byte, path string) error {
	if rd.valid {
		if data = bytes.TrimSpace(data); len(data) == 0 || data[0] != '[' {
			return errorf(path, "must be an array")
		}
		return nil
	}
	_, err := rd.array(data, path, math.MaxInt)
	return err
}

func str(data []byte, path string, out *string) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '"' {
		return errorf(path, "must be a string")
	}
	if len(data) >= 2 && data[len(data)-1] == '"' {
		if s, err := jsonscan.Unquote(data); err == nil {
			*out = s
			return nil
		}
	}
	// Decoded into a string of its own, so that out does not escape:
	// the struct holding *out (a Block, ...) stays off the heap.
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return &Error{Code: CodeInvalidJSON, Path: path, Msg: err.Error(), Err: err}
	}
	*out = s
	return nil
}

func integer(data []byte, path string, out *int64) error {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(data)), 10, 64)
	if err != nil {
		return errorf(path, "must be an integer")
	}
	*out = n
	return nil
}

func number(data []byte, path string, out *float64) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || (data[0] != '-' && (data[0] < '0' || data[0] > '9')) {
		return errorf(path, "must be a number")
	}
	if err := json.Unmarshal(data, out); err != nil {
		return errorf(path, "must be a number")
	}
	return nil
}

func strictInto(data []byte, path string, out any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return errorf(path, "%v", err)
	}
	return nil
}

func isNull(data []byte) bool { return string(bytes.TrimSpace(data)) == "null" }

// UnmarshalJSON reads a request with DecodeRequest.
func (r *Request) UnmarshalJSON(data []byte) error {
	req, err := DecodeRequest(data)
	if err != nil {
		return err
	}
	*r = req
	return nil
}
