package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/jsonscan"
	"github.com/ctxkit/ctxkit/internal/strictjson"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/internal/reqjson"
)

// Bounds of a generateContent request body read by the Gemini dialect,
// beside the chat bounds (chat.MaxMessages contents, chat.MaxBlocks parts,
// chat.MaxTools function declarations, chat.MaxStopSequences stop
// sequences).
const (
	// maxFields bounds the members of one object of the request: no
	// object of the API has this many fields, and every field is either
	// known or refused, so an object past it is refused before its
	// members are read.
	maxFields = 64
	// maxSchemaDepth bounds how deeply an OpenAPI schema (responseSchema,
	// a declaration's parameters) may nest: it is converted by recursion.
	maxSchemaDepth = 64
	// maxSchemaMembers bounds the members of one object or array of such
	// a schema.
	maxSchemaMembers = 10000
)

// decodeRequest reads a generateContent request body as a canonical
// request (see Dialect for the mapping). model and stream come from the
// path. Errors are *chat.Error naming the field at fault with the
// client's own spelling of it (contents[2].parts[0].inlineData).
func decodeRequest(body []byte, model string, stream bool) (chat.Request, error) {
	d := requestDecoder{r: chat.Request{Model: model, Stream: stream}}
	if err := d.request(body); err != nil {
		return chat.Request{}, err
	}
	return d.r, nil
}

type requestDecoder struct {
	r      chat.Request
	blocks int // parts read so far, against chat.MaxBlocks
	tools  int // function declarations read so far, against chat.MaxTools
	calls  []call
	ids    map[string]bool // the ids the client gave calls and responses
}

// call is a functionCall of the request: where its tool_use block is, and
// whether a functionResponse answered it yet.
type call struct {
	msg, blk int
	id       string // the client's, or "" until pairIDs gives one
	name     string
	args     string // compacted, for its generated id
	answered bool
	// results are the tool_result blocks paired to it by order: they get
	// the call's id once it is known.
	results [][2]int
}

// fields are an object's members by their lowerCamelCase name; each keeps
// the key the client wrote, for paths.
type fields map[string]strictjson.Member

func (f fields) get(k string) (json.RawMessage, string, bool) {
	m, ok := f[k]
	if !ok || isNull(m.Value) {
		return nil, "", false
	}
	return m.Value, m.Key, true
}

// camel is a field name in lowerCamelCase: proto3 JSON, which the API
// reads, takes the snake_case name of a field as well.
func camel(k string) string {
	if !strings.Contains(k, "_") {
		return k
	}
	var b strings.Builder
	up := false
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c == '_' && i > 0:
			up = true
		case up && 'a' <= c && c <= 'z':
			b.WriteByte(c - 'a' + 'A')
			up = false
		default:
			b.WriteByte(c)
			up = false
		}
	}
	return b.String()
}

// object reads the object at path: every member must be one of known
// (lowerCamelCase names; their snake_case forms are accepted too), given
// once under either name.
func object(data json.RawMessage, path string, known ...string) (fields, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, reqjson.Fail(path, "must be a JSON object")
	}
	ms, err := strictjson.Object(data, path, maxFields, true)
	if err != nil {
		switch strictjson.CodeOf(err) {
		case strictjson.CodeTooMany:
			return nil, reqjson.FailCode(chat.CodeTooLarge, path, "more than %d fields", maxFields)
		case strictjson.CodeDuplicateKey:
			return nil, reqjson.FailCode(chat.CodeDuplicateField, err.(*strictjson.Error).Path, "given twice")
		}
		return nil, &chat.Error{Code: chat.CodeInvalidJSON, Path: path, Msg: "not valid JSON", Err: err}
	}
	f := make(fields, len(ms))
	for _, m := range ms {
		k := camel(m.Key)
		p := strictjson.Join(path, m.Key)
		if !slices.Contains(known, k) {
			return nil, reqjson.Fail(p, "not a field of a Gemini request here (the fields are %s)", strings.Join(known, ", "))
		}
		if prev, dup := f[k]; dup {
			return nil, reqjson.FailCode(chat.CodeDuplicateField, p, "given twice (as %q and %q)", prev.Key, m.Key)
		}
		f[k] = m
	}
	return f, nil
}

// array reads the array at path, of at most max elements (refused before
// the rest are read), reported as "more than max what".
func array(v json.RawMessage, path string, max int, what string) ([]json.RawMessage, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || v[0] != '[' {
		return nil, reqjson.Fail(path, "must be an array")
	}
	out, err := strictjson.Array(v, path, max, true)
	if strictjson.CodeOf(err) == strictjson.CodeTooMany {
		return nil, reqjson.FailCode(chat.CodeTooLarge, path, "more than %d %s", max, what)
	}
	if err != nil {
		return nil, reqjson.Fail(path, "must be an array")
	}
	return out, nil
}

// partArray reads an array of parts, which count against chat.MaxBlocks
// across the whole request, and counts them.
func (d *requestDecoder) partArray(v json.RawMessage, path string) ([]json.RawMessage, error) {
	raw, err := array(v, path, chat.MaxBlocks-d.blocks, "parts")
	var ce *chat.Error
	if errors.As(err, &ce) && ce.Code == chat.CodeTooLarge {
		ce.Msg = fmt.Sprintf("more than %d parts in the request", chat.MaxBlocks)
	}
	if err == nil {
		d.blocks += len(raw)
	}
	return raw, err
}

func isNull(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) == 0 || string(v) == "null"
}

// stringOf reads a string value of the body (valid JSON: the body was
// checked whole), without encoding/json for the usual string with no
// escapes: base64 image data makes up most of a request.
func stringOf(v json.RawMessage, path string) (string, error) {
	v = bytes.TrimSpace(v)
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", reqjson.Fail(path, "must be a string")
	}
	s, err := jsonscan.Unquote(v)
	if err != nil {
		return "", reqjson.Fail(path, "must be a string")
	}
	return s, nil
}

// intOf reads an integer; proto3 JSON writes 64-bit integers as strings,
// and 32-bit ones may be given as strings too.
func intOf(v json.RawMessage, path string, min int64) (int64, error) {
	s := string(bytes.TrimSpace(v))
	if len(s) >= 2 && s[0] == '"' {
		s = s[1 : len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		// 5.0 is an integer in JSON's eyes.
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) > math.MaxInt32 {
			return 0, reqjson.Fail(path, "must be an integer")
		}
		n = int64(f)
	}
	if n < min || n > math.MaxInt32 {
		return 0, reqjson.Fail(path, "must be between %d and %d", min, math.MaxInt32)
	}
	return n, nil
}

// compactObject is v compacted, which must be a JSON object.
func compactObject(v json.RawMessage, path string) (json.RawMessage, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || v[0] != '{' {
		return nil, reqjson.Fail(path, "must be a JSON object")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return nil, &chat.Error{Code: chat.CodeInvalidJSON, Path: path, Msg: "not valid JSON", Err: err}
	}
	return b.Bytes(), nil
}

var requestKeys = []string{"model", "contents", "systemInstruction", "tools", "toolConfig", "generationConfig",
	"safetySettings", "cachedContent", "labels", "serviceTier"}

func (d *requestDecoder) request(body []byte) error {
	body = bytes.TrimSpace(body)
	if !json.Valid(body) {
		var v any
		err := json.Unmarshal(body, &v)
		return &chat.Error{Code: chat.CodeInvalidJSON, Msg: fmt.Sprintf("the body is not valid JSON: %v", err), Err: err}
	}
	f, err := object(body, "", requestKeys...)
	if err != nil {
		return err
	}
	if v, k, ok := f.get("model"); ok {
		m, err := stringOf(v, k)
		if err != nil {
			return err
		}
		m = strings.TrimPrefix(m, "models/")
		switch {
		case d.r.Model == "":
			d.r.Model = m
		case m != "" && m != d.r.Model:
			// The path names the model the request is routed to; a body
			// naming another would be answered by a model it did not ask for.
			return reqjson.Fail(k, "%q is not the model the path names (%q): send one, or the same", m, d.r.Model)
		}
	}
	v, k, ok := f.get("contents")
	if !ok {
		return reqjson.FailCode(chat.CodeMissingField, "contents", "a request needs at least one content")
	}
	if err := d.contents(v, k); err != nil {
		return err
	}
	if v, k, ok := f.get("systemInstruction"); ok {
		if err := d.system(v, k); err != nil {
			return err
		}
	}
	if v, k, ok := f.get("tools"); ok {
		if err := d.toolList(v, k); err != nil {
			return err
		}
	}
	if v, k, ok := f.get("toolConfig"); ok {
		if err := d.toolConfig(v, k); err != nil {
			return err
		}
	}
	if v, k, ok := f.get("generationConfig"); ok {
		if err := d.generationConfig(v, k); err != nil {
			return err
		}
	}
	// Fields that only a Gemini upstream can act on are kept under their
	// own names; the converters of other upstreams say they drop them.
	for _, name := range []string{"safetySettings", "cachedContent", "labels", "serviceTier"} {
		if v, _, ok := f.get(name); ok {
			d.extra(name, v)
		}
	}
	d.pairIDs()
	return nil
}

func (d *requestDecoder) extra(k string, v json.RawMessage) {
	if d.r.Extra == nil {
		d.r.Extra = map[string]json.RawMessage{}
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil { // not reached: the body is valid JSON
		b.Write(v)
	}
	d.r.Extra[k] = b.Bytes()
}

var contentKeys = []string{"role", "parts"}

func (d *requestDecoder) contents(v json.RawMessage, path string) error {
	raw, err := array(v, path, chat.MaxMessages, "contents")
	if err != nil {
		return err
	}
	if len(raw) == 0 {
		return reqjson.FailCode(chat.CodeMissingField, path, "a request needs at least one content")
	}
	d.r.Messages = make([]chat.Message, 0, len(raw))
	for i, c := range raw {
		p := strictjson.Index(path, i)
		f, err := object(c, p, contentKeys...)
		if err != nil {
			return err
		}
		role := chat.User
		if v, k, ok := f.get("role"); ok {
			s, err := stringOf(v, strictjson.Join(p, k))
			if err != nil {
				return err
			}
			switch s {
			case RoleUser, "":
			case RoleModel:
				role = chat.Assistant
			case "function":
				// The role of function responses in earlier versions of
				// the API; they are the user's side of the conversation.
			default:
				return reqjson.Fail(strictjson.Join(p, k), "%q is not user or model", s)
			}
		}
		pv, pk, ok := f.get("parts")
		if !ok {
			return reqjson.FailCode(chat.CodeMissingField, strictjson.Join(p, "parts"), "a content needs at least one part")
		}
		blocks, err := d.parts(pv, strictjson.Join(p, pk), len(d.r.Messages), role)
		if err != nil {
			return err
		}
		d.r.Messages = append(d.r.Messages, chat.Message{Role: role, Content: chat.Content{Blocks: blocks}})
	}
	return nil
}

// sealedRedacted reports whether sig is a ctxkit envelope of redacted
// thinking.
func sealedRedacted(sig string) bool {
	s, ok := wire.OpenSignature(sig)
	return ok && s.Redacted
}

var partKeys = []string{"text", "thought", "thoughtSignature", "inlineData", "fileData", "functionCall",
	"functionResponse", "executableCode", "codeExecutionResult", "videoMetadata", "mediaResolution", "partMetadata"}

// parts reads the parts of content msg. A part gives at most two blocks: a
// thought_signature block before the one of its data when it carries a
// signature and is not a thought.
func (d *requestDecoder) parts(v json.RawMessage, path string, msg int, role string) ([]chat.Block, error) {
	raw, err := d.partArray(v, path)
	if err != nil {
		return nil, err
	}
	if len(raw) == 0 {
		return nil, reqjson.FailCode(chat.CodeMissingField, path, "a content needs at least one part")
	}
	blocks := make([]chat.Block, 0, len(raw))
	for j, pr := range raw {
		p := strictjson.Index(path, j)
		f, err := object(pr, p, partKeys...)
		if err != nil {
			return nil, err
		}
		for _, k := range []string{"executableCode", "codeExecutionResult", "videoMetadata", "mediaResolution", "partMetadata"} {
			if _, key, ok := f.get(k); ok {
				return nil, reqjson.Fail(strictjson.Join(p, key), "not supported: ctxkit carries text, inlineData, fileData, functionCall and functionResponse parts")
			}
		}
		var sig string
		if v, k, ok := f.get("thoughtSignature"); ok {
			if sig, err = stringOf(v, strictjson.Join(p, k)); err != nil {
				return nil, err
			}
		}
		thought := false
		if v, k, ok := f.get("thought"); ok {
			if thought, err = reqjson.Bool(v, strictjson.Join(p, k)); err != nil {
				return nil, err
			}
		}
		var data []string
		for _, k := range []string{"text", "inlineData", "fileData", "functionCall", "functionResponse"} {
			if _, key, ok := f.get(k); ok {
				data = append(data, key)
			}
		}
		if len(data) > 1 {
			return nil, reqjson.Fail(p, "a part holds one kind of data, not %s", strings.Join(data, " and "))
		}
		if thought {
			if len(data) == 1 && camel(data[0]) != "text" {
				return nil, reqjson.Fail(strictjson.Join(p, "thought"), "only a text part can be a thought")
			}
			text := ""
			if v, k, ok := f.get("text"); ok {
				if text, err = stringOf(v, strictjson.Join(p, k)); err != nil {
					return nil, err
				}
			}
			// A thought with its signature is a thinking block, one
			// without is plain reasoning: what EncodeRequest writes back
			// as the same part.
			// A thought of RedactedThought (or no text) whose signature
			// is an envelope of redacted thinking is the
			// redacted_thinking block the response wrote so
			// (ClaimSignatures sends it only to the provider that made
			// it). RedactedThought with no signature is that part come
			// back without its envelope: no model's reasoning, so none
			// for any upstream.
			switch {
			case sig != "" && (text == "" || text == RedactedThought) && sealedRedacted(sig):
				blocks = append(blocks, chat.Block{Type: chat.TypeRedactedThinking, Data: sig})
			case sig == "" && text == RedactedThought:
			case sig != "":
				blocks = append(blocks, chat.Block{Type: chat.TypeThinking, Thinking: text, Signature: sig})
			case text != "":
				blocks = append(blocks, chat.Block{Type: chat.TypeReasoning, Text: text})
			}
			continue
		}
		if sig != "" {
			// A signature on any other part rides on the part after it
			// when EncodeRequest writes the block back.
			blocks = append(blocks, chat.Block{Type: chat.TypeThoughtSignature, Signature: sig})
		}
		if len(data) == 0 {
			if sig == "" {
				return nil, reqjson.FailCode(chat.CodeMissingField, p, "a part needs text, inlineData, fileData, functionCall or functionResponse")
			}
			continue
		}
		key := data[0]
		dp := strictjson.Join(p, key)
		v := f[camel(key)].Value
		switch camel(key) {
		case "text":
			text, err := stringOf(v, dp)
			if err != nil {
				return nil, err
			}
			if text != "" {
				blocks = append(blocks, chat.Block{Type: chat.TypeText, Text: text})
			}
		case "inlineData":
			b, err := inlineData(v, dp)
			if err != nil {
				return nil, err
			}
			blocks = append(blocks, b)
		case "fileData":
			b, err := fileData(v, dp)
			if err != nil {
				return nil, err
			}
			blocks = append(blocks, b)
		case "functionCall":
			if role != chat.Assistant {
				return nil, reqjson.Fail(dp, "a functionCall belongs in a content of role model")
			}
			b, err := d.functionCall(v, dp, msg, len(blocks))
			if err != nil {
				return nil, err
			}
			blocks = append(blocks, b)
		case "functionResponse":
			if role != chat.User {
				return nil, reqjson.Fail(dp, "a functionResponse belongs in a content of role user")
			}
			b, err := d.functionResponse(v, dp, msg, len(blocks))
			if err != nil {
				return nil, err
			}
			blocks = append(blocks, b)
		}
	}
	return blocks, nil
}

var blobKeys = []string{"mimeType", "data", "displayName"}

// inlineData is an image block for an image, a document block for any
// other media type (PDF, text, audio, ...), whose converters carry or
// refuse it.
func inlineData(v json.RawMessage, path string) (chat.Block, error) {
	f, err := object(v, path, blobKeys...)
	if err != nil {
		return chat.Block{}, err
	}
	mime, data, err := mimeAnd(f, path, "data")
	if err != nil {
		return chat.Block{}, err
	}
	src := &chat.Source{Type: "base64", MediaType: mime, Data: data}
	if strings.HasPrefix(mime, "image/") {
		return chat.Block{Type: chat.TypeImage, Source: src}, nil
	}
	return chat.Block{Type: chat.TypeDocument, Source: src, Title: displayName(f)}, nil
}

var fileDataKeys = []string{"mimeType", "fileUri", "displayName"}

func fileData(v json.RawMessage, path string) (chat.Block, error) {
	f, err := object(v, path, fileDataKeys...)
	if err != nil {
		return chat.Block{}, err
	}
	uv, uk, ok := f.get("fileUri")
	if !ok {
		return chat.Block{}, reqjson.FailCode(chat.CodeMissingField, strictjson.Join(path, "fileUri"), "required")
	}
	uri, err := stringOf(uv, strictjson.Join(path, uk))
	if err != nil {
		return chat.Block{}, err
	}
	if uri == "" {
		return chat.Block{}, reqjson.FailCode(chat.CodeMissingField, strictjson.Join(path, uk), "must not be empty")
	}
	mime := ""
	if mv, mk, ok := f.get("mimeType"); ok {
		if mime, err = stringOf(mv, strictjson.Join(path, mk)); err != nil {
			return chat.Block{}, err
		}
	}
	src := &chat.Source{Type: "url", MediaType: mime, URL: uri}
	if guess := urlMimeType(src); strings.HasPrefix(guess, "image/") {
		return chat.Block{Type: chat.TypeImage, Source: src}, nil
	}
	return chat.Block{Type: chat.TypeDocument, Source: src, Title: displayName(f)}, nil
}

func displayName(f fields) string {
	v, _, ok := f.get("displayName")
	if !ok {
		return ""
	}
	var s string
	_ = json.Unmarshal(v, &s)
	return s
}

// mimeAnd reads a blob's mimeType (required) and its data field k.
func mimeAnd(f fields, path, k string) (mime, data string, err error) {
	mv, mk, ok := f.get("mimeType")
	if !ok {
		return "", "", reqjson.FailCode(chat.CodeMissingField, strictjson.Join(path, "mimeType"), "required")
	}
	if mime, err = stringOf(mv, strictjson.Join(path, mk)); err != nil {
		return "", "", err
	}
	if mime == "" {
		return "", "", reqjson.FailCode(chat.CodeMissingField, strictjson.Join(path, mk), "must not be empty")
	}
	dv, dk, ok := f.get(k)
	if !ok {
		return "", "", reqjson.FailCode(chat.CodeMissingField, strictjson.Join(path, k), "required")
	}
	if data, err = stringOf(dv, strictjson.Join(path, dk)); err != nil {
		return "", "", err
	}
	return mime, data, nil
}

var functionCallKeys = []string{"id", "name", "args", "partialArgs", "willContinue"}

func (d *requestDecoder) functionCall(v json.RawMessage, path string, msg, blk int) (chat.Block, error) {
	f, err := object(v, path, functionCallKeys...)
	if err != nil {
		return chat.Block{}, err
	}
	for _, k := range []string{"partialArgs", "willContinue"} {
		if _, key, ok := f.get(k); ok {
			return chat.Block{}, reqjson.Fail(strictjson.Join(path, key), "not supported: ctxkit takes whole function calls")
		}
	}
	name, err := requiredString(f, path, "name")
	if err != nil {
		return chat.Block{}, err
	}
	args := json.RawMessage("{}")
	if av, ak, ok := f.get("args"); ok {
		if args, err = compactObject(av, strictjson.Join(path, ak)); err != nil {
			return chat.Block{}, err
		}
	}
	b := chat.Block{Type: chat.TypeToolUse, Name: name, Input: args}
	if iv, ik, ok := f.get("id"); ok {
		if b.ID, err = stringOf(iv, strictjson.Join(path, ik)); err != nil {
			return chat.Block{}, err
		}
	}
	d.calls = append(d.calls, call{msg: msg, blk: blk, id: b.ID, name: name, args: string(args)})
	if b.ID != "" {
		d.knownID(b.ID)
	}
	return b, nil
}

var functionResponseKeys = []string{"id", "name", "response", "parts", "willContinue", "scheduling"}

// functionResponse is a tool_result: response {"output": text} gives the
// text, {"error": text} the text with is_error (what EncodeRequest
// writes), any other object its JSON as text; the response's parts follow
// as image or document blocks.
func (d *requestDecoder) functionResponse(v json.RawMessage, path string, msg, blk int) (chat.Block, error) {
	f, err := object(v, path, functionResponseKeys...)
	if err != nil {
		return chat.Block{}, err
	}
	for _, k := range []string{"willContinue", "scheduling"} {
		if _, key, ok := f.get(k); ok {
			return chat.Block{}, reqjson.Fail(strictjson.Join(path, key), "not supported: ctxkit takes whole, blocking function responses")
		}
	}
	name, err := requiredString(f, path, "name")
	if err != nil {
		return chat.Block{}, err
	}
	b := chat.Block{Type: chat.TypeToolResult}
	text := "{}"
	if rv, rk, ok := f.get("response"); ok {
		resp, err := compactObject(rv, strictjson.Join(path, rk))
		if err != nil {
			return chat.Block{}, err
		}
		text = string(resp)
		var one map[string]json.RawMessage
		if json.Unmarshal(resp, &one) == nil && len(one) == 1 {
			for k, val := range one {
				var s string
				if (k == "output" || k == "error") && json.Unmarshal(val, &s) == nil {
					text, b.IsError = s, k == "error"
				}
			}
		}
	}
	content := chat.Str(text)
	if pv, pk, ok := f.get("parts"); ok {
		pp := strictjson.Join(path, pk)
		raw, err := d.partArray(pv, pp)
		if err != nil {
			return chat.Block{}, err
		}
		blocks := make([]chat.Block, 0, len(raw)+1)
		if text != "" {
			blocks = append(blocks, chat.Block{Type: chat.TypeText, Text: text})
		}
		for i, r := range raw {
			ip := strictjson.Index(pp, i)
			rf, err := object(r, ip, "inlineData", "fileData")
			if err != nil {
				return chat.Block{}, err
			}
			var mb chat.Block
			switch {
			case len(rf) != 1:
				return chat.Block{}, reqjson.Fail(ip, "a function response part holds one of inlineData and fileData")
			case rf["inlineData"].Key != "":
				mb, err = inlineData(rf["inlineData"].Value, strictjson.Join(ip, rf["inlineData"].Key))
			default:
				mb, err = fileData(rf["fileData"].Value, strictjson.Join(ip, rf["fileData"].Key))
			}
			if err != nil {
				return chat.Block{}, err
			}
			blocks = append(blocks, mb)
		}
		content = chat.Of(blocks...)
	}
	b.Content = &content
	if iv, ik, ok := f.get("id"); ok {
		if b.ToolUseID, err = stringOf(iv, strictjson.Join(path, ik)); err != nil {
			return chat.Block{}, err
		}
	}
	if b.ToolUseID != "" {
		d.knownID(b.ToolUseID)
		for i := range d.calls {
			c := &d.calls[i]
			if !c.answered && c.id == b.ToolUseID {
				c.answered = true
				break
			}
		}
		return b, nil
	}
	// Gemini matches a response to its call by name and order: the first
	// unanswered call of that name, else the first unanswered call.
	k := slices.IndexFunc(d.calls, func(c call) bool { return !c.answered && c.name == name })
	if k < 0 {
		k = slices.IndexFunc(d.calls, func(c call) bool { return !c.answered })
	}
	if k < 0 {
		// A response to no call the request holds (its call was trimmed
		// from the history): it gets an id of its own, and each
		// converter carries it as it carries any unmatched result.
		d.calls = append(d.calls, call{msg: -1, name: name, args: text, answered: true})
		k = len(d.calls) - 1
	}
	d.calls[k].answered = true
	d.calls[k].results = append(d.calls[k].results, [2]int{msg, blk})
	return b, nil
}

func (d *requestDecoder) knownID(id string) {
	if d.ids == nil {
		d.ids = map[string]bool{}
	}
	d.ids[id] = true
}

// pairIDs gives each call without an id one made from its place and
// content, as DecodeStream names the calls of a Gemini stream (unique in
// the request, and the same for the same history every time), and gives
// the results paired to a call its id.
func (d *requestDecoder) pairIDs() {
	for n := range d.calls {
		c := &d.calls[n]
		id := c.id
		if id == "" {
			id = callID(n, c.name, c.args)
			for d.ids[id] {
				id += "x"
			}
			d.knownID(id)
			if c.msg >= 0 {
				d.r.Messages[c.msg].Content.Blocks[c.blk].ID = id
			}
		}
		for _, r := range c.results {
			d.r.Messages[r[0]].Content.Blocks[r[1]].ToolUseID = id
		}
	}
}

func requiredString(f fields, path, k string) (string, error) {
	v, key, ok := f.get(k)
	if !ok {
		return "", reqjson.FailCode(chat.CodeMissingField, strictjson.Join(path, k), "required")
	}
	s, err := stringOf(v, strictjson.Join(path, key))
	if err != nil {
		return "", err
	}
	if s == "" {
		return "", reqjson.FailCode(chat.CodeMissingField, strictjson.Join(path, key), "must not be empty")
	}
	return s, nil
}

// system reads systemInstruction: a content of text parts (its role, if
// any, is ignored, as the API does). One part is a string prompt; more
// are text blocks.
func (d *requestDecoder) system(v json.RawMessage, path string) error {
	f, err := object(v, path, contentKeys...)
	if err != nil {
		return err
	}
	pv, pk, ok := f.get("parts")
	if !ok {
		return nil
	}
	pp := strictjson.Join(path, pk)
	raw, err := d.partArray(pv, pp)
	if err != nil {
		return err
	}
	var blocks []chat.Block
	for j, r := range raw {
		p := strictjson.Index(pp, j)
		pf, err := object(r, p, partKeys...)
		if err != nil {
			return err
		}
		tv, tk, ok := pf.get("text")
		if !ok || len(pf) != 1 {
			return reqjson.Fail(p, "the system instruction takes text parts only")
		}
		text, err := stringOf(tv, strictjson.Join(p, tk))
		if err != nil {
			return err
		}
		if text != "" {
			blocks = append(blocks, chat.Block{Type: chat.TypeText, Text: text})
		}
	}
	switch len(blocks) {
	case 0:
	case 1:
		s := chat.Str(blocks[0].Text)
		d.r.System = &s
	default:
		c := chat.Of(blocks...)
		d.r.System = &c
	}
	return nil
}

var toolKeys = []string{"functionDeclarations", "googleSearch", "googleSearchRetrieval", "codeExecution",
	"urlContext", "fileSearch", "computerUse", "googleMaps", "enterpriseWebSearch", "retrieval", "mcpServers"}

var declarationKeys = []string{"name", "description", "parameters", "parametersJsonSchema", "response",
	"responseJsonSchema", "behavior"}

func (d *requestDecoder) toolList(v json.RawMessage, path string) error {
	raw, err := array(v, path, chat.MaxTools, "tools")
	if err != nil {
		return err
	}
	for i, r := range raw {
		p := strictjson.Index(path, i)
		f, err := object(r, p, toolKeys...)
		if err != nil {
			return err
		}
		for k, m := range f {
			if k != "functionDeclarations" && !isNull(m.Value) {
				return reqjson.Fail(strictjson.Join(p, m.Key), "a tool Gemini runs itself: ctxkit carries functionDeclarations only")
			}
		}
		dv, dk, ok := f.get("functionDeclarations")
		if !ok {
			continue
		}
		dp := strictjson.Join(p, dk)
		decls, err := array(dv, dp, chat.MaxTools-d.tools, "function declarations")
		if err != nil {
			return err
		}
		d.tools += len(decls)
		for j, dr := range decls {
			t, err := declaration(dr, strictjson.Index(dp, j))
			if err != nil {
				return err
			}
			d.r.Tools = append(d.r.Tools, t)
		}
	}
	return nil
}

func declaration(v json.RawMessage, path string) (chat.Tool, error) {
	f, err := object(v, path, declarationKeys...)
	if err != nil {
		return chat.Tool{}, err
	}
	for _, k := range []string{"response", "responseJsonSchema", "behavior"} {
		if _, key, ok := f.get(k); ok {
			return chat.Tool{}, reqjson.Fail(strictjson.Join(path, key), "not supported: no other provider takes it")
		}
	}
	name, err := requiredString(f, path, "name")
	if err != nil {
		return chat.Tool{}, err
	}
	t := chat.Tool{Name: name}
	if v, k, ok := f.get("description"); ok {
		if t.Description, err = stringOf(v, strictjson.Join(path, k)); err != nil {
			return chat.Tool{}, err
		}
	}
	pv, pk, hasOpenAPI := f.get("parameters")
	jv, jk, hasJSON := f.get("parametersJsonSchema")
	switch {
	case hasOpenAPI && hasJSON:
		return chat.Tool{}, reqjson.Fail(strictjson.Join(path, jk), "parameters and parametersJsonSchema exclude each other")
	case hasOpenAPI:
		if t.InputSchema, err = jsonSchemaOf(pv, strictjson.Join(path, pk)); err != nil {
			return chat.Tool{}, err
		}
	case hasJSON:
		if t.InputSchema, err = compactObject(jv, strictjson.Join(path, jk)); err != nil {
			return chat.Tool{}, err
		}
	default:
		t.InputSchema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return t, nil
}

var functionCallingKeys = []string{"mode", "allowedFunctionNames", "streamFunctionCallArguments"}

// toolConfig reads functionCallingConfig: AUTO → auto, VALIDATED → auto
// (calls are checked against their schema by the Gemini API; other
// providers take auto), NONE → none, ANY → any, or tool when
// allowedFunctionNames names one function. ANY limited to some of several
// functions has no canonical form and is refused.
func (d *requestDecoder) toolConfig(v json.RawMessage, path string) error {
	f, err := object(v, path, "functionCallingConfig", "retrievalConfig", "includeServerSideToolInvocations")
	if err != nil {
		return err
	}
	for _, k := range []string{"retrievalConfig", "includeServerSideToolInvocations"} {
		if _, key, ok := f.get(k); ok {
			return reqjson.Fail(strictjson.Join(path, key), "not supported: it configures tools Gemini runs itself")
		}
	}
	cv, ck, ok := f.get("functionCallingConfig")
	if !ok {
		return nil
	}
	cp := strictjson.Join(path, ck)
	cf, err := object(cv, cp, functionCallingKeys...)
	if err != nil {
		return err
	}
	if _, key, ok := cf.get("streamFunctionCallArguments"); ok {
		return reqjson.Fail(strictjson.Join(cp, key), "not supported: ctxkit streams whole function calls")
	}
	mode := "AUTO"
	if mv, mk, ok := cf.get("mode"); ok {
		if mode, err = stringOf(mv, strictjson.Join(cp, mk)); err != nil {
			return err
		}
	}
	var names []string
	np := strictjson.Join(cp, "allowedFunctionNames")
	if nv, nk, ok := cf.get("allowedFunctionNames"); ok {
		np = strictjson.Join(cp, nk)
		raw, err := array(nv, np, chat.MaxTools, "names")
		if err != nil {
			return err
		}
		for i, r := range raw {
			s, err := stringOf(r, strictjson.Index(np, i))
			if err != nil {
				return err
			}
			if !slices.ContainsFunc(d.r.Tools, func(t chat.Tool) bool { return t.Name == s }) {
				return reqjson.Fail(strictjson.Index(np, i), "%q is not a declared function", s)
			}
			names = append(names, s)
		}
	}
	switch mode {
	case "MODE_UNSPECIFIED", "AUTO", "VALIDATED":
		if len(names) > 0 {
			return reqjson.Fail(np, "allowed only with mode ANY in ctxkit: other providers cannot limit an automatic choice")
		}
		if mode != "MODE_UNSPECIFIED" {
			d.r.ToolChoice = &chat.ToolChoice{Type: "auto"}
		}
	case "NONE":
		if len(names) > 0 {
			return reqjson.Fail(np, "not allowed with mode NONE")
		}
		d.r.ToolChoice = &chat.ToolChoice{Type: "none"}
	case "ANY":
		slices.Sort(names)
		names = slices.Compact(names)
		switch {
		case len(names) == 1:
			d.r.ToolChoice = &chat.ToolChoice{Type: "tool", Name: names[0]}
		case len(names) == 0 || len(names) == len(d.r.Tools):
			d.r.ToolChoice = &chat.ToolChoice{Type: "any"}
		default:
			return reqjson.Fail(np, "ctxkit can force one function or any of them, not a choice among %d of %d", len(names), len(d.r.Tools))
		}
	default:
		return reqjson.Fail(strictjson.Join(cp, "mode"), "%q is not AUTO, ANY, NONE or VALIDATED", mode)
	}
	return nil
}

var generationKeys = []string{"temperature", "topP", "topK", "candidateCount", "maxOutputTokens", "stopSequences",
	"seed", "presencePenalty", "frequencyPenalty", "responseMimeType", "responseSchema", "responseJsonSchema",
	"responseLogprobs", "logprobs", "responseModalities", "mediaResolution", "speechConfig", "audioTimestamp",
	"thinkingConfig", "imageConfig", "routingConfig", "modelSelectionConfig", "enableEnhancedCivicAnswers",
	"enableAffectiveDialog"}

func (d *requestDecoder) generationConfig(v json.RawMessage, path string) error {
	f, err := object(v, path, generationKeys...)
	if err != nil {
		return err
	}
	at := func(k string) string { return strictjson.Join(path, f[k].Key) }
	for _, k := range []string{"mediaResolution", "speechConfig", "audioTimestamp", "imageConfig", "routingConfig",
		"modelSelectionConfig", "enableEnhancedCivicAnswers", "enableAffectiveDialog"} {
		if _, _, ok := f.get(k); ok {
			return reqjson.Fail(at(k), "not supported: ctxkit answers with text and function calls only")
		}
	}
	if v, _, ok := f.get("maxOutputTokens"); ok {
		n, err := intOf(v, at("maxOutputTokens"), 1)
		if err != nil {
			return err
		}
		d.r.MaxTokens = int(n)
	}
	if v, _, ok := f.get("temperature"); ok {
		if d.r.Temperature, err = reqjson.Float(v, at("temperature")); err != nil {
			return err
		}
	}
	if v, _, ok := f.get("topP"); ok {
		if d.r.TopP, err = reqjson.Float(v, at("topP")); err != nil {
			return err
		}
	}
	// Parameters some providers take are kept under the names the
	// converters know them by.
	if v, _, ok := f.get("topK"); ok {
		n, err := intOf(v, at("topK"), 1)
		if err != nil {
			return err
		}
		d.extra("top_k", json.RawMessage(strconv.FormatInt(n, 10)))
	}
	if v, _, ok := f.get("seed"); ok {
		n, err := intOf(v, at("seed"), math.MinInt32)
		if err != nil {
			return err
		}
		d.extra("seed", json.RawMessage(strconv.FormatInt(n, 10)))
	}
	for k, name := range map[string]string{"presencePenalty": "presence_penalty", "frequencyPenalty": "frequency_penalty"} {
		if v, _, ok := f.get(k); ok {
			x, err := reqjson.Float(v, at(k))
			if err != nil {
				return err
			}
			d.extra(name, json.RawMessage(strconv.FormatFloat(*x, 'g', -1, 64)))
		}
	}
	if v, _, ok := f.get("candidateCount"); ok {
		n, err := intOf(v, at("candidateCount"), 1)
		if err != nil {
			return err
		}
		if n > 1 {
			return reqjson.Fail(at("candidateCount"), "ctxkit answers with one candidate; %d were asked for", n)
		}
	}
	if v, _, ok := f.get("stopSequences"); ok {
		raw, err := array(v, at("stopSequences"), chat.MaxStopSequences, "stop sequences")
		if err != nil {
			return err
		}
		for i, r := range raw {
			s, err := stringOf(r, strictjson.Index(at("stopSequences"), i))
			if err != nil {
				return err
			}
			d.r.StopSequences = append(d.r.StopSequences, s)
		}
	}
	if v, _, ok := f.get("responseLogprobs"); ok {
		on, err := reqjson.Bool(v, at("responseLogprobs"))
		if err != nil {
			return err
		}
		if on {
			return reqjson.Fail(at("responseLogprobs"), "not supported: ctxkit's Gemini responses carry no log probabilities")
		}
	}
	if _, _, ok := f.get("logprobs"); ok {
		return reqjson.Fail(at("logprobs"), "not supported: ctxkit's Gemini responses carry no log probabilities")
	}
	if v, _, ok := f.get("responseModalities"); ok {
		raw, err := array(v, at("responseModalities"), 8, "modalities")
		if err != nil {
			return err
		}
		for i, r := range raw {
			s, err := stringOf(r, strictjson.Index(at("responseModalities"), i))
			if err != nil {
				return err
			}
			if s != "TEXT" {
				return reqjson.Fail(strictjson.Index(at("responseModalities"), i), "ctxkit answers with TEXT only, not %s", s)
			}
		}
	}
	if err := d.format(f, at); err != nil {
		return err
	}
	if v, _, ok := f.get("thinkingConfig"); ok {
		return d.thinking(v, at("thinkingConfig"))
	}
	return nil
}

// format reads structured output: responseMimeType application/json with
// responseJsonSchema (as it is) or responseSchema (converted to JSON
// Schema) is a json_schema format, without either a json_object one.
func (d *requestDecoder) format(f fields, at func(string) string) error {
	mime := ""
	if v, _, ok := f.get("responseMimeType"); ok {
		var err error
		if mime, err = stringOf(v, at("responseMimeType")); err != nil {
			return err
		}
	}
	sv, _, hasSchema := f.get("responseSchema")
	jv, _, hasJSON := f.get("responseJsonSchema")
	switch mime {
	case "application/json":
	case "", "text/plain":
		if hasSchema || hasJSON {
			k := "responseSchema"
			if hasJSON {
				k = "responseJsonSchema"
			}
			return reqjson.Fail(at(k), "needs responseMimeType application/json")
		}
		return nil
	default:
		return reqjson.Fail(at("responseMimeType"), "ctxkit answers with text/plain or application/json, not %q", mime)
	}
	out := &chat.OutputFormat{Type: "json_object"}
	var err error
	switch {
	case hasSchema && hasJSON:
		return reqjson.Fail(at("responseJsonSchema"), "responseSchema and responseJsonSchema exclude each other")
	case hasSchema:
		out.Schema, err = jsonSchemaOf(sv, at("responseSchema"))
	case hasJSON:
		out.Schema, err = compactObject(jv, at("responseJsonSchema"))
	}
	if err != nil {
		return err
	}
	if out.Schema != nil {
		out.Type, out.Name = "json_schema", "response"
	}
	d.r.Format = out
	return nil
}

// thinking reads thinkingConfig: thinkingBudget 0 → thinking disabled, N
// > 0 → enabled with budget N, -1 (the model decides) → reasoning effort
// medium; thinkingLevel MINIMAL, LOW, MEDIUM, HIGH → that effort.
// includeThoughts has no canonical form: thoughts the upstream returns
// are always given back as thought parts.
func (d *requestDecoder) thinking(v json.RawMessage, path string) error {
	f, err := object(v, path, "includeThoughts", "thinkingBudget", "thinkingLevel")
	if err != nil {
		return err
	}
	if iv, ik, ok := f.get("includeThoughts"); ok {
		if _, err := reqjson.Bool(iv, strictjson.Join(path, ik)); err != nil {
			return err
		}
	}
	bv, bk, hasBudget := f.get("thinkingBudget")
	lv, lk, hasLevel := f.get("thinkingLevel")
	if hasBudget && hasLevel {
		return reqjson.Fail(strictjson.Join(path, lk), "thinkingBudget and thinkingLevel exclude each other")
	}
	if hasBudget {
		n, err := intOf(bv, strictjson.Join(path, bk), -1)
		if err != nil {
			return err
		}
		switch {
		case n == 0:
			d.r.Thinking = &chat.Thinking{Type: "disabled"}
		case n < 0:
			d.r.ReasoningEffort = "medium"
		default:
			d.r.Thinking = &chat.Thinking{Type: "enabled", BudgetTokens: int(n)}
		}
	}
	if hasLevel {
		s, err := stringOf(lv, strictjson.Join(path, lk))
		if err != nil {
			return err
		}
		switch s {
		case "MINIMAL", "LOW", "MEDIUM", "HIGH":
			d.r.ReasoningEffort = strings.ToLower(s)
		case "THINKING_LEVEL_UNSPECIFIED":
		default:
			return reqjson.Fail(strictjson.Join(path, lk), "%q is not MINIMAL, LOW, MEDIUM or HIGH", s)
		}
	}
	return nil
}
