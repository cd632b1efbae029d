// Package anthropic converts a canonical request (package chat) to the
// request body of Anthropic's Messages API (POST /v1/messages).
//
// The canonical request already is the Messages shape, so the conversion is
// a passthrough with a filter: what the API accepts goes out as it came
// (unknown top-level fields such as top_k or service_tier, unknown fields of
// blocks, tools and sources included), and what it would reject is removed
// with a warning naming the place. Nothing is dropped silently.
//
// # Blocks
//
// A message keeps the block types the Messages API takes in a request: text,
// image, document, tool_use, tool_result, thinking and redacted_thinking,
// and the types of Anthropic's server tools and search results:
// search_result, server_tool_use, web_search_tool_result,
// web_fetch_tool_result, code_execution_tool_result,
// bash_code_execution_tool_result, text_editor_code_execution_tool_result,
// tool_search_tool_result and container_upload. The content of a
// tool_result keeps text, image, document and search_result blocks. Options
// AllowBlocks adds types to both lists (for beta block types). Every other
// block is dropped with a warning: ctxkit's extension blocks reasoning and
// thought_signature, blocks of unknown types, and blocks of known types in a
// place the API does not take them (a tool_use inside a tool_result).
//
// Signatures ctxkit sealed for a client of another dialect
// (wire.SealSignature) are opened: a thinking block gets back the
// Anthropic signature inside, and one whose signature another provider
// made, which the API refuses, is dropped with a warning. A
// thought_signature block holding an Anthropic envelope (what a Gemini
// client hands back) becomes the thinking block it carries, text and
// signature, or the redacted_thinking block; without the text, it is
// dropped with a warning. A reasoning block (a Gemini thought part) whose
// text is part of such an envelope's thinking is dropped without a
// warning: the rebuilt thinking block carries it.
//
// A text block that is empty or only whitespace is dropped with a warning
// (the API rejects it), in the system prompt, in messages and in tool
// results. A message whose content is empty, a blank string, or left empty
// by the filter is dropped with a warning (the API rejects empty messages);
// the messages around it are kept as they are (the API takes consecutive
// messages of the same role). A message's reasoning_details (OpenRouter's
// field, which wire.ClaimSignatures makes blocks before any encoder) and
// any message field other than role and content are dropped with a
// warning. A string system prompt, string message content and string
// tool_result content go out as strings (a blank message string excepted).
//
// # Parameters
//
// max_tokens, temperature, top_p, stop_sequences and the thinking budget
// follow chat.ResolveParams for chat.FormatAnthropic: max_tokens defaults to
// 8192, thinking.budget_tokens is clamped between 1024 and 80% of
// max_tokens (max_tokens is raised when it leaves no room), and temperature
// and top_p are dropped with thinking, each with a warning.
//
// reasoning_effort is not an Anthropic field and never goes out as such:
//
//   - with thinking {"type":"enabled"} and no budget, or with no thinking
//     field and Options.Effort "" or "budget", the effort becomes
//     thinking {"type":"enabled","budget_tokens":N} with the share of
//     max_tokens chat.ResolveParams gives it (minimal 1024, low 20%,
//     medium 50%, high 80%);
//   - with thinking {"type":"adaptive"}, or with no thinking field and
//     Options.Effort "adaptive", the request gets thinking
//     {"type":"adaptive"} and the effort goes to output_config.effort
//     (minimal is sent as low, with a warning; an effort already in
//     output_config wins, with a warning);
//   - with an explicit budget_tokens the budget wins and the effort is
//     dropped with a warning; with thinking disabled it is dropped with a
//     warning.
//
// Adaptive thinking takes no budget: a budget_tokens given with it is
// dropped with a warning.
//
// # Structured output
//
// A json_schema Format goes out as output_config.format {"type":
// "json_schema","schema"} (its name, description and strict have no place
// there), beside output_config's other members. A json_object Format,
// which output_config.format does not take, is sent as the forced tool
// wire.FormatToolName (wire.FormatAsTool), whose call the gateway turns
// back into text (wire.ToolAsText).
//
// # Caching
//
// The API takes at most 4 cache_control breakpoints in a request, counting
// tools, system blocks, message blocks (tool_result content included) and a
// top-level cache_control (automatic caching, which marks the last cacheable
// block and so counts as the latest breakpoint). Breakpoints are ordered as
// the API reads the prompt: tools, system, then messages. When a request
// has more than 4, the latest 4 are kept and the earlier ones are dropped
// with a warning each. A cache_control on a thinking or redacted_thinking
// block, which the API does not take, is dropped with a warning.
//
// With Options.Cache "anthropic" the encoder adds {"type":"ephemeral"}
// breakpoints before applying the limit: on the system prompt (a string
// system prompt becomes one text block carrying it; otherwise its last
// block) and on the last block of each of the last two user messages (a
// string content becomes one text block carrying it). A breakpoint is never
// placed on a thinking or redacted_thinking block: the last block before it
// that is neither is chosen, and a message with no such block is skipped. A
// place that already has a cache_control keeps it (a "ttl" included) and
// gains nothing. Breakpoints already in the request count against the limit
// like the added ones; an added breakpoint that falls outside the latest 4
// is not added (without a warning: nothing of the request is lost). Without
// a strategy the breakpoints of the request pass through unchanged, up to
// the limit.
//
// # Warnings
//
// A warning names the place of what it is about in the input request:
// messages[2].content[1], system[0], tools[1].cache_control,
// thinking.budget_tokens. For a block inside a tool_result it names the
// tool_result, and its message starts with the place inside it
// ("content[1]: ...").
//
// EncodeRequest never changes its input. The Request it returns shares
// strings, raw JSON values and unchanged nested content with the input, so
// treat both as read-only while the other is in use.
package anthropic

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
)

// Options choose the encoder's strategies. The zero value passes the
// request through with the filter only.
type Options struct {
	// Cache is the prompt-caching strategy: "" (none: breakpoints in the
	// request pass through, up to the limit) or "anthropic" (system prompt
	// and last two user messages; see the package comment).
	Cache string `json:"cache,omitempty"`
	// Effort is how a reasoning_effort with no thinking field is sent:
	// "" or "budget" (thinking enabled with a budget), or "adaptive"
	// (adaptive thinking with output_config.effort, for models that take
	// only adaptive thinking).
	Effort string `json:"effort,omitempty"`
	// AllowBlocks names further block types to pass through, in messages
	// and in tool results (beta block types, for example).
	AllowBlocks []string `json:"allow_blocks,omitempty"`
}

// Strategy names.
const (
	CacheAnthropic = "anthropic"
	EffortBudget   = "budget"
	EffortAdaptive = "adaptive"
)

// MaxBreakpoints is how many cache_control breakpoints the API takes in one
// request.
const MaxBreakpoints = 4

// Request is the Messages API request body: the canonical request, whose
// JSON is the Messages shape.
type Request struct {
	chat.Request
}

// MarshalJSON writes the request body.
func (r Request) MarshalJSON() ([]byte, error) { return r.Request.MarshalJSON() }

// messageTypes are the block types a message may hold.
var messageTypes = map[string]bool{
	chat.TypeText: true, chat.TypeImage: true, chat.TypeDocument: true, chat.TypeToolUse: true,
	chat.TypeToolResult: true, chat.TypeThinking: true, chat.TypeRedactedThinking: true,
	"search_result": true, "server_tool_use": true, "web_search_tool_result": true,
	"web_fetch_tool_result": true, "code_execution_tool_result": true,
	"bash_code_execution_tool_result": true, "text_editor_code_execution_tool_result": true,
	"tool_search_tool_result": true, "container_upload": true,
}

// resultTypes are the block types a tool_result's content may hold.
var resultTypes = map[string]bool{
	chat.TypeText: true, chat.TypeImage: true, chat.TypeDocument: true, "search_result": true,
}

// ephemeral is the breakpoint the caching strategy adds.
const ephemeral = `{"type":"ephemeral"}`

// blockItself orders a block's own breakpoint after those of its content.
const blockItself = math.MaxInt32

// EncodeRequest converts req to the Messages API request, with the
// warnings for everything it dropped or changed. It fails only on invalid
// options.
func EncodeRequest(req chat.Request, opts Options) (*Request, []chat.Warning, error) {
	e := encoder{opts: opts, msgTypes: messageTypes, resTypes: resultTypes}
	if err := e.init(); err != nil {
		return nil, nil, err
	}
	if tool := wire.FormatTool("anthropic", req.Format); tool != "" {
		withTool, warns, err := wire.FormatAsTool(req)
		if err != nil {
			return nil, nil, err
		}
		e.warns = append(e.warns, warns...)
		req = withTool
	}
	out := req
	if err := e.format(&out); err != nil {
		return nil, e.warns, err
	}
	e.system(&out)
	e.messages(&out, req.Messages)
	e.cache(&out)
	e.params(&out, req)
	return &Request{out}, e.warns, nil
}

type encoder struct {
	opts     Options
	msgTypes map[string]bool
	resTypes map[string]bool
	warns    []chat.Warning
	// marks are the breakpoints of kept message blocks, in prompt order.
	marks []mark
	// carried are the Anthropic envelopes with thinking text in the
	// request's thought_signature blocks, in request order: a Gemini
	// client's thought parts that hold this text need no warning when
	// dropped, since the thinking block rebuilt from the envelope carries
	// it. next is the first envelope not before the block being filtered;
	// at is the message being filtered (its input index).
	carried []carriedText
	next    int
	at      int
}

// carriedText is an envelope's thinking text, where the envelope is (its
// message and block index), and how much of the text the thought parts
// before it have matched so far.
type carriedText struct {
	msg, block int
	text       string
	done       int
}

// mark is one cache breakpoint: where it is in the output (key, in prompt
// order: section 0 tools, 1 system, 2 messages, 3 the top-level field),
// where it was in the input (path) when the request has it, or whether
// the strategy plans it.
type mark struct {
	key     [4]int
	path    string
	inner   string // the place inside the tool_result at path, if any
	planned bool
}

func (e *encoder) init() error {
	switch e.opts.Cache {
	case "", CacheAnthropic:
	default:
		return fmt.Errorf("anthropic: options.cache: %q is not \"\" or %q", e.opts.Cache, CacheAnthropic)
	}
	switch e.opts.Effort {
	case "", EffortBudget, EffortAdaptive:
	default:
		return fmt.Errorf("anthropic: options.effort: %q is not \"\", %q or %q", e.opts.Effort, EffortBudget, EffortAdaptive)
	}
	if len(e.opts.AllowBlocks) > 0 {
		e.msgTypes, e.resTypes = maps.Clone(messageTypes), maps.Clone(resultTypes)
		for i, t := range e.opts.AllowBlocks {
			if t == "" || t == chat.TypeReasoning || t == chat.TypeThoughtSignature {
				return fmt.Errorf("anthropic: options.allow_blocks[%d]: %q cannot be allowed", i, t)
			}
			e.msgTypes[t], e.resTypes[t] = true, true
		}
	}
	return nil
}

func (e *encoder) warn(path, format string, args ...any) {
	e.warns = append(e.warns, chat.Warnf(path, format, args...))
}

func blank(s string) bool { return strings.TrimSpace(s) == "" }

// system drops blank system blocks; the kept blocks are a fresh slice.
func (e *encoder) system(out *chat.Request) {
	if out.System == nil || out.System.IsString {
		return
	}
	kept := make([]chat.Block, 0, len(out.System.Blocks))
	for k, b := range out.System.Blocks {
		if blank(b.Text) {
			e.warn("system["+strconv.Itoa(k)+"]", "blank text block: dropped (the API rejects empty text)")
			continue
		}
		kept = append(kept, b)
	}
	if len(kept) == 0 {
		out.System = nil
		return
	}
	out.System = &chat.Content{Blocks: kept}
}

// messages filters every message into fresh message and block slices.
func (e *encoder) messages(out *chat.Request, in []chat.Message) {
	for i := range in {
		for j, b := range in[i].Content.Blocks {
			if b.Type != chat.TypeThoughtSignature {
				continue
			}
			if s, ok := wire.OpenSignature(b.Signature); ok && s.Home == wire.HomeAnthropic && s.Thinking != "" {
				e.carried = append(e.carried, carriedText{msg: i, block: j, text: s.Thinking})
			}
		}
	}
	msgs := make([]chat.Message, 0, len(in))
	for i := range in {
		m := &in[i]
		e.at = i
		path := chat.MessagePath(i)
		if len(m.ReasoningDetails) > 0 {
			e.warn(path+".reasoning_details", "reasoning_details is not an Anthropic field: dropped")
		}
		for _, k := range chat.SortedKeys(m.Extra) {
			e.warn(path+"."+k, "an Anthropic message has only role and content: %s dropped", k)
		}
		nm := chat.Message{Role: m.Role}
		switch {
		case m.Content.IsString && blank(m.Content.Text):
			e.warn(path, "blank content: message dropped (the API rejects empty messages)")
			continue
		case m.Content.IsString:
			nm.Content = m.Content
		case len(m.Content.Blocks) == 0:
			e.warn(path, "no content: message dropped (the API rejects empty messages)")
			continue
		default:
			warned := len(e.warns)
			kept, _ := e.filter(m.Content.Blocks, path+".content", e.msgTypes, len(msgs), -1)
			if len(kept) == 0 && len(e.warns) == warned {
				// Only thoughts a rebuilt thinking block carries.
				continue
			}
			if len(kept) == 0 {
				e.warn(path, "nothing left after the filter: message dropped (the API rejects empty messages)")
				continue
			}
			nm.Content = chat.Content{Blocks: kept}
		}
		msgs = append(msgs, nm)
	}
	out.Messages = msgs
}

// filter keeps the blocks the API takes in this place and records their
// breakpoints, in a fresh slice; changed reports whether a kept block
// differs from its input. At the top level (parent -1) at is the message's
// content path and msg the output message index; inside a tool_result,
// at is the tool_result's path and parent its output index.
func (e *encoder) filter(blocks []chat.Block, at string, allowed map[string]bool, msg, parent int) (kept []chat.Block, changed bool) {
	kept = make([]chat.Block, 0, len(blocks))
	for j := range blocks {
		b := blocks[j]
		path, inner := at, ""
		if parent < 0 {
			path = blockPath(at, j)
		} else {
			inner = "content[" + strconv.Itoa(j) + "]"
		}
		drop := ""
		if parent < 0 {
			drop = e.signature(&b)
		}
		switch {
		case drop != "":
		case b.Type == chat.TypeReasoning && parent < 0 && e.isCarried(j, b.Text):
			changed = true
			continue
		case b.Type == chat.TypeReasoning:
			drop = "reasoning is ctxkit's extension block, not an Anthropic one: dropped"
		case b.Type == chat.TypeThoughtSignature:
			drop = "thought_signature is Gemini's, not an Anthropic block: dropped"
		case !allowed[b.Type] && parent >= 0:
			drop = fmt.Sprintf("a tool_result cannot hold a %s block: dropped", b.Type)
		case !allowed[b.Type]:
			drop = fmt.Sprintf("the Messages API does not take %q blocks: dropped", b.Type)
		case b.Type == chat.TypeText && blank(b.Text):
			drop = "blank text block: dropped (the API rejects empty text)"
		}
		if drop != "" {
			e.warnAt(path, inner, "", drop)
			changed = true
			continue
		}
		changed = changed || b.Type != blocks[j].Type || b.Signature != blocks[j].Signature || b.Data != blocks[j].Data
		out := len(kept)
		if b.Type == chat.TypeToolResult && b.Content != nil && !b.Content.IsString {
			nested, nestedChanged := e.filter(b.Content.Blocks, path, e.resTypes, msg, out)
			if nestedChanged || len(nested) != len(b.Content.Blocks) {
				b.Content = &chat.Content{Blocks: nested}
				changed = true
			}
		}
		if len(b.CacheControl) > 0 {
			switch {
			case b.Type == chat.TypeThinking || b.Type == chat.TypeRedactedThinking:
				e.warnAt(path, inner, ".cache_control", fmt.Sprintf("the API takes no cache_control on a %s block: dropped", b.Type))
				b.CacheControl = nil
				changed = true
			case parent >= 0:
				e.marks = append(e.marks, mark{key: [4]int{2, msg, parent, out}, path: path, inner: inner + ".cache_control"})
			default:
				e.marks = append(e.marks, mark{key: [4]int{2, msg, out, blockItself}, path: path + ".cache_control"})
			}
		}
		if b.Type == chat.TypeImage && b.Source != nil {
			if _, ok := b.Source.Extra["detail"]; ok {
				// OpenAI's resolution hint (a client of that dialect's):
				// the API refuses fields it does not know.
				src := *b.Source
				src.Extra = maps.Clone(src.Extra)
				delete(src.Extra, "detail")
				if len(src.Extra) == 0 {
					src.Extra = nil
				}
				b.Source = &src
				e.warnAt(path, inner, ".source.detail", "the Messages API has no image detail: dropped")
				changed = true
			}
		}
		kept = append(kept, b)
	}
	return kept, changed
}

// isCarried reports whether text, the reasoning block at index block of
// the message being filtered, is the next piece of the thinking of the
// first Anthropic envelope after it. A Gemini client hands its thought
// parts back in order, before the part that holds the signature (split
// one per stream chunk, or joined), so each part is matched at a cursor
// in that envelope's text: the work is the length of the parts, whatever
// the request holds. A part that does not match there is not carried
// (and is dropped with a warning).
func (e *encoder) isCarried(block int, text string) bool {
	if text == "" {
		return false
	}
	for e.next < len(e.carried) {
		c := &e.carried[e.next]
		if c.msg > e.at || c.msg == e.at && c.block > block {
			break
		}
		e.next++
	}
	if e.next == len(e.carried) {
		return false
	}
	c := &e.carried[e.next]
	if !strings.HasPrefix(c.text[c.done:], text) {
		return false
	}
	c.done += len(text)
	return true
}

// signature opens a signature ctxkit sealed (wire.SealSignature) in b, a
// message's block, and returns why b is dropped, "" to keep it. A thinking
// block keeps an Anthropic signature (the one inside the envelope) and
// loses one another provider made, which the API refuses. A
// thought_signature block holding an Anthropic envelope is the thinking
// block (or redacted thinking) a Gemini client handed back on the part
// after its thought: it becomes that block again.
func (e *encoder) signature(b *chat.Block) string {
	switch {
	case b.Type == chat.TypeThinking && b.Signature != "":
		s, sealed := wire.OpenSignature(b.Signature)
		switch {
		case !sealed:
		case s.Redacted && s.Home == wire.HomeAnthropic:
			// Anthropic's redacted thinking, which a client of another
			// dialect kept in a thinking block's place: the block it was.
			*b = chat.Block{Type: chat.TypeRedactedThinking, Data: s.Signature}
		case s.Home != wire.HomeAnthropic:
			return fmt.Sprintf("the thinking block's signature was made by %s, and the Messages API refuses it: dropped", s.Home)
		case !s.Signs(b.Thinking):
			return "the thinking this signature signs was too long for its envelope, and the block's text is not the text signed: dropped"
		default:
			b.Signature = s.Signature
			if b.Thinking == "" {
				b.Thinking = s.Thinking
			}
		}
	case b.Type == chat.TypeRedactedThinking:
		// Redacted data ctxkit sealed (a Responses client's
		// encrypted_content): Anthropic's own opened, any other refused.
		s, sealed := wire.OpenSignature(b.Data)
		switch {
		case !sealed:
		case !s.Redacted || s.Home != wire.HomeAnthropic:
			return fmt.Sprintf("the redacted_thinking block holds %s made by %s, and the Messages API refuses it: dropped", sealedWhat(s), s.Home)
		default:
			b.Data = s.Signature
		}
	case b.Type == chat.TypeThoughtSignature:
		s, sealed := wire.OpenSignature(b.Signature)
		switch {
		case !sealed || s.Home != wire.HomeAnthropic:
			// Gemini's, or another provider's: the caller's
			// thought_signature case drops it.
		case s.Redacted:
			*b = chat.Block{Type: chat.TypeRedactedThinking, Data: s.Signature}
		case s.Thinking == "":
			return "an Anthropic thinking signature came back without its thinking: dropped"
		default:
			*b = chat.Block{Type: chat.TypeThinking, Thinking: s.Thinking, Signature: s.Signature}
		}
	}
	return ""
}

// warnAt warns about the place path (a block) or, when inner is set, the
// place inner inside the tool_result at path: a warning names the block,
// and its message starts with the place inside it.
func (e *encoder) warnAt(path, inner, field, msg string) {
	if inner != "" {
		e.warns = append(e.warns, chat.Warning{Path: path, Message: inner + field + ": " + msg})
		return
	}
	e.warns = append(e.warns, chat.Warning{Path: path + field, Message: msg})
}

func blockPath(path string, j int) string { return path + "[" + strconv.Itoa(j) + "]" }

// cache adds the strategy's breakpoints and enforces the limit.
func (e *encoder) cache(out *chat.Request) {
	var marks []mark
	for i := range out.Tools {
		if len(out.Tools[i].CacheControl) > 0 {
			marks = append(marks, mark{key: [4]int{0, i}, path: "tools[" + strconv.Itoa(i) + "].cache_control"})
		}
	}
	if out.System != nil && !out.System.IsString {
		for k := range out.System.Blocks {
			if len(out.System.Blocks[k].CacheControl) > 0 {
				marks = append(marks, mark{key: [4]int{1, k}, path: "system[" + strconv.Itoa(k) + "].cache_control"})
			}
		}
	}
	if e.opts.Cache == CacheAnthropic {
		marks = append(marks, e.plan(out)...)
	}
	marks = append(marks, e.marks...)
	if _, ok := out.Extra["cache_control"]; ok {
		marks = append(marks, mark{key: [4]int{3}, path: "cache_control"})
	}
	slices.SortStableFunc(marks, func(a, b mark) int { return cmpKey(a.key, b.key) })
	if over := len(marks) - MaxBreakpoints; over > 0 {
		for _, m := range marks[:over] {
			if !m.planned {
				e.warnAt(m.path, m.inner, "", fmt.Sprintf("more than %d cache breakpoints: dropped (the latest %d are kept)", MaxBreakpoints, MaxBreakpoints))
				e.clear(out, m.key)
			}
		}
		marks = marks[over:]
	}
	for _, m := range marks {
		if m.planned {
			e.place(out, m.key)
		}
	}
}

func cmpKey(a, b [4]int) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// plan lists the strategy's breakpoints: the system prompt and the last
// two user messages, where they have none yet.
func (e *encoder) plan(out *chat.Request) []mark {
	var marks []mark
	if s := out.System; s != nil {
		switch {
		case s.IsString && !blank(s.Text):
			marks = append(marks, mark{key: [4]int{1, 0}, planned: true})
		case !s.IsString && len(s.Blocks[len(s.Blocks)-1].CacheControl) == 0:
			marks = append(marks, mark{key: [4]int{1, len(s.Blocks) - 1}, planned: true})
		}
	}
	users := 0
	for i := len(out.Messages) - 1; i >= 0 && users < 2; i-- {
		m := &out.Messages[i]
		if m.Role != chat.User {
			continue
		}
		users++
		if m.Content.IsString {
			marks = append(marks, mark{key: [4]int{2, i, 0, blockItself}, planned: true})
			continue
		}
		for j := len(m.Content.Blocks) - 1; j >= 0; j-- {
			b := &m.Content.Blocks[j]
			if b.Type == chat.TypeThinking || b.Type == chat.TypeRedactedThinking {
				continue
			}
			if len(b.CacheControl) == 0 {
				marks = append(marks, mark{key: [4]int{2, i, j, blockItself}, planned: true})
			}
			break
		}
	}
	return marks
}

// clear removes the breakpoint at key from out, copying what it changes
// that out may share with the input.
func (e *encoder) clear(out *chat.Request, key [4]int) {
	switch key[0] {
	case 0:
		out.Tools = slices.Clone(out.Tools)
		out.Tools[key[1]].CacheControl = nil
	case 1:
		out.System.Blocks[key[1]].CacheControl = nil
	case 2:
		b := &out.Messages[key[1]].Content.Blocks[key[2]]
		if key[3] == blockItself {
			b.CacheControl = nil
			return
		}
		c := *b.Content
		c.Blocks = slices.Clone(c.Blocks)
		c.Blocks[key[3]].CacheControl = nil
		b.Content = &c
	case 3:
		out.Extra = maps.Clone(out.Extra)
		delete(out.Extra, "cache_control")
	}
}

// place adds the strategy's breakpoint at key.
func (e *encoder) place(out *chat.Request, key [4]int) {
	cc := json.RawMessage(ephemeral)
	switch key[0] {
	case 1:
		if out.System.IsString {
			out.System = &chat.Content{Blocks: []chat.Block{{Type: chat.TypeText, Text: out.System.Text, CacheControl: cc}}}
			return
		}
		out.System.Blocks[key[1]].CacheControl = cc
	case 2:
		m := &out.Messages[key[1]]
		if m.Content.IsString {
			m.Content = chat.Of(chat.Block{Type: chat.TypeText, Text: m.Content.Text, CacheControl: cc})
			return
		}
		m.Content.Blocks[key[2]].CacheControl = cc
	}
}

// params resolves max_tokens, temperature, top_p, stop_sequences and
// thinking, and maps reasoning_effort (see the package comment).
func (e *encoder) params(out *chat.Request, req chat.Request) {
	rq := req
	th := req.Thinking
	adaptive := th != nil && th.Type == "adaptive"
	if adaptive && th.BudgetTokens != 0 {
		e.warn("thinking.budget_tokens", "adaptive thinking takes no budget: dropped (use reasoning_effort)")
		rq.Thinking = &chat.Thinking{Type: th.Type}
	}
	p, warns := chat.ResolveParams(rq, chat.FormatAnthropic)
	e.warns = append(e.warns, warns...)
	out.MaxTokens, out.Temperature, out.TopP, out.StopSequences = p.MaxTokens, p.Temperature, p.TopP, p.Stop
	out.ReasoningEffort = ""
	effort := req.ReasoningEffort
	switch {
	case th != nil && th.Type == "disabled":
		out.Thinking = &chat.Thinking{Type: "disabled"}
		if effort != "" {
			e.warn("reasoning_effort", "thinking is disabled: %q dropped", effort)
		}
	case adaptive || (th == nil && effort != "" && e.opts.Effort == EffortAdaptive):
		out.Thinking = &chat.Thinking{Type: "adaptive"}
		if effort != "" {
			e.outputEffort(out, effort)
		}
	case p.Reasoning:
		out.Thinking = &chat.Thinking{Type: "enabled", BudgetTokens: p.ReasoningBudget}
		if effort != "" && th != nil && th.BudgetTokens != 0 {
			e.warn("reasoning_effort", "thinking.budget_tokens is given: %q dropped", effort)
		}
	}
}

// format sends the request's json_schema format as output_config.format
// {"type":"json_schema","schema"}, beside what output_config holds (a
// json_object format has become a tool before).
func (e *encoder) format(out *chat.Request) error {
	f := out.Format
	if f == nil {
		return nil
	}
	out.Format = nil
	cfg := map[string]json.RawMessage{}
	if raw, ok := out.Extra["output_config"]; ok {
		if err := json.Unmarshal(raw, &cfg); err != nil || cfg == nil {
			return &chat.Error{Code: chat.CodeInvalidValue, Path: "output_config", Msg: "must be a JSON object"}
		}
	}
	format, err := json.Marshal(struct {
		Type   string          `json:"type"`
		Schema json.RawMessage `json:"schema"`
	}{f.Type, f.Schema})
	if err != nil {
		return &chat.Error{Code: chat.CodeInvalidValue, Path: "output_config.format.schema", Msg: err.Error(), Err: err}
	}
	cfg["format"] = format
	raw, _ := json.Marshal(cfg)
	out.Extra = maps.Clone(out.Extra)
	if out.Extra == nil {
		out.Extra = map[string]json.RawMessage{}
	}
	out.Extra["output_config"] = raw
	return nil
}

// outputEffort sends an effort as output_config.effort.
func (e *encoder) outputEffort(out *chat.Request, effort string) {
	if effort == "minimal" {
		e.warn("reasoning_effort", "Anthropic has no minimal effort: sent as low")
		effort = "low"
	}
	cfg := map[string]json.RawMessage{}
	if raw, ok := out.Extra["output_config"]; ok {
		if err := json.Unmarshal(raw, &cfg); err != nil || cfg == nil {
			e.warn("reasoning_effort", "output_config is not a JSON object: %q dropped", effort)
			return
		}
		if _, ok := cfg["effort"]; ok {
			e.warn("reasoning_effort", "output_config.effort is given: %q dropped", effort)
			return
		}
	}
	cfg["effort"] = json.RawMessage(strconv.Quote(effort))
	raw, err := json.Marshal(cfg)
	if err != nil {
		e.warn("reasoning_effort", "output_config: %v: %q dropped", err, effort)
		return
	}
	out.Extra = maps.Clone(out.Extra)
	if out.Extra == nil {
		out.Extra = map[string]json.RawMessage{}
	}
	out.Extra["output_config"] = raw
}

// sealedWhat names what an envelope holds, for a warning.
func sealedWhat(s wire.Sealed) string {
	if s.Redacted {
		return "redacted thinking"
	}
	return "a signature"
}
