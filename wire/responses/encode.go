package responses

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/internal/oaicompat"
)

// Request is a Responses API request body, as EncodeRequest writes it.
type Request struct {
	Model             string          `json:"model"`
	Instructions      string          `json:"instructions,omitempty"`
	Input             []Item          `json:"input"`
	Tools             []Tool          `json:"tools,omitempty"`
	ToolChoice        json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty"`
	MaxOutputTokens   int             `json:"max_output_tokens,omitempty"`
	Temperature       *float64        `json:"temperature,omitempty"`
	TopP              *float64        `json:"top_p,omitempty"`
	Reasoning         *Reasoning      `json:"reasoning,omitempty"`
	Text              json.RawMessage `json:"text,omitempty"`
	Include           []string        `json:"include,omitempty"`
	// Store is always written: ctxkit asks the upstream to keep nothing
	// (the API's default is to keep the response).
	Store  bool `json:"store"`
	Stream bool `json:"stream,omitempty"`
	// The fields a Responses client gave that are carried as they came
	// (chat.Request.Extra).
	Metadata             json.RawMessage `json:"metadata,omitempty"`
	User                 json.RawMessage `json:"user,omitempty"`
	SafetyIdentifier     json.RawMessage `json:"safety_identifier,omitempty"`
	PromptCacheKey       json.RawMessage `json:"prompt_cache_key,omitempty"`
	PromptCacheRetention json.RawMessage `json:"prompt_cache_retention,omitempty"`
	ServiceTier          json.RawMessage `json:"service_tier,omitempty"`
	Truncation           json.RawMessage `json:"truncation,omitempty"`
	MaxToolCalls         json.RawMessage `json:"max_tool_calls,omitempty"`
	Prompt               json.RawMessage `json:"prompt,omitempty"`
}

// Item is one input item: a message (Role and Content), a function_call
// (CallID, Name, Arguments), a function_call_output (CallID, Output) or a
// reasoning item (Summary, EncryptedContent).
type Item struct {
	Type             string          `json:"type"`
	Role             string          `json:"role,omitempty"`
	Content          []Part          `json:"content,omitempty"`
	CallID           string          `json:"call_id,omitempty"`
	Name             string          `json:"name,omitempty"`
	Arguments        *string         `json:"arguments,omitempty"`
	Output           json.RawMessage `json:"output,omitempty"`
	Summary          *[]Part         `json:"summary,omitempty"`
	EncryptedContent string          `json:"encrypted_content,omitempty"`
}

// Part is one content part: input_text, output_text or a reasoning
// item's summary_text (Text),
// input_image (ImageURL or FileID, Detail), input_file (FileData, FileURL
// or FileID, Filename).
type Part struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
	FileID   string `json:"file_id,omitempty"`
	Detail   string `json:"detail,omitempty"`
	FileData string `json:"file_data,omitempty"`
	FileURL  string `json:"file_url,omitempty"`
	Filename string `json:"filename,omitempty"`
}

// Tool is a function tool, flat: {"type":"function","name",
// "description","parameters","strict"}.
type Tool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

// Reasoning is {"effort","summary"}.
type Reasoning struct {
	Effort  string `json:"effort,omitempty"`
	Summary string `json:"summary,omitempty"`
}

// Options tune EncodeRequest.
type Options struct {
	// ReasoningSummary is the reasoning summary asked for when reasoning
	// is on and the request names none: "" is "auto" (the client sees
	// the model's reasoning, as it would from the other providers);
	// "none" asks for no summary (an organisation that may not have
	// them); or "concise", "detailed".
	ReasoningSummary string `json:"reasoning_summary,omitempty"`
}

// errorPrefix starts the output of a tool result that is an error: the
// API has no flag for it (the Chat Completions encoder writes the same).
const errorPrefix = "Error: "

// EncodeRequest converts req to a Responses API request (POST
// /v1/responses), the direction of ctxkit calling the Responses API as an
// upstream. req is not changed. The warnings say what could not be
// carried and what was done instead.
//
// The system prompt's text is instructions (text blocks joined with
// "\n"). Messages become input items, in order:
//
//   - user messages: a message item {"type":"message","role":"user",
//     "content":[parts]}: text → input_text; a base64 image →
//     input_image with a data URL, a url image → its URL, a file image →
//     its file_id (detail "auto"); a base64 PDF → input_file {filename
//     (the title, or "document.pdf"), file_data (a data URL)}, a url
//     document → input_file {file_url}, a file document → {file_id}; a
//     text document (or base64 text/*) → input_text of its title, context
//     and text. Their tool_result blocks come first, each a
//     function_call_output {call_id, output}: a string, or — when the
//     result holds images or files, which the API takes there — an
//     array of input parts; is_error prefixes the text with "Error: ".
//   - assistant messages: text → a message item with output_text parts
//     (consecutive text blocks in one); tool_use → a function_call item
//     {call_id, name, arguments (compact JSON)}; a thinking block with a
//     signature → a reasoning item {summary (the thinking as one
//     summary_text, none when empty), encrypted_content (the
//     signature)}, which is how a Responses model's reasoning comes back
//     to it (a Chat Completions client's reasoning_details become such
//     blocks in wire.ClaimSignatures, before any encoder). A signature
//     ctxkit sealed (wire.SealSignature) is opened:
//     the Responses API's own encrypted content goes out as it came
//     (from a thought_signature block too, as a Gemini client hands it
//     back), another provider's is dropped with a warning. Item ids are
//     not sent: the API takes items back without them.
//
// Tools are function tools, flat, with strict false unless the tool's
// Extra says "strict": true (the API's default is strict, which refuses
// the schemas of most other clients). tool_choice auto, any, none, tool
// → "auto", "required", "none", {"type":"function","name"};
// disable_parallel_tool_use → parallel_tool_calls false. Format →
// text.format ({"type":"json_schema","name","schema","description",
// "strict"}, name "response" when it has none; or {"type":
// "json_object"}), with the kept text fields (verbosity).
//
// Parameters follow chat.ResolveParams for chat.FormatOpenAI: max tokens
// → max_output_tokens, temperature, top_p (not with reasoning), reasoning
// → reasoning {effort (the client's own none, xhigh or max when a
// Responses client gave one), summary (the client's, else
// Options.ReasoningSummary)} and include ["reasoning.encrypted_content"]:
// the request is sent with "store":false always — ctxkit, not the
// upstream, keeps what a client continues — so reasoning comes back
// encrypted, to be passed back on the next turn. A Responses client's
// include, metadata, user, safety_identifier, prompt_cache_key,
// prompt_cache_retention, service_tier, truncation, max_tool_calls and
// prompt are carried as they came; store and previous_response_id are the
// gateway's and never sent.
//
// # Fallbacks
//
// Each returns a warning naming the place: thinking without a signature,
// reasoning, redacted_thinking and thought_signature blocks (the API
// takes back only its own encrypted reasoning), reasoning_details (which
// wire.ClaimSignatures has made blocks), unknown blocks, a tool_use in a user message or a
// tool_result in an assistant message: dropped. An image or document the
// API cannot take (another source, a base64 document that is neither PDF
// nor text; any in an assistant message) becomes a text stub. Citations
// are dropped (the text is kept). Provider-defined tools are dropped.
// Stop sequences (the API has none), the canonical metadata, and
// unmodelled fields of the request, messages and tools are dropped.
// cache_control markers carry no content and are dropped silently (the
// API caches prefixes by itself).
func EncodeRequest(req chat.Request, opts Options) (*Request, []chat.Warning, error) {
	switch opts.ReasoningSummary {
	case "", "none", "auto", "concise", "detailed":
	default:
		return nil, nil, &chat.Error{Code: chat.CodeInvalidValue, Path: "options.reasoning_summary",
			Msg: "must be one of auto, concise, detailed, none"}
	}
	e := encoder{out: &Request{Model: req.Model, Input: []Item{}}}
	e.system(req.System)
	for i := range req.Messages {
		m := &req.Messages[i]
		switch m.Role {
		case chat.User:
			e.user(i, m)
		case chat.Assistant:
			e.assistant(i, m)
		default:
			return nil, e.warns, &chat.Error{Code: chat.CodeInvalidValue, Path: chat.MessagePath(i) + ".role",
				Msg: "must be user or assistant"}
		}
		for _, k := range chat.SortedKeys(m.Extra) {
			e.warn(chat.MessagePath(i)+"."+k, "not part of the Responses API: dropped")
		}
	}
	var err error
	if e.out.Tools, e.warns = tools(req.Tools, e.warns); req.ToolChoice != nil {
		if err = e.toolChoice(req.ToolChoice); err != nil {
			return nil, e.warns, err
		}
	}
	e.params(req, opts)
	return e.out, e.warns, nil
}

type encoder struct {
	out   *Request
	warns []chat.Warning
}

func (e *encoder) warn(path, format string, args ...any) {
	e.warns = append(e.warns, chat.Warnf(path, format, args...))
}

func (e *encoder) system(s *chat.Content) {
	if s == nil {
		return
	}
	if s.IsString {
		e.out.Instructions = s.Text
		return
	}
	var texts []string
	for j := range s.Blocks {
		b := &s.Blocks[j]
		p := "system[" + itoa(j) + "]"
		if b.Type != chat.TypeText {
			e.warn(p, "the system prompt takes text blocks, not %q: dropped", b.Type)
			continue
		}
		e.citations(p, b)
		if b.Text != "" {
			texts = append(texts, b.Text)
		}
	}
	e.out.Instructions = strings.Join(texts, "\n")
}

func (e *encoder) citations(p string, b *chat.Block) {
	if len(b.Citations) > 0 {
		e.warn(p, "the Responses API takes no citations: dropped (the text is kept)")
	}
}

func (e *encoder) item(it Item) { e.out.Input = append(e.out.Input, it) }

func message(role string, parts []Part) Item {
	return Item{Type: "message", Role: role, Content: parts}
}

func (e *encoder) user(i int, m *chat.Message) {
	if m.Content.IsString {
		if m.Content.Text != "" {
			e.item(message("user", []Part{{Type: "input_text", Text: m.Content.Text}}))
		}
		return
	}
	var parts []Part
	for j := range m.Content.Blocks {
		b := &m.Content.Blocks[j]
		p := chat.BlockPath(i, j)
		switch b.Type {
		case chat.TypeText:
			e.citations(p, b)
			if b.Text != "" {
				parts = append(parts, Part{Type: "input_text", Text: b.Text})
			}
		case chat.TypeImage:
			parts = append(parts, e.image(p, b.Source))
		case chat.TypeDocument:
			parts = e.document(p, b, parts)
		case chat.TypeToolResult:
			e.toolResult(p, b)
		case chat.TypeToolUse:
			e.warn(p, "a tool_use block belongs in an assistant message: dropped")
		default:
			e.other(p, b)
		}
	}
	if len(parts) > 0 {
		e.item(message("user", parts))
	}
}

func (e *encoder) other(p string, b *chat.Block) {
	switch b.Type {
	case chat.TypeThinking:
		e.warn(p, "the Responses API takes back only its own encrypted reasoning, and this thinking block has no signature: dropped")
	case chat.TypeRedactedThinking, chat.TypeReasoning, chat.TypeThoughtSignature:
		e.warn(p, "the Responses API cannot carry %s blocks: dropped", b.Type)
	default:
		e.warn(p, "the Responses API has no %q blocks: dropped", b.Type)
	}
}

func (e *encoder) image(p string, s *chat.Source) Part {
	if s != nil {
		detail := "auto"
		if v, ok := s.Extra["detail"]; ok {
			json.Unmarshal(v, &detail)
		}
		switch {
		case s.Type == "base64" && s.MediaType != "" && s.Data != "":
			return Part{Type: "input_image", ImageURL: oaicompat.DataURL(s.MediaType, s.Data), Detail: detail}
		case s.Type == "url" && s.URL != "":
			return Part{Type: "input_image", ImageURL: s.URL, Detail: detail}
		case s.Type == "file" && fileID(s) != "":
			return Part{Type: "input_image", FileID: fileID(s), Detail: detail}
		}
	}
	e.warn(p, "the Responses API cannot carry an image from a %s source: replaced by a text stub", sourceKind(s))
	return Part{Type: "input_text", Text: chat.ImageStub(s)}
}

func fileID(s *chat.Source) string {
	var id string
	if v, ok := s.Extra["file_id"]; ok {
		_ = json.Unmarshal(v, &id)
	}
	return id
}

func sourceKind(s *chat.Source) string {
	switch {
	case s == nil:
		return "missing"
	case s.Type == "base64" && s.MediaType != "":
		return "base64 " + s.MediaType
	}
	return s.Type
}

// document appends b's parts to parts.
func (e *encoder) document(p string, b *chat.Block, parts []Part) []Part {
	s := b.Source
	text := func(body string) []Part {
		var ss []string
		for _, x := range []string{b.Title, b.Context, body} {
			if x != "" {
				ss = append(ss, x)
			}
		}
		if len(ss) == 0 {
			return parts
		}
		return append(parts, Part{Type: "input_text", Text: strings.Join(ss, "\n\n")})
	}
	context := func() []Part {
		if b.Context != "" {
			return append(parts, Part{Type: "input_text", Text: b.Context})
		}
		return parts
	}
	switch {
	case s == nil:
	case s.Type == "text":
		return text(s.Data)
	case s.Type == "base64" && strings.HasPrefix(s.MediaType, "text/"):
		if body, err := base64.StdEncoding.DecodeString(s.Data); err == nil && utf8.Valid(body) {
			return text(string(body))
		}
		e.warn(p, "the document's data is not base64 of UTF-8 text: replaced by a text stub")
		return append(parts, Part{Type: "input_text", Text: chat.DocumentStub(b)})
	case s.Type == "base64" && s.MediaType == "application/pdf" && s.Data != "":
		name := b.Title
		if name == "" {
			name = "document.pdf"
		}
		return append(context(), Part{Type: "input_file", Filename: name, FileData: oaicompat.DataURL(s.MediaType, s.Data)})
	case s.Type == "url" && s.URL != "":
		return append(context(), Part{Type: "input_file", FileURL: s.URL})
	case s.Type == "file" && fileID(s) != "":
		return append(context(), Part{Type: "input_file", FileID: fileID(s)})
	}
	e.warn(p, "the Responses API cannot carry a document from a %s source: replaced by a text stub", sourceKind(s))
	return append(parts, Part{Type: "input_text", Text: chat.DocumentStub(b)})
}

func (e *encoder) toolResult(p string, b *chat.Block) {
	var parts []Part
	rich := false
	if c := b.Content; c != nil {
		if c.IsString {
			if c.Text != "" {
				parts = append(parts, Part{Type: "input_text", Text: c.Text})
			}
		}
		for k := range c.Blocks {
			nb := &c.Blocks[k]
			np := p + ".content[" + itoa(k) + "]"
			switch nb.Type {
			case chat.TypeText:
				e.citations(np, nb)
				if nb.Text != "" {
					parts = append(parts, Part{Type: "input_text", Text: nb.Text})
				}
			case chat.TypeImage:
				parts = append(parts, e.image(np, nb.Source))
			case chat.TypeDocument:
				parts = e.document(np, nb, parts)
			case chat.TypeToolResult, chat.TypeToolUse:
				e.warn(np, "a %s block inside a tool result: dropped", nb.Type)
			default:
				e.other(np, nb)
			}
		}
	}
	for _, pt := range parts {
		rich = rich || pt.Type != "input_text"
	}
	var out json.RawMessage
	if rich {
		if b.IsError {
			parts = append([]Part{{Type: "input_text", Text: strings.TrimSpace(errorPrefix)}}, parts...)
		}
		out = marshal(parts)
	} else {
		texts := make([]string, len(parts))
		for k, pt := range parts {
			texts[k] = pt.Text
		}
		s := strings.Join(texts, "\n")
		if b.IsError {
			s = errorPrefix + s
		}
		out = rawString(s)
	}
	e.item(Item{Type: "function_call_output", CallID: b.ToolUseID, Output: out})
}

// reasoning adds a reasoning item: the model's encrypted reasoning, with
// its summary.
func (e *encoder) reasoning(summary, encrypted string) {
	parts := []Part{}
	if summary != "" {
		parts = append(parts, Part{Type: "summary_text", Text: summary})
	}
	e.item(Item{Type: "reasoning", Summary: &parts, EncryptedContent: encrypted})
}

func (e *encoder) assistant(i int, m *chat.Message) {
	if len(m.ReasoningDetails) > 0 {
		// wire.ClaimSignatures has made the API's own encrypted
		// reasoning among them a thinking block already.
		e.warn(chat.MessagePath(i)+".reasoning_details", "reasoning_details is not a Responses API field: dropped")
	}
	if m.Content.IsString {
		if m.Content.Text != "" {
			e.item(message("assistant", []Part{{Type: "output_text", Text: m.Content.Text}}))
		}
		return
	}
	var texts []Part
	flush := func() {
		if len(texts) > 0 {
			e.item(message("assistant", texts))
			texts = nil
		}
	}
	for j := range m.Content.Blocks {
		b := &m.Content.Blocks[j]
		p := chat.BlockPath(i, j)
		switch b.Type {
		case chat.TypeText:
			e.citations(p, b)
			if b.Text != "" {
				texts = append(texts, Part{Type: "output_text", Text: b.Text})
			}
		case chat.TypeToolUse:
			flush()
			args := oaicompat.Arguments(b.Input)
			e.item(Item{Type: "function_call", CallID: b.ID, Name: b.Name, Arguments: &args})
		case chat.TypeReasoning:
			e.other(p, b)
		case chat.TypeThinking:
			if b.Signature == "" {
				e.other(p, b)
				continue
			}
			sig, ok := wire.SignatureFor(wire.HomeResponses, b.Signature)
			if !ok {
				s, _ := wire.OpenSignature(b.Signature)
				e.warn(p, "the thinking block's signature was made by %s, and the Responses API refuses it: dropped", s.Home)
				continue
			}
			flush()
			e.reasoning(b.Thinking, sig)
		case chat.TypeThoughtSignature:
			// A Gemini client hands a sealed encrypted_content back as a
			// thoughtSignature.
			if s, ok := wire.OpenSignature(b.Signature); ok && s.Home == wire.HomeResponses {
				flush()
				e.reasoning("", s.Signature)
				continue
			}
			e.other(p, b)
		case chat.TypeImage:
			e.warn(p, "assistant messages of the Responses API take only text: image replaced by a text stub")
			texts = append(texts, Part{Type: "output_text", Text: chat.ImageStub(b.Source)})
		case chat.TypeDocument:
			e.warn(p, "assistant messages of the Responses API take only text: document replaced by a text stub")
			texts = append(texts, Part{Type: "output_text", Text: chat.DocumentStub(b)})
		case chat.TypeToolResult:
			e.warn(p, "a tool_result block belongs in a user message: dropped")
		default:
			e.other(p, b)
		}
	}
	flush()
}

// tools are the function tools of ts, flat; provider-defined tools are
// dropped with a warning (appended to warns).
func tools(ts []chat.Tool, warns []chat.Warning) ([]Tool, []chat.Warning) {
	var out []Tool
	for i := range ts {
		t := &ts[i]
		p := "tools[" + itoa(i) + "]"
		if t.Type != "" {
			warns = append(warns, chat.Warnf(p, "the Responses API takes function tools, not provider-defined ones (type %q): dropped", t.Type))
			continue
		}
		tool := Tool{Type: "function", Name: t.Name, Description: t.Description, Parameters: chat.CloneRaw(t.InputSchema)}
		if len(tool.Parameters) == 0 {
			tool.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		for _, k := range chat.SortedKeys(t.Extra) {
			if k == "strict" {
				tool.Strict = string(t.Extra[k]) == "true"
				continue
			}
			warns = append(warns, chat.Warnf(p+"."+k, "not part of the Responses API: dropped"))
		}
		out = append(out, tool)
	}
	return out, warns
}

// toolChoice is a tool choice in the API's form; nil for an unknown one.
func toolChoice(tc *chat.ToolChoice) json.RawMessage {
	switch tc.Type {
	case "auto", "none":
		return rawString(tc.Type)
	case "any":
		return rawString("required")
	case "tool":
		return marshal(struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}{"function", tc.Name})
	}
	return nil
}

func (e *encoder) toolChoice(tc *chat.ToolChoice) error {
	if tc.Type == "tool" && tc.Name == "" {
		return &chat.Error{Code: chat.CodeMissingField, Path: "tool_choice.name", Msg: "required when type is tool"}
	}
	c := toolChoice(tc)
	if c == nil {
		return &chat.Error{Code: chat.CodeInvalidValue, Path: "tool_choice.type", Msg: "must be one of auto, any, tool, none"}
	}
	if len(e.out.Tools) == 0 {
		e.warn("tool_choice", "the Responses API takes tool_choice only with tools, and there are none: dropped")
		return nil
	}
	e.out.ToolChoice = c
	if tc.DisableParallelToolUse != nil && *tc.DisableParallelToolUse {
		no := false
		e.out.ParallelToolCalls = &no
	}
	return nil
}

// textFormat is Format as the API's text.format; nil for none.
func textFormat(f *chat.OutputFormat) any {
	if f == nil {
		return nil
	}
	if f.Type != "json_schema" {
		return map[string]string{"type": f.Type}
	}
	name := f.Name
	if name == "" {
		name = "response"
	}
	return struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Schema      json.RawMessage `json:"schema"`
		Description string          `json:"description,omitempty"`
		Strict      *bool           `json:"strict,omitempty"`
	}{"json_schema", name, f.Schema, f.Description, f.Strict}
}

func (e *encoder) params(req chat.Request, opts Options) {
	p, warns := oaicompat.ResolveParams(req, chat.FormatOpenAI, 0, e.warns)
	e.warns = warns
	out := e.out
	out.MaxOutputTokens, out.Temperature, out.TopP = p.MaxTokens, p.Temperature, p.TopP
	if len(p.Stop) > 0 {
		e.warn("stop_sequences", "the Responses API has no stop sequences: dropped")
	}
	x := req.Extra
	var kept struct {
		Effort  string `json:"effort"`
		Summary string `json:"summary"`
	}
	if v, ok := x["reasoning"]; ok {
		_ = json.Unmarshal(v, &kept)
	}
	switch {
	case kept.Effort == "none":
		out.Reasoning = &Reasoning{Effort: "none"}
	case p.Reasoning:
		out.Reasoning = &Reasoning{Effort: p.ReasoningEffort, Summary: opts.ReasoningSummary}
		if kept.Effort != "" {
			out.Reasoning.Effort = kept.Effort
		}
		if out.Reasoning.Summary == "" {
			out.Reasoning.Summary = "auto"
		}
		if kept.Summary != "" {
			out.Reasoning.Summary = kept.Summary
		}
		if out.Reasoning.Summary == "none" {
			out.Reasoning.Summary = ""
		}
		out.Include = []string{"reasoning.encrypted_content"}
	}
	if v, ok := x["include"]; ok {
		var more []string
		if json.Unmarshal(v, &more) == nil {
			for _, s := range more {
				if !slices.Contains(out.Include, s) {
					out.Include = append(out.Include, s)
				}
			}
		}
	}
	if v, ok := x["text"]; ok || req.Format != nil {
		text := map[string]json.RawMessage{}
		if ok {
			_ = json.Unmarshal(v, &text)
		}
		if f := textFormat(req.Format); f != nil {
			text["format"] = marshal(f)
		}
		if len(text) > 0 {
			out.Text = marshal(text)
		}
	}
	out.Stream = req.Stream
	for _, k := range chat.SortedKeys(x) {
		if dst := out.carried(k); dst != nil {
			*dst = chat.CloneRaw(x[k])
			continue
		}
		switch k {
		case "reasoning", "include", "text":
		case "store", "previous_response_id":
			// The gateway's: ctxkit keeps responses, the upstream does not.
		default:
			e.warn(k, "not part of the Responses API: dropped")
		}
	}
	if len(req.Metadata) > 0 {
		e.warn("metadata", "the canonical metadata has no place in the Responses API: dropped")
	}
}

// carried is the field of r for k, an Extra field a Responses client gave
// that is carried as it came; nil for another.
func (r *Request) carried(k string) *json.RawMessage {
	switch k {
	case "metadata":
		return &r.Metadata
	case "user":
		return &r.User
	case "safety_identifier":
		return &r.SafetyIdentifier
	case "prompt_cache_key":
		return &r.PromptCacheKey
	case "prompt_cache_retention":
		return &r.PromptCacheRetention
	case "service_tier":
		return &r.ServiceTier
	case "truncation":
		return &r.Truncation
	case "max_tool_calls":
		return &r.MaxToolCalls
	case "prompt":
		return &r.Prompt
	}
	return nil
}

func itoa(i int) string { return strconv.Itoa(i) }
