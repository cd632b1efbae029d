// Package gemini converts a canonical conversation (package chat) to the
// body of a Gemini generateContent request, with the lowerCamelCase field
// names of the REST API. EncodeRequest never changes its input, gives equal
// output for equal input, shares no mutable memory with its input, and
// returns a warning naming the place (messages[2].content[1]) for whatever
// it cannot carry as it is. It returns an error only for a request Gemini
// cannot take at all: one without a single part to send.
//
// The other way round, Dialect is the row of the gateway's client dialect
// for Google's SDKs: it reads generateContent request bodies into the
// canonical request and answers in Gemini's response, stream and error
// shapes.
//
// # Request
//
//	model, stream    Request.Model and Request.Stream: not in the body; they
//	                 choose the endpoint (Request.Path)
//	system           systemInstruction {"parts":[{"text"},...]}: one part per
//	                 non-empty text block; omitted when there is no text
//	messages         contents[]: role user → "user", assistant → "model"
//	tools            tools [{"functionDeclarations":[...]}] (see Tools)
//	tool_choice      toolConfig.functionCallingConfig (see Tool choice)
//	parameters       generationConfig (see Parameters)
//	metadata         not sent (warning "metadata"): Gemini has no such field
//	top_k            generationConfig.topK when it is an integer
//	seed             generationConfig.seed when it is an integer
//	presence_penalty generationConfig.presencePenalty, frequency_penalty
//	                 frequencyPenalty, when they are numbers
//	format           generationConfig.responseMimeType "application/json";
//	                 a json_schema format's schema as responseJsonSchema
//	                 (Options.Schema "openapi": converted to responseSchema,
//	                 as tool schemas are)
//	safetySettings,  carried as they came (a Gemini client's fields)
//	cachedContent,
//	labels,
//	serviceTier
//	other fields     not sent (warning naming the field)
//
// # Turns
//
// Consecutive messages of the same role are merged into one content, their
// parts in order, so turns alternate as Gemini expects. A message that
// yields no part (empty content, only empty text, only blocks that cannot
// be carried) is omitted with a warning naming it. A message's
// reasoning_details (OpenRouter's, which wire.ClaimSignatures makes
// blocks before any encoder) are not sent, with a warning at
// messages[i].reasoning_details; other unmodelled message fields
// likewise, at messages[i].<field>.
//
// # Blocks
//
//	text               {"text"}; an empty text is left out (it carries
//	                   nothing and Gemini refuses empty text parts)
//	image, base64      {"inlineData":{"mimeType","data"}}
//	image, url         {"fileData":{"mimeType","fileUri"}}; mimeType is the
//	                   media_type, else guessed from the URL's extension
//	                   (png, jpg, jpeg, gif, webp, heic, heif, pdf), else
//	                   left out
//	image, other       the text stub of chat.ImageStub, with a warning
//	document           base64: inlineData (mimeType the media_type, else
//	                   application/pdf); url: fileData as for images; text:
//	                   a text part with the document's text; other sources:
//	                   the text stub of chat.DocumentStub, with a warning. A title or context comes first, as a
//	                   text part "Document title: …" / "Document context: …"
//	tool_use           {"functionCall":{"name","args"}}
//	tool_result        {"functionResponse":{"name","response"}} (see Tool
//	                   results)
//	thinking           {"text":thinking,"thought":true,"thoughtSignature":
//	                   signature}; with no text, its signature rides on a
//	                   neighbouring part like a thought_signature block;
//	                   left out when both are empty
//	reasoning          {"text":text,"thought":true}; left out when empty
//	thought_signature  its signature rides on a neighbouring part (see
//	                   Thought signatures)
//	redacted_thinking  not sent (warning): Gemini has no encrypted thoughts
//	other types        not sent (warning)
//
// A signature ctxkit sealed (wire.SealSignature) is opened: Gemini's own
// goes out as Gemini made it; another provider's, which Gemini would
// refuse, becomes SignaturePlaceholder, with a warning naming the
// provider.
//
// cache_control, on blocks and tools alike, is dropped without a warning:
// Gemini caches implicitly, or through cachedContents objects created apart
// from the request, and no content is lost. Citations on a text block or a
// document, and unmodelled fields of known blocks, cannot be carried: not
// sent, with a warning.
//
// # Tool results
//
// A tool_result becomes a functionResponse whose name is that of the
// tool_use with the same id earlier in the conversation. Its response is
// {"output": text}, or {"error": text} when is_error is set, where text is
// the result's non-empty text blocks joined with "\n" ("" when there are
// none); text that holds JSON is still sent as a string. Images and
// documents in a result become parts of the same turn after the
// functionResponse parts: a run of tool_result blocks (blocks that give no
// part, such as a thought_signature or an empty text, do not break it)
// gives first the functionResponse of each, then the media of each in
// order, so the responses stay together. Other blocks inside a result are not sent
// (warning naming them).
//
// A tool_result whose id matches no earlier tool_use (its call was trimmed
// from the history, say) cannot be a functionResponse, since Gemini needs
// the function's name: it is sent as a text part "[Result of tool call
// <id>]" ("[Error from tool call <id>]" when is_error), a newline and its
// text, placed with the media after the run, with a warning.
//
// # Thought signatures
//
// A thought_signature block's signature goes on the next part produced
// from the same message that has no signature yet; when there is none, on
// the nearest preceding part without one; when there is neither, on an
// empty text part {"text":"","thoughtSignature":…}. So [thought_signature,
// tool_use] and [tool_use, thought_signature] both sign the functionCall,
// where Gemini wants the signature. A thinking block keeps its own
// signature on its thought part; a thinking block with a signature and no
// text (what a Gemini stream gives for a signed functionCall or answer) is
// placed like a thought_signature block.
//
// Gemini 3 refuses a request whose current turn has a step (a model
// content) whose first functionCall part has no signature, which is what
// history from another model gives. For every model but Gemini 1.x, 2.x
// and Gemma, such a part gets SignaturePlaceholder, the value Google
// documents for this case; real signatures are kept. The current turn
// begins after the last user content holding anything but function
// responses.
//
// # Tools
//
// A custom tool (type empty or "custom") becomes a function declaration
// {name, description, schema}. By default the input_schema is passed
// through verbatim as parametersJsonSchema, which takes JSON Schema. With
// Options.Schema "openapi" it is converted to parameters, Gemini's OpenAPI
// 3.0 subset: the keywords type (upper-cased; a type list becomes the one
// non-null type plus nullable, or anyOf), format, title, description,
// nullable, enum, required, properties, items, anyOf (oneOf is sent as
// anyOf), minItems, maxItems, minProperties, maxProperties, minLength,
// maxLength, pattern, minimum, maximum, example, default and
// propertyOrdering are kept, a string const becomes a one-value enum (of
// type STRING when no type is given), and every other keyword ($ref,
// $defs, allOf, additionalProperties, ...) is dropped with one warning per
// tool listing them; a top-level object schema without properties is sent
// as no parameters. Provider-defined
// tools (web_search_…, bash_…) have no Gemini equivalent: not sent
// (warning tools[i]). Unmodelled tool fields: not sent (warning).
//
// # Tool choice
//
// auto → mode AUTO; any → ANY; tool → ANY with allowedFunctionNames
// [name]; none → NONE. toolConfig is sent only when there are function
// declarations; an any or tool choice without them is not sent (warning).
// disable_parallel_tool_use has no Gemini switch: ignored (warning).
//
// # Parameters
//
// Resolved with chat.ResolveParams for chat.FormatGemini (its warnings are
// returned): maxOutputTokens (8192 when not given), temperature, topP and
// stopSequences (Gemini takes at most 5: the rest are not sent, with a
// warning). With reasoning, thinkingConfig is {"thinkingBudget": budget,
// "includeThoughts": true}; with Options.ThinkingLevel it is
// {"thinkingLevel": MINIMAL, LOW, MEDIUM or HIGH (the effort), ...}
// instead, for Gemini 3. Thinking of type disabled is {"thinkingBudget":0}
// ({"thinkingLevel":"MINIMAL"} with ThinkingLevel: the least Gemini 3
// thinks). Options.IncludeThoughts, when set, overrides includeThoughts;
// set to true without reasoning it sends {"includeThoughts":true} alone.
package gemini

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
)

// Options tune the conversion; the zero value is the default.
type Options struct {
	// Schema is how tool input schemas are sent: "json_schema" (the
	// default) as parametersJsonSchema, verbatim; "openapi" as parameters,
	// converted to Gemini's OpenAPI subset.
	Schema string `json:"schema,omitempty"`
	// CallIDs sends each tool_use id as functionCall.id and the matching
	// functionResponse.id (optional fields of the API); by default ids are
	// only used to find a result's function name.
	CallIDs bool `json:"call_ids,omitempty"`
	// ThinkingLevel sends the reasoning effort as thinkingConfig.thinkingLevel
	// (Gemini 3) instead of a thinkingBudget.
	ThinkingLevel bool `json:"thinking_level,omitempty"`
	// IncludeThoughts, when set, is thinkingConfig.includeThoughts (by
	// default true when the request asks for reasoning).
	IncludeThoughts *bool `json:"include_thoughts,omitempty"`
}

// Schema options.
const (
	SchemaJSON    = "json_schema"
	SchemaOpenAPI = "openapi"
)

// MaxStopSequences is how many stop sequences Gemini takes.
const MaxStopSequences = 5

// Roles of contents[].
const (
	RoleUser  = "user"
	RoleModel = "model"
)

// EncodeRequest converts req to a Gemini request. See the package
// documentation for the mapping and every fallback.
func EncodeRequest(req chat.Request, opts Options) (*Request, []chat.Warning, error) {
	switch opts.Schema {
	case "", SchemaJSON, SchemaOpenAPI:
	default:
		return nil, nil, &chat.Error{Path: "options.schema", Msg: strconv.Quote(opts.Schema) + " is not json_schema or openapi"}
	}
	e := &encoder{opts: opts}
	out := &Request{Model: req.Model, Stream: req.Stream}
	if req.System != nil {
		out.SystemInstruction = e.system(req.System)
	}
	out.Contents = e.messages(req.Messages)
	if len(out.Contents) == 0 {
		return nil, e.warns, &chat.Error{Path: "messages", Msg: "no message has content Gemini can carry, and a request needs at least one"}
	}
	if signatureRequired(req.Model) {
		signCalls(out.Contents)
	}
	e.tools(out, req.Tools)
	e.toolChoice(out, req.ToolChoice)
	e.params(out, req)
	if len(req.Metadata) > 0 {
		e.warn("metadata", "Gemini requests have no metadata: not sent")
	}
	for _, k := range chat.SortedKeys(req.Extra) {
		e.extra(out, k, req.Extra[k])
	}
	return out, e.warns, nil
}

// extra maps or carries the field k of the request's Extra, or names it
// in a warning.
func (e *encoder) extra(out *Request, k string, v json.RawMessage) {
	gc := out.GenerationConfig
	text := strings.TrimSpace(string(v))
	switch k {
	case "top_k", "seed":
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			e.warn(k, "not an integer: not sent")
			return
		}
		if k == "top_k" {
			gc.TopK = &n
		} else {
			gc.Seed = &n
		}
		return
	case "presence_penalty", "frequency_penalty":
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			e.warn(k, "not a number: not sent")
			return
		}
		if k == "presence_penalty" {
			gc.PresencePenalty = &f
		} else {
			gc.FrequencyPenalty = &f
		}
		return
	}
	if wire.Carries("gemini", k) {
		switch k {
		case "safetySettings":
			out.SafetySettings = chat.CloneRaw(v)
			return
		case "cachedContent":
			out.CachedContent = chat.CloneRaw(v)
			return
		case "labels":
			out.Labels = chat.CloneRaw(v)
			return
		case "serviceTier":
			out.ServiceTier = chat.CloneRaw(v)
			return
		}
	}
	e.warn(k, "a field Gemini does not take: not sent")
}

// format asks for structured output: responseMimeType application/json,
// and a json_schema format's schema as responseJsonSchema (or, with
// Options.Schema "openapi", converted to responseSchema).
func (e *encoder) format(gc *GenerationConfig, f *chat.OutputFormat) {
	if f == nil {
		return
	}
	gc.ResponseMimeType = "application/json"
	if f.Type != "json_schema" || len(f.Schema) == 0 {
		return
	}
	if e.opts.Schema == SchemaOpenAPI {
		gc.ResponseSchema = e.openAPISchema(f.Schema, "output_config.format.schema")
		return
	}
	gc.ResponseJSONSchema = chat.CloneRaw(f.Schema)
}

type encoder struct {
	opts  Options
	warns []chat.Warning
	names map[string]string // tool_use id → name, as the messages go
}

func (e *encoder) warn(path, format string, args ...any) {
	e.warns = append(e.warns, chat.Warnf(path, format, args...))
}

func (e *encoder) system(c *chat.Content) *Content {
	var parts []Part
	if c.IsString {
		if c.Text != "" {
			parts = []Part{{Text: c.Text}}
		}
	} else {
		for j := range c.Blocks {
			b := &c.Blocks[j]
			path := "system[" + strconv.Itoa(j) + "]"
			if b.Type != chat.TypeText {
				e.warn(path, "the system instruction takes text, not a %s block: not sent", b.Type)
				continue
			}
			if b.Text != "" {
				parts = append(parts, Part{Text: b.Text})
			}
			e.blockFields(b, path)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return &Content{Parts: parts}
}

func (e *encoder) messages(msgs []chat.Message) []Content {
	contents := make([]Content, 0, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		role := RoleUser
		if m.Role == chat.Assistant {
			role = RoleModel
		}
		parts := e.message(i, m)
		if len(m.ReasoningDetails) > 0 {
			e.warn(chat.MessagePath(i)+".reasoning_details", "Gemini cannot carry reasoning_details: not sent")
		}
		for _, k := range chat.SortedKeys(m.Extra) {
			e.warn(chat.MessagePath(i)+"."+k, "a message field Gemini does not take: not sent")
		}
		if len(parts) == 0 {
			e.warn(chat.MessagePath(i), "no content Gemini can carry: the message is omitted")
			continue
		}
		if n := len(contents); n > 0 && contents[n-1].Role == role {
			contents[n-1].Parts = append(contents[n-1].Parts, parts...)
			continue
		}
		contents = append(contents, Content{Role: role, Parts: parts})
	}
	return contents
}

// parts collects a message's parts, holds back the media of a run of tool
// results until a part of another kind comes (or the message ends), and
// places pending thought signatures.
type parts struct {
	list    []Part
	pending []string
	after   []Part // media (and fallbacks) of the current run of tool results
}

// add adds a part that is not a functionResponse: the run of tool results,
// if any, ends before it.
func (p *parts) add(part Part) {
	p.flush()
	p.put(part)
}

func (p *parts) flush() {
	for _, a := range p.after {
		p.put(a)
	}
	p.after = p.after[:0]
}

func (p *parts) put(part Part) {
	if len(p.pending) > 0 && part.ThoughtSignature == "" {
		part.ThoughtSignature = p.pending[0]
		p.pending = p.pending[1:]
	}
	p.list = append(p.list, part)
}

// finish places the signatures no later part took: on the nearest
// preceding part without one, else on an empty text part.
func (p *parts) finish() []Part {
	p.flush()
	for _, sig := range p.pending {
		placed := false
		for k := len(p.list) - 1; k >= 0; k-- {
			if p.list[k].ThoughtSignature == "" {
				p.list[k].ThoughtSignature = sig
				placed = true
				break
			}
		}
		if !placed {
			p.list = append(p.list, Part{ThoughtSignature: sig})
		}
	}
	p.pending = nil
	return p.list
}

func (e *encoder) message(i int, m *chat.Message) []Part {
	if m.Content.IsString {
		if m.Content.Text == "" {
			return nil
		}
		return []Part{{Text: m.Content.Text}}
	}
	blocks := m.Content.Blocks
	ps := parts{list: make([]Part, 0, len(blocks))}
	for j := range blocks {
		b := &blocks[j]
		path := chat.BlockPath(i, j)
		switch b.Type {
		case chat.TypeText:
			if b.Text != "" {
				ps.add(Part{Text: b.Text})
			}
		case chat.TypeImage:
			ps.add(e.image(b, path))
		case chat.TypeDocument:
			for _, p := range e.document(b, path) {
				ps.add(p)
			}
		case chat.TypeToolUse:
			if e.names == nil {
				e.names = map[string]string{}
			}
			e.names[b.ID] = b.Name
			call := &FunctionCall{Name: b.Name, Args: chat.CloneRaw(b.Input)}
			if e.opts.CallIDs {
				call.ID = b.ID
			}
			ps.add(Part{FunctionCall: call})
		case chat.TypeToolResult:
			e.toolResult(&ps, b, path)
		case chat.TypeThinking:
			sig := e.signature(b.Signature, path)
			switch {
			case b.Thinking != "":
				ps.add(Part{Text: b.Thinking, Thought: true, ThoughtSignature: sig})
			case sig != "":
				// A signature with no thought text is what a Gemini stream
				// gives for a signed functionCall or text part: it goes back
				// on the part that follows, like a thought_signature block
				// (Gemini 3 refuses a functionCall without its signature).
				ps.pending = append(ps.pending, sig)
			}
		case chat.TypeReasoning:
			if b.Text != "" {
				ps.add(Part{Text: b.Text, Thought: true})
			}
		case chat.TypeThoughtSignature:
			if sig := e.signature(b.Signature, path); sig != "" {
				ps.pending = append(ps.pending, sig)
			}
		case chat.TypeRedactedThinking:
			e.warn(path, "Gemini cannot carry redacted (encrypted) thinking: not sent")
			continue
		default:
			e.warn(path, "a %s block has no Gemini equivalent: not sent", b.Type)
			continue
		}
		e.blockFields(b, path)
	}
	return ps.finish()
}

// blockFields warns about the fields of a known block Gemini cannot carry.
func (e *encoder) blockFields(b *chat.Block, path string) {
	if len(b.Citations) > 0 {
		e.warn(path+".citations", "Gemini cannot carry citations: not sent")
	}
	for _, k := range chat.SortedKeys(b.Extra) {
		e.warn(path+"."+k, "a block field Gemini does not take: not sent")
	}
	if s := b.Source; s != nil && (s.Type == "base64" || s.Type == "url" || s.Type == "text") {
		// The fields of other sources were named in the stub's warning.
		for _, k := range chat.SortedKeys(s.Extra) {
			e.warn(path+".source."+k, "a source field Gemini does not take: not sent")
		}
	}
}

func (e *encoder) image(b *chat.Block, path string) Part {
	s := b.Source
	if s != nil {
		switch s.Type {
		case "base64":
			return Part{InlineData: &Blob{MimeType: s.MediaType, Data: s.Data}}
		case "url":
			return Part{FileData: &FileData{MimeType: urlMimeType(s), FileURI: s.URL}}
		}
	}
	e.warn(path, "an image with a %s source cannot be carried: sent as a text stub", sourceType(s))
	return Part{Text: chat.ImageStub(s)}
}

func (e *encoder) document(b *chat.Block, path string) []Part {
	var out []Part
	if b.Title != "" || b.Context != "" {
		var head []string
		if b.Title != "" {
			head = append(head, "Document title: "+b.Title)
		}
		if b.Context != "" {
			head = append(head, "Document context: "+b.Context)
		}
		out = append(out, Part{Text: strings.Join(head, "\n")})
	}
	s := b.Source
	switch {
	case s != nil && s.Type == "base64" && s.Data != "":
		mt := s.MediaType
		if mt == "" {
			mt = "application/pdf"
		}
		return append(out, Part{InlineData: &Blob{MimeType: mt, Data: s.Data}})
	case s != nil && s.Type == "url" && s.URL != "":
		return append(out, Part{FileData: &FileData{MimeType: urlMimeType(s), FileURI: s.URL}})
	case s != nil && s.Type == "text":
		if s.Data != "" {
			out = append(out, Part{Text: s.Data})
		}
		return out
	}
	e.warn(path, "a document with a %s source cannot be carried: sent as a text stub", sourceType(s))
	return append(out, Part{Text: chat.DocumentStub(b)})
}

func (e *encoder) toolResult(ps *parts, b *chat.Block, path string) {
	text, media := e.resultContent(b.Content, path+".content")
	name, known := e.names[b.ToolUseID]
	if !known {
		label := "[Result of tool call " + b.ToolUseID + "]"
		if b.IsError {
			label = "[Error from tool call " + b.ToolUseID + "]"
		}
		if text != "" {
			label += "\n" + text
		}
		ps.after = append(ps.after, Part{Text: label})
		ps.after = append(ps.after, media...)
		e.warn(path, "no earlier tool_use has id %q, so there is no function name: the result is sent as text", b.ToolUseID)
		return
	}
	key := `{"output":`
	if b.IsError {
		key = `{"error":`
	}
	resp := make([]byte, 0, len(key)+len(text)+8)
	resp = append(resp, key...)
	resp = chat.AppendString(resp, text)
	resp = append(resp, '}')
	fr := &FunctionResponse{Name: name, Response: resp}
	if e.opts.CallIDs {
		fr.ID = b.ToolUseID
	}
	ps.put(Part{FunctionResponse: fr})
	ps.after = append(ps.after, media...)
}

// resultContent is a tool result's text, joined, and its media as parts.
func (e *encoder) resultContent(c *chat.Content, path string) (string, []Part) {
	if c == nil {
		return "", nil
	}
	if c.IsString {
		return c.Text, nil
	}
	var texts []string
	var media []Part
	for k := range c.Blocks {
		b := &c.Blocks[k]
		p := path + "[" + strconv.Itoa(k) + "]"
		switch b.Type {
		case chat.TypeText:
			if b.Text != "" {
				texts = append(texts, b.Text)
			}
		case chat.TypeImage:
			media = append(media, e.image(b, p))
		case chat.TypeDocument:
			media = append(media, e.document(b, p)...)
		default:
			e.warn(p, "a %s block inside a tool result cannot be carried: not sent", b.Type)
			continue
		}
		e.blockFields(b, p)
	}
	if len(texts) == 1 {
		return texts[0], media
	}
	return strings.Join(texts, "\n"), media
}

func (e *encoder) tools(out *Request, tools []chat.Tool) {
	var decls []FunctionDeclaration
	for i := range tools {
		t := &tools[i]
		path := "tools[" + strconv.Itoa(i) + "]"
		if t.Type != "" && t.Type != "custom" {
			e.warn(path, "the provider-defined tool %s (%s) has no Gemini equivalent: not sent", t.Name, t.Type)
			continue
		}
		d := FunctionDeclaration{Name: t.Name, Description: t.Description}
		if len(t.InputSchema) > 0 {
			if e.opts.Schema == SchemaOpenAPI {
				d.Parameters = e.openAPISchema(t.InputSchema, path+".input_schema")
			} else {
				d.ParametersJSONSchema = chat.CloneRaw(t.InputSchema)
			}
		}
		for _, k := range chat.SortedKeys(t.Extra) {
			e.warn(path+"."+k, "a tool field Gemini does not take: not sent")
		}
		decls = append(decls, d)
	}
	if len(decls) > 0 {
		out.Tools = []Tool{{FunctionDeclarations: decls}}
	}
}

func (e *encoder) toolChoice(out *Request, tc *chat.ToolChoice) {
	if tc == nil {
		return
	}
	if tc.DisableParallelToolUse != nil && *tc.DisableParallelToolUse {
		e.warn("tool_choice.disable_parallel_tool_use", "Gemini has no switch against parallel function calls: ignored")
	}
	if len(out.Tools) == 0 {
		if tc.Type == "any" || tc.Type == "tool" {
			e.warn("tool_choice", "no function declarations to choose from: not sent")
		}
		return
	}
	var fc FunctionCallingConfig
	switch tc.Type {
	case "any":
		fc.Mode = "ANY"
	case "tool":
		fc.Mode = "ANY"
		fc.AllowedFunctionNames = []string{tc.Name}
	case "none":
		fc.Mode = "NONE"
	default:
		fc.Mode = "AUTO"
	}
	out.ToolConfig = &ToolConfig{FunctionCallingConfig: fc}
}

func (e *encoder) params(out *Request, req chat.Request) {
	p, warns := chat.ResolveParams(req, chat.FormatGemini)
	e.warns = append(e.warns, warns...)
	gc := &GenerationConfig{MaxOutputTokens: p.MaxTokens}
	if p.Temperature != nil {
		v := *p.Temperature
		gc.Temperature = &v
	}
	if p.TopP != nil {
		v := *p.TopP
		gc.TopP = &v
	}
	if len(p.Stop) > 0 {
		stop := p.Stop
		if len(stop) > MaxStopSequences {
			e.warn("stop_sequences", "Gemini takes at most %d stop sequences: the first %d are sent, %d more are not", MaxStopSequences, MaxStopSequences, len(stop)-MaxStopSequences)
			stop = stop[:MaxStopSequences]
		}
		gc.StopSequences = append([]string(nil), stop...)
	}
	include := func(def bool) bool {
		if e.opts.IncludeThoughts != nil {
			return *e.opts.IncludeThoughts
		}
		return def
	}
	switch {
	case p.Reasoning:
		tc := &ThinkingConfig{IncludeThoughts: include(true)}
		if e.opts.ThinkingLevel {
			tc.ThinkingLevel = strings.ToUpper(p.ReasoningEffort)
		} else {
			budget := p.ReasoningBudget
			tc.ThinkingBudget = &budget
		}
		gc.ThinkingConfig = tc
	case req.Thinking != nil && req.Thinking.Type == "disabled":
		tc := &ThinkingConfig{IncludeThoughts: include(false)}
		if e.opts.ThinkingLevel {
			tc.ThinkingLevel = "MINIMAL"
		} else {
			zero := 0
			tc.ThinkingBudget = &zero
		}
		gc.ThinkingConfig = tc
	case include(false):
		gc.ThinkingConfig = &ThinkingConfig{IncludeThoughts: true}
	}
	e.format(gc, req.Format)
	out.GenerationConfig = gc
}

// urlMimeType is the source's media type, else the one its URL's extension
// names, else "".
func urlMimeType(s *chat.Source) string {
	if s.MediaType != "" {
		return s.MediaType
	}
	u := s.URL
	if k := strings.IndexAny(u, "?#"); k >= 0 {
		u = u[:k]
	}
	dot := strings.LastIndexByte(u, '.')
	if dot < 0 || strings.Contains(u[dot:], "/") {
		return ""
	}
	switch strings.ToLower(u[dot+1:]) {
	case "png":
		return "image/png"
	case "jpg", "jpeg":
		return "image/jpeg"
	case "gif":
		return "image/gif"
	case "webp":
		return "image/webp"
	case "heic":
		return "image/heic"
	case "heif":
		return "image/heif"
	case "pdf":
		return "application/pdf"
	}
	return ""
}

func sourceType(s *chat.Source) string {
	if s == nil {
		return "missing"
	}
	if s.Type == "" {
		return "untyped"
	}
	return s.Type
}

// signature is what goes out for sig, a signature of the block at path:
// sig itself, the Gemini signature inside ctxkit's envelope, or, for a
// signature another provider made, SignaturePlaceholder (warning).
func (e *encoder) signature(sig, path string) string {
	out, ok := wire.SignatureFor(wire.HomeGemini, sig)
	if ok {
		return out
	}
	if s, _ := wire.OpenSignature(sig); s.Redacted {
		e.warn(path, "redacted thinking of %s cannot go to Gemini: sent as the placeholder signature", s.Home)
	} else {
		e.warn(path, "the signature was made by %s, and Gemini refuses it: sent as the placeholder signature", s.Home)
	}
	return SignaturePlaceholder
}
