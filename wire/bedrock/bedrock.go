package bedrock

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
)

// Options control the conversion.
type Options struct {
	// Cache is the caching strategy: "" maps the request's own
	// cache_control marks; "bedrock" places cache points itself.
	Cache string `json:"cache,omitempty"`
	// Model is the Bedrock model id (or inference profile) that picks the
	// caching limits; empty: the request's model.
	Model string `json:"model,omitempty"`
	// MaxPoints and MinTokens, when set, replace the model's limits: the
	// most cache points a request may carry and the fewest estimated
	// tokens a point must cover.
	MaxPoints int `json:"max_points,omitempty"`
	MinTokens int `json:"min_tokens,omitempty"`
	// State holds the previous turn's placements (Request.CacheState of
	// the previous call) for the "bedrock" strategy.
	State *CacheState `json:"state,omitempty"`
}

// CacheBedrock is the Options.Cache value of the multi-point strategy.
const CacheBedrock = "bedrock"

// CacheState records where the "bedrock" strategy placed cache points, so
// that the next turn keeps them where they were.
type CacheState struct {
	Placements []Placement `json:"placements,omitempty"`
}

// Placement is one cache point: after the tools, after the system prompt,
// or after the canonical message Index (in the request's messages, before
// merging). Tokens is the estimate of the range it closes: the tokens
// since the previous point (or the start of the prompt).
type Placement struct {
	Field  string `json:"field"` // tools, system or messages
	Index  int    `json:"index"` // messages only
	Tokens int    `json:"tokens"`
}

func (o *Options) check() error {
	switch o.Cache {
	case "", CacheBedrock:
	default:
		return &chat.Error{Path: "options.cache", Msg: fmt.Sprintf("%q is not \"\" or %q", o.Cache, CacheBedrock)}
	}
	if o.MaxPoints < 0 {
		return &chat.Error{Path: "options.max_points", Msg: "must not be negative"}
	}
	if o.MinTokens < 0 {
		return &chat.Error{Path: "options.min_tokens", Msg: "must not be negative"}
	}
	return nil
}

// EncodeRequest converts a canonical request to a Converse request body.
// It never changes req; the result shares strings and raw JSON with req,
// so treat it as read-only. Equal input gives equal output.
func EncodeRequest(req chat.Request, opts Options) (*Request, []chat.Warning, error) {
	if err := opts.check(); err != nil {
		return nil, nil, err
	}
	for i := range req.Messages {
		if r := req.Messages[i].Role; r != chat.User && r != chat.Assistant {
			return nil, nil, &chat.Error{Path: chat.MessagePath(i) + ".role", Msg: fmt.Sprintf("%q is not user or assistant", r)}
		}
	}
	if tc := req.ToolChoice; tc != nil {
		switch tc.Type {
		case "auto", "any", "none":
		case "tool":
			if tc.Name == "" {
				return nil, nil, &chat.Error{Path: "tool_choice.name", Msg: "required when type is tool"}
			}
		default:
			return nil, nil, &chat.Error{Path: "tool_choice.type", Msg: fmt.Sprintf("%q is not one of auto, any, tool, none", tc.Type)}
		}
	}
	var formatWarns []chat.Warning
	if wire.FormatTool("bedrock", req.Format) != "" {
		// Converse's structured output is taken as a forced tool call,
		// which the gateway turns back into text (wire.ToolAsText).
		withTool, warns, err := wire.FormatAsTool(req)
		if err != nil {
			return nil, nil, err
		}
		req, formatWarns = withTool, warns
	}
	e := &encoder{req: &req, opts: opts, warns: formatWarns}
	out := &Request{}
	e.params(out)
	e.topLevel(out)
	e.scanIdents()

	specs, at := e.toolSpecs()
	tc, sendTools := e.toolChoice(&specs)

	lim := e.limits()
	var pts []point
	if opts.Cache == CacheBedrock {
		for _, m := range e.marks(false, sendTools) {
			e.warnf(m.path, "cache_control: superseded by the bedrock caching strategy, which places the cache points itself")
		}
		pts, out.CacheState = e.strategy(lim, specs, sendTools)
	} else {
		pts = e.passThrough(lim, sendTools)
	}
	// Split the points by place; each list stays in prompt order.
	n := 0
	for n < len(pts) && pts[n].msg == toolsMsg {
		n++
	}
	toolPts := pts[:n]
	pts = pts[n:]
	n = 0
	for n < len(pts) && pts[n].msg == systemMsg {
		n++
	}
	sysPts, msgPts := pts[:n], pts[n:]

	if sendTools {
		out.ToolConfig = &ToolConfig{Tools: e.tools(specs, at, toolPts), ToolChoice: tc}
	}
	out.System = e.system(sysPts)
	out.Messages = e.messages(msgPts)
	return out, e.warns, nil
}

type encoder struct {
	req   *chat.Request
	opts  Options
	warns []chat.Warning

	ids, names  renamer
	toolHistory bool // the messages hold tool_use or tool_result blocks

	docs     int             // documents carried so far
	docNames map[string]bool // their names

	out []Message
}

func (e *encoder) warnf(path, format string, args ...any) {
	e.warns = append(e.warns, chat.Warnf(path, format, args...))
}

// params maps max tokens, temperature, top_p, stop sequences and the
// reasoning budget, resolved by chat.ResolveParams.
func (e *encoder) params(out *Request) {
	p, warns := chat.ResolveParams(*e.req, chat.FormatBedrock)
	e.warns = append(e.warns, warns...)
	ic := &InferenceConfig{MaxTokens: p.MaxTokens}
	if p.Temperature != nil {
		v := *p.Temperature
		ic.Temperature = &v
	}
	if p.TopP != nil {
		v := *p.TopP
		ic.TopP = &v
	}
	if len(p.Stop) > 0 {
		ic.StopSequences = append([]string(nil), p.Stop...)
	}
	out.InferenceConfig = ic
	if p.Reasoning {
		out.AdditionalModelRequestFields = map[string]any{
			"thinking": ThinkingConfig{Type: "enabled", BudgetTokens: p.ReasoningBudget},
		}
	}
}

// topLevel handles the request fields Converse has no place for: top_k
// goes to additionalModelRequestFields, the rest is reported.
func (e *encoder) topLevel(out *Request) {
	if len(e.req.Metadata) > 0 {
		e.warnf("metadata", "not carried (Converse's requestMetadata tags invocation logs; it is not the model's request metadata): dropped")
	}
	for _, k := range chat.SortedKeys(e.req.Extra) {
		if k == "top_k" {
			if out.AdditionalModelRequestFields == nil {
				out.AdditionalModelRequestFields = map[string]any{}
			}
			out.AdditionalModelRequestFields["top_k"] = e.req.Extra[k]
			continue
		}
		e.warnf(k, "not a Converse field: dropped")
	}
}

// scanIdents finds the tool names and tool use ids that break Bedrock's
// pattern and maps them; it also notes whether the history uses tools.
func (e *encoder) scanIdents() {
	valid := true
	for _, t := range e.req.Tools {
		valid = valid && validIdent(t.Name)
	}
	if tc := e.req.ToolChoice; tc != nil && tc.Type == "tool" {
		valid = valid && validIdent(tc.Name)
	}
	for i := range e.req.Messages {
		c := &e.req.Messages[i].Content
		for j := range c.Blocks {
			b := &c.Blocks[j]
			switch b.Type {
			case chat.TypeToolUse:
				e.toolHistory = true
				valid = valid && validIdent(b.ID) && validIdent(b.Name)
			case chat.TypeToolResult:
				e.toolHistory = true
				valid = valid && validIdent(b.ToolUseID)
			}
		}
	}
	if valid {
		return
	}
	type named struct{ name, path string }
	var names []named
	var ids []string
	for i, t := range e.req.Tools {
		if t.Type == "" || t.Type == "custom" {
			names = append(names, named{t.Name, "tools[" + strconv.Itoa(i) + "].name"})
		}
	}
	if tc := e.req.ToolChoice; tc != nil && tc.Type == "tool" {
		names = append(names, named{tc.Name, "tool_choice.name"})
	}
	for i := range e.req.Messages {
		c := &e.req.Messages[i].Content
		for j := range c.Blocks {
			b := &c.Blocks[j]
			switch b.Type {
			case chat.TypeToolUse:
				ids = append(ids, b.ID)
				names = append(names, named{b.Name, chat.BlockPath(i, j) + ".name"})
			case chat.TypeToolResult:
				ids = append(ids, b.ToolUseID)
			}
		}
	}
	plain := make([]string, len(names))
	for i, n := range names {
		plain[i] = n.name
	}
	e.ids = newRenamer(ids)
	e.names = newRenamer(plain)
	warned := map[string]bool{}
	for _, n := range names {
		if got := e.names.get(n.name); got != n.name && !warned[n.name] {
			warned[n.name] = true
			e.warnf(n.path, "tool name %q does not match Bedrock's pattern [a-zA-Z0-9_-]{1,64}: sent as %q", n.name, got)
		}
	}
}

// toolSpecs converts the custom tools; at[i] is the position of tools[i]
// among the specs, or -1 when it is not carried.
func (e *encoder) toolSpecs() (specs []ToolSpecification, at []int) {
	if len(e.req.Tools) == 0 {
		return nil, nil
	}
	at = make([]int, len(e.req.Tools))
	for i := range e.req.Tools {
		t := &e.req.Tools[i]
		path := "tools[" + strconv.Itoa(i) + "]"
		if t.Type != "" && t.Type != "custom" {
			at[i] = -1
			e.warnf(path, "provider-defined tool %q: Converse takes custom tools (toolSpec) only: dropped", t.Type)
			continue
		}
		if len(t.Extra) > 0 {
			e.warnf(path, "%s: not carried by Converse: dropped", fieldList(t.Extra))
		}
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = openSchema
		}
		at[i] = len(specs)
		specs = append(specs, ToolSpecification{Name: e.names.get(t.Name), Description: t.Description, InputSchema: ToolInputSchema{JSON: schema}})
	}
	return specs, at
}

var openSchema = json.RawMessage(`{"type":"object"}`)

// toolChoice maps the tool choice and decides whether toolConfig is sent.
// Converse requires toolConfig whenever the messages hold tool blocks, so
// tools the history uses but the request does not declare are declared
// with an open schema.
func (e *encoder) toolChoice(specs *[]ToolSpecification) (*ToolChoice, bool) {
	tc := e.req.ToolChoice
	var choice *ToolChoice
	none := false
	if tc != nil {
		switch tc.Type {
		case "auto":
			choice = &ToolChoice{Auto: &struct{}{}}
		case "any":
			choice = &ToolChoice{Any: &struct{}{}}
		case "tool":
			choice = &ToolChoice{Tool: &SpecificToolChoice{Name: e.names.get(tc.Name)}}
		case "none":
			none = true
		}
		if p := tc.DisableParallelToolUse; p != nil && *p {
			e.warnf("tool_choice.disable_parallel_tool_use", "Converse has no switch for parallel tool calls: not sent")
		}
	}
	if len(*specs) == 0 && e.toolHistory {
		var declared []string
		seen := map[string]bool{}
		for i := range e.req.Messages {
			c := &e.req.Messages[i].Content
			for j := range c.Blocks {
				if b := &c.Blocks[j]; b.Type == chat.TypeToolUse && !seen[b.Name] {
					seen[b.Name] = true
					name := e.names.get(b.Name)
					declared = append(declared, name)
					*specs = append(*specs, ToolSpecification{Name: name, InputSchema: ToolInputSchema{JSON: openSchema}})
				}
			}
		}
		if len(declared) > 0 {
			e.warnf("tools", "the messages hold tool calls but the request declares no tools, and Converse then requires toolConfig: declared %s with an open input schema", strings.Join(declared, ", "))
		}
	}
	if len(*specs) == 0 {
		if tc != nil && !none {
			e.warnf("tool_choice", "no tools to choose from: not sent")
		}
		return nil, false
	}
	if none {
		if !e.toolHistory {
			e.warnf("tool_choice", "Converse has no \"none\" tool choice: the tools are not sent, so the model cannot call them")
			return nil, false
		}
		e.warnf("tool_choice", "Converse has no \"none\" tool choice and needs the tools while the messages hold tool blocks: tools sent with the default choice (auto)")
	}
	return choice, true
}

// tools assembles toolConfig.tools with the cache points: a point of
// tools[i] follows the spec of tools[i] (or the last spec before it, when
// tools[i] is not carried).
func (e *encoder) tools(specs []ToolSpecification, at []int, pts []point) []Tool {
	out := make([]Tool, 0, len(specs)+len(pts))
	pi := 0
	emit := func(p point) {
		if len(out) == 0 {
			e.warnf(p.path, "cache_control: no tool before it to cache: dropped")
			return
		}
		if out[len(out)-1].CachePoint == nil {
			out = append(out, Tool{CachePoint: p.cachePoint()})
		}
	}
	carried := 0
	for i, k := range at {
		if k >= 0 {
			out = append(out, Tool{ToolSpec: &specs[k]})
			carried++
		}
		for pi < len(pts) && pts[pi].blk == i {
			emit(pts[pi])
			pi++
		}
	}
	for k := carried; k < len(specs); k++ { // declared for the history
		out = append(out, Tool{ToolSpec: &specs[k]})
	}
	for ; pi < len(pts); pi++ {
		emit(pts[pi])
	}
	return out
}

// system converts the system prompt to text blocks with its cache points.
func (e *encoder) system(pts []point) []SystemContentBlock {
	s := e.req.System
	if s == nil {
		return nil
	}
	var out []SystemContentBlock
	pi := 0
	emit := func(p point) {
		if len(out) == 0 {
			e.warnf(p.path, "cache_control: no system text before it to cache: dropped")
			return
		}
		if out[len(out)-1].CachePoint == nil {
			out = append(out, SystemContentBlock{CachePoint: p.cachePoint()})
		}
	}
	if s.IsString {
		if isBlank(s.Text) {
			if s.Text != "" {
				e.warnf("system", "blank text: Converse rejects blank text blocks: omitted")
			}
		} else {
			out = append(out, SystemContentBlock{Text: s.Text})
		}
	} else {
		out = make([]SystemContentBlock, 0, len(s.Blocks)+len(pts))
		for j := range s.Blocks {
			b := &s.Blocks[j]
			path := "system[" + strconv.Itoa(j) + "]"
			switch {
			case b.Type != chat.TypeText:
				e.warnf(path, "a %s block: the system prompt takes text only: dropped", b.Type)
			case isBlank(b.Text):
				e.warnf(path, "blank text: Converse rejects blank text blocks: omitted")
			default:
				out = append(out, SystemContentBlock{Text: b.Text})
				e.blockExtras(path, b)
			}
			for pi < len(pts) && pts[pi].blk == j {
				emit(pts[pi])
				pi++
			}
		}
	}
	for ; pi < len(pts); pi++ {
		emit(pts[pi])
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// messages converts the messages, merging consecutive messages of one role
// and inserting the cache points.
func (e *encoder) messages(pts []point) []Message {
	msgs := e.req.Messages
	e.out = make([]Message, 0, len(msgs))
	first := -1 // canonical index of the first carried message
	pi := 0
	for i := range msgs {
		m := &msgs[i]
		merge := len(e.out) > 0 && e.out[len(e.out)-1].Role == m.Role
		var content []ContentBlock
		if merge {
			content = e.out[len(e.out)-1].Content
		}
		carried := 0
		if m.Content.IsString {
			if isBlank(m.Content.Text) {
				if m.Content.Text != "" {
					e.warnf(chat.MessagePath(i), "blank text: Converse rejects blank text blocks: omitted")
				}
			} else {
				content = append(content, ContentBlock{Text: m.Content.Text})
				carried++
			}
		} else {
			blocks := m.Content.Blocks
			if content == nil {
				content = make([]ContentBlock, 0, len(blocks)+1)
			}
			for j := range blocks {
				n := len(content)
				content = e.block(content, i, j, &blocks[j])
				carried += len(content) - n
				for pi < len(pts) && pts[pi].msg == i && pts[pi].blk == j {
					content = e.cachePoint(content, pts[pi])
					pi++
				}
			}
		}
		for pi < len(pts) && pts[pi].msg == i {
			content = e.cachePoint(content, pts[pi])
			pi++
		}
		if len(m.ReasoningDetails) > 0 {
			e.warnf(chat.MessagePath(i)+".reasoning_details", "Converse has no reasoning_details: dropped")
		}
		if len(m.Extra) > 0 {
			e.warnf(chat.MessagePath(i), "%s: not carried by Converse: dropped", fieldList(m.Extra))
		}
		if carried == 0 {
			e.warnf(chat.MessagePath(i), "no content Converse can carry: message omitted")
		}
		switch {
		case merge:
			e.out[len(e.out)-1].Content = content
		case carried > 0:
			e.out = append(e.out, Message{Role: m.Role, Content: content})
			if first < 0 {
				first = i
			}
		}
	}
	if len(e.out) > 0 && e.out[0].Role == chat.Assistant {
		e.warnf(chat.MessagePath(first), "Converse requires the first message to be the user's: a user message %q is inserted before it", startText)
		e.out = append([]Message{{Role: chat.User, Content: []ContentBlock{{Text: startText}}}}, e.out...)
	}
	return e.out
}

// startText is the user message put before a conversation that starts
// with the assistant.
const startText = "(continued)"

// cachePoint appends a cache point after the content so far; with none
// yet, after the previous message.
func (e *encoder) cachePoint(content []ContentBlock, p point) []ContentBlock {
	if len(content) > 0 {
		if content[len(content)-1].CachePoint == nil {
			content = append(content, ContentBlock{CachePoint: p.cachePoint()})
		}
		return content
	}
	if len(e.out) > 0 {
		prev := &e.out[len(e.out)-1]
		if prev.Content[len(prev.Content)-1].CachePoint == nil {
			prev.Content = append(prev.Content, ContentBlock{CachePoint: p.cachePoint()})
		}
		return content
	}
	e.warnf(p.path, "cache_control: no content before it to cache: dropped")
	return content
}

// block appends the Converse form of messages[i].content[j].
func (e *encoder) block(dst []ContentBlock, i, j int, b *chat.Block) []ContentBlock {
	switch b.Type {
	case chat.TypeText:
		if isBlank(b.Text) {
			e.warnf(chat.BlockPath(i, j), "blank text: Converse rejects blank text blocks: omitted")
			return dst
		}
		dst = append(dst, ContentBlock{Text: b.Text})
	case chat.TypeImage:
		if img, why := image(b.Source); img != nil {
			dst = append(dst, ContentBlock{Image: img})
			if _, ok := b.Source.Extra["detail"]; ok {
				e.warnf(chat.BlockPath(i, j)+".source.detail", "Converse has no image detail: dropped")
			}
		} else {
			stub := chat.ImageStub(b.Source)
			e.warnf(chat.BlockPath(i, j), "%s: replaced by the text %q", why, stub)
			dst = append(dst, ContentBlock{Text: stub})
		}
	case chat.TypeDocument:
		if doc, stub := e.document(b, func() string { return chat.BlockPath(i, j) }); doc != nil {
			dst = append(dst, ContentBlock{Document: doc})
		} else if stub != "" {
			dst = append(dst, ContentBlock{Text: stub})
		}
	case chat.TypeToolUse:
		input := b.Input
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		dst = append(dst, ContentBlock{ToolUse: &ToolUseBlock{ToolUseID: e.ids.get(b.ID), Name: e.names.get(b.Name), Input: input}})
	case chat.TypeToolResult:
		dst = append(dst, ContentBlock{ToolResult: e.toolResult(i, j, b)})
	case chat.TypeThinking:
		if b.Thinking == "" && b.Signature == "" {
			e.warnf(chat.BlockPath(i, j), "empty thinking block: omitted")
			return dst
		}
		// A signature ctxkit sealed for a client of another dialect
		// (wire.SealChunks) is opened when Bedrock made it; one another
		// provider made, Converse refuses. Bedrock's redacted content,
		// which a client kept in a thinking block's place, is the block
		// it was.
		if s, sealed := wire.OpenSignature(b.Signature); sealed && s.Redacted && s.Home == wire.HomeBedrock {
			return e.block(dst, i, j, &chat.Block{Type: chat.TypeRedactedThinking, Data: b.Signature})
		}
		sig, ok := wire.SignatureFor(wire.HomeBedrock, b.Signature)
		if !ok {
			s, _ := wire.OpenSignature(b.Signature)
			e.warnf(chat.BlockPath(i, j), "the thinking block's signature was made by %s, and Converse takes back only its own: dropped", s.Home)
			return dst
		}
		if s, sealed := wire.OpenSignature(b.Signature); sealed && !s.Signs(b.Thinking) {
			e.warnf(chat.BlockPath(i, j), "the thinking this signature signs was too long for its envelope, and the block's text is not the text signed: dropped")
			return dst
		}
		dst = append(dst, ContentBlock{ReasoningContent: &ReasoningContentBlock{ReasoningText: &ReasoningTextBlock{Text: b.Thinking, Signature: sig}}})
	case chat.TypeReasoning:
		if b.Text == "" {
			e.warnf(chat.BlockPath(i, j), "empty reasoning block: omitted")
			return dst
		}
		dst = append(dst, ContentBlock{ReasoningContent: &ReasoningContentBlock{ReasoningText: &ReasoningTextBlock{Text: b.Text}}})
	case chat.TypeRedactedThinking:
		// Redacted content ctxkit sealed is Bedrock's own inside; any
		// other provider's, Converse refuses.
		data := b.Data
		if s, sealed := wire.OpenSignature(b.Data); sealed {
			if !s.Redacted || s.Home != wire.HomeBedrock {
				e.warnf(chat.BlockPath(i, j), "%s made by %s, and Converse takes back only its own: dropped", sealedWhat(s), s.Home)
				return dst
			}
			data = s.Signature
		}
		if !isBase64(data) {
			e.warnf(chat.BlockPath(i, j), "redacted thinking whose data is not base64: Converse's redactedContent takes bytes: dropped")
			return dst
		}
		dst = append(dst, ContentBlock{ReasoningContent: &ReasoningContentBlock{RedactedContent: data}})
	case chat.TypeThoughtSignature:
		e.warnf(chat.BlockPath(i, j), "Gemini's thought signature: Converse has no counterpart: dropped")
		return dst
	default:
		e.warnf(chat.BlockPath(i, j), "block type %q: Converse has no counterpart: dropped", b.Type)
		return dst
	}
	if len(b.Citations) > 0 || len(b.Extra) > 0 {
		e.blockExtras(chat.BlockPath(i, j), b)
	}
	return dst
}

// sealedWhat names what an envelope holds, for a warning.
func sealedWhat(s wire.Sealed) string {
	if s.Redacted {
		return "redacted thinking"
	}
	return "a signature"
}

// blockExtras reports what a carried block holds beyond its mapping.
func (e *encoder) blockExtras(path string, b *chat.Block) {
	if len(b.Citations) > 0 && b.Type != chat.TypeDocument {
		e.warnf(path, "citations: Converse takes citations in responses only: dropped")
	}
	if len(b.Extra) > 0 {
		e.warnf(path, "%s: not carried by Converse: dropped", fieldList(b.Extra))
	}
}

// toolResult converts messages[i].content[j], a tool_result.
func (e *encoder) toolResult(i, j int, b *chat.Block) *ToolResultBlock {
	tr := &ToolResultBlock{ToolUseID: e.ids.get(b.ToolUseID)}
	if b.IsError {
		tr.Status = "error"
	}
	c := b.Content
	switch {
	case c == nil || c.IsString && c.Text == "":
		tr.Content = []ToolResultContentBlock{}
		return tr
	case c.IsString:
		tr.Content = []ToolResultContentBlock{{Text: c.Text}}
		return tr
	}
	tr.Content = make([]ToolResultContentBlock, 0, len(c.Blocks))
	for k := range c.Blocks {
		ib := &c.Blocks[k]
		path := func() string { return chat.BlockPath(i, j) + ".content[" + strconv.Itoa(k) + "]" }
		switch ib.Type {
		case chat.TypeText:
			if ib.Text == "" {
				e.warnf(path(), "empty text: omitted")
				continue
			}
			tr.Content = append(tr.Content, ToolResultContentBlock{Text: ib.Text})
		case chat.TypeImage:
			if img, why := image(ib.Source); img != nil {
				tr.Content = append(tr.Content, ToolResultContentBlock{Image: img})
				if _, ok := ib.Source.Extra["detail"]; ok {
					e.warnf(path()+".source.detail", "Converse has no image detail: dropped")
				}
			} else {
				stub := chat.ImageStub(ib.Source)
				e.warnf(path(), "%s: replaced by the text %q", why, stub)
				tr.Content = append(tr.Content, ToolResultContentBlock{Text: stub})
			}
		case chat.TypeDocument:
			if doc, stub := e.document(ib, path); doc != nil {
				tr.Content = append(tr.Content, ToolResultContentBlock{Document: doc})
			} else if stub != "" {
				tr.Content = append(tr.Content, ToolResultContentBlock{Text: stub})
			}
			continue
		default:
			e.warnf(path(), "a %s block in a tool result: Converse's tool results take text, images and documents: dropped", ib.Type)
			continue
		}
		if len(ib.Citations) > 0 || len(ib.Extra) > 0 {
			e.blockExtras(path(), ib)
		}
	}
	return tr
}

// image maps an image source, or says why it cannot.
func image(s *chat.Source) (*ImageBlock, string) {
	if s == nil {
		return nil, "an image without a source"
	}
	switch s.Type {
	case "base64":
		f := imageFormat(s.MediaType)
		if f == "" {
			return nil, fmt.Sprintf("media type %q is not one of Converse's image formats (png, jpeg, gif, webp)", s.MediaType)
		}
		if s.Data == "" {
			return nil, "an image without data"
		}
		return &ImageBlock{Format: f, Source: ImageSource{Bytes: s.Data}}, ""
	case "url":
		if strings.HasPrefix(s.URL, "s3://") {
			f := imageFormat(s.MediaType)
			if f == "" {
				f = imageFormat(extType(s.URL))
			}
			if f == "" {
				return nil, "an S3 image whose format is unknown (no media type, no known extension)"
			}
			return &ImageBlock{Format: f, Source: ImageSource{S3Location: &S3Location{URI: s.URL}}}, ""
		}
		return nil, "an image by URL: Converse takes image bytes or S3 locations"
	}
	return nil, fmt.Sprintf("an image with a %q source: Converse takes image bytes or S3 locations", s.Type)
}

func imageFormat(mediaType string) string {
	switch strings.ToLower(mediaType) {
	case "image/png":
		return "png"
	case "image/jpeg", "image/jpg":
		return "jpeg"
	case "image/gif":
		return "gif"
	case "image/webp":
		return "webp"
	}
	return ""
}

// docFormat maps a document's media type to Converse's format; any other
// text/* type is sent as txt.
func docFormat(mediaType string) string {
	mt := strings.ToLower(mediaType)
	switch mt {
	case "application/pdf":
		return "pdf"
	case "text/csv":
		return "csv"
	case "application/msword":
		return "doc"
	case "application/vnd.openxmlformats-officedocument.wordprocessingml.document":
		return "docx"
	case "application/vnd.ms-excel":
		return "xls"
	case "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet":
		return "xlsx"
	case "text/html":
		return "html"
	case "text/markdown":
		return "md"
	}
	if strings.HasPrefix(mt, "text/") {
		return "txt"
	}
	return ""
}

// extType guesses a media type from an S3 key's extension.
func extType(uri string) string {
	dot := strings.LastIndexByte(uri, '.')
	if dot < 0 || strings.ContainsRune(uri[dot:], '/') {
		return ""
	}
	switch strings.ToLower(uri[dot+1:]) {
	case "png":
		return "image/png"
	case "jpg", "jpeg":
		return "image/jpeg"
	case "gif":
		return "image/gif"
	case "webp":
		return "image/webp"
	case "pdf":
		return "application/pdf"
	case "csv":
		return "text/csv"
	case "doc":
		return "application/msword"
	case "docx":
		return "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	case "xls":
		return "application/vnd.ms-excel"
	case "xlsx":
		return "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	case "html", "htm":
		return "text/html"
	case "md":
		return "text/markdown"
	case "txt":
		return "text/plain"
	}
	return ""
}

// document maps a document block. When it cannot, it warns and returns
// the text that stands in for it ("" when there is nothing to carry).
func (e *encoder) document(b *chat.Block, path func() string) (*DocumentBlock, string) {
	s := b.Source
	var src DocumentSource
	format := ""
	why := ""
	switch {
	case s == nil:
		why = "a document without a source"
	case s.Type == "base64":
		format = docFormat(s.MediaType)
		src.Bytes = s.Data
		switch {
		case format == "":
			why = fmt.Sprintf("media type %q is not one of Converse's document formats (pdf, csv, doc, docx, xls, xlsx, html, txt, md)", s.MediaType)
		case s.Data == "":
			e.warnf(path(), "a document without data: omitted")
			return nil, ""
		}
	case s.Type == "text":
		if s.Data == "" {
			e.warnf(path(), "an empty text document: omitted")
			return nil, ""
		}
		format = docFormat(s.MediaType)
		if format == "" || format == "pdf" {
			format = "txt"
		}
		src.Text = s.Data
	case s.Type == "url" && strings.HasPrefix(s.URL, "s3://"):
		format = docFormat(s.MediaType)
		if format == "" {
			format = docFormat(extType(s.URL))
		}
		if format == "" {
			why = "an S3 document whose format is unknown (no media type, no known extension)"
		}
		src.S3Location = &S3Location{URI: s.URL}
	case s.Type == "url":
		why = "a document by URL: Converse takes document bytes, text or S3 locations"
	default:
		why = fmt.Sprintf("a document with a %q source: Converse takes document bytes, text or S3 locations", s.Type)
	}
	if why != "" {
		stub := chat.DocumentStub(b)
		e.warnf(path(), "%s: replaced by the text %q", why, stub)
		return nil, stub
	}
	doc := &DocumentBlock{Format: format, Name: e.docName(b.Title, path), Source: src, Context: b.Context, Citations: b.Citations}
	if len(b.Extra) > 0 || len(s.Extra) > 0 {
		keys := fieldList(b.Extra)
		if len(s.Extra) > 0 {
			if keys != "" {
				keys += ", "
			}
			keys += "source " + fieldList(s.Extra)
		}
		e.warnf(path(), "%s: not carried by Converse: dropped", keys)
	}
	return doc, ""
}

// docName is the name of the next document: its title made acceptable to
// Bedrock, or "document-N" (N counting the request's documents), made
// unique within the request by a " (2)", " (3)", ... suffix.
func (e *encoder) docName(title string, path func() string) string {
	e.docs++
	name := docName(title)
	if name == "" {
		name = "document-" + strconv.Itoa(e.docs)
	}
	if e.docNames == nil {
		e.docNames = map[string]bool{}
	}
	if e.docNames[name] {
		for k := 2; ; k++ {
			suffix := " (" + strconv.Itoa(k) + ")"
			base := name
			if len(base) > maxDocName-len(suffix) {
				base = strings.TrimRight(base[:maxDocName-len(suffix)], " ")
			}
			if cand := base + suffix; !e.docNames[cand] {
				name = cand
				break
			}
		}
	}
	e.docNames[name] = true
	if title != "" && name != title {
		e.warnf(path(), "document title %q sent as the name %q (Bedrock's document names take letters, digits, single spaces, hyphens, parentheses and square brackets, and must differ)", title, name)
	}
	return name
}

func isBlank(s string) bool { return strings.TrimSpace(s) == "" }

// isBase64 reports whether s is standard, padded base64.
func isBase64(s string) bool {
	if s == "" || len(s)%4 != 0 {
		return false
	}
	pad := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '=':
			pad++
			if i < len(s)-2 {
				return false
			}
		case pad > 0:
			return false
		case c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/':
		default:
			return false
		}
	}
	return true
}

// fieldList is "field a" or "fields a, b".
func fieldList(m map[string]json.RawMessage) string {
	keys := chat.SortedKeys(m)
	if len(keys) == 1 {
		return "field " + keys[0]
	}
	return "fields " + strings.Join(keys, ", ")
}
