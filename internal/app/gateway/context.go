package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/textcut"
	"github.com/ctxkit/ctxkit/internal/tokencount"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/anthropic"
)

// Context from the store, on request: a client that sends the header
// x-ctxkit-context gets the views of the breadcrumbs it names (those its
// caller may read) added to its request as one system block, before its
// own system prompt. Without the header a request is sent as it came and
// the store is not asked.
//
// The header is a selector: parts separated by ";", each
//
//	tag:NAME     a tag the breadcrumbs must have (tag=NAME too; repeat for more, all must match)
//	q=TEXT       a search query in the store's syntax (words, "phrases", OR, -word, prefix*)
//	n=N          at most N items (1..20, default 5)
//	budget=T     the block takes at most T tokens (1..16000, default 2000)
//
// for example "tag:project-x; q=deployment runbook; n=3; budget=1500".
// A tag or a query is required; with a query the items come best match
// first, with tags alone newest first. Spaces around parts and values are
// ignored; a value cannot hold ";".
const (
	ContextHeader = "X-Ctxkit-Context"
	// ContextIDsHeader lists the ids of the breadcrumbs added, comma
	// separated, in the order of the block; it is absent when none was.
	ContextIDsHeader = "X-Ctxkit-Context-Ids"
)

// contextParam is the header as the param of an error response.
const contextParam = "x-ctxkit-context"

// Selector limits. The header is bounded before it is read; its parts
// within it.
const (
	maxSelectorBytes     = 1024
	maxSelectorTags      = 8
	maxSelectorTagBytes  = 128
	maxSelectorQuery     = 512
	defaultContextItems  = 5
	maxContextItems      = 20
	defaultContextBudget = 2000
	maxContextBudget     = 16000
	// maxContextCandidates bounds the items of a source read: a source
	// that returns more has the rest ignored.
	maxContextCandidates = 128
	// maxBytesPerToken: a view longer than this many bytes for each token
	// left in the budget is left out without being counted, so that a
	// view of megabytes costs no tokenizer time. Text averages about 4
	// bytes a token; 32 leaves room for the exceptions.
	maxBytesPerToken = 32
)

// Selector is what a client asks for in x-ctxkit-context.
type Selector struct {
	Tags   []string // every tag must match
	Query  string   // a search query in the store's syntax; "" = tags alone
	Max    int      // items added at most
	Budget int      // tokens the block may take
}

// ContextItem is one breadcrumb a source offers: its id, its title and its
// view (the breadcrumb's llm_hints applied, never the full record).
type ContextItem struct {
	ID    string
	Title string
	View  json.RawMessage
	// Omit says why the item may not be added ("its view fell back");
	// "" when it may. An omitted item met while the block is still
	// filling is named in the response's warnings.
	Omit string
}

// ContextSource finds the breadcrumbs of a selector that the caller of ctx
// may read, best first (newest first for tags alone). It offers more
// candidates than sel.Max when there are (items left out for the budget
// make room for later ones). warnings are notes for X-Ctxkit-Warnings. An
// *Error it returns is answered as it is; any other error as the
// gateway's failure.
type ContextSource interface {
	Context(ctx context.Context, sel Selector) (items []ContextItem, warnings []string, err error)
}

// SetContextSource makes src answer x-ctxkit-context. It is called once,
// before the gateway serves; without a source the header is refused.
func (g *Gateway) SetContextSource(src ContextSource) { g.ctxSource = src }

// selectorError is a fault of the header, naming the part at fault.
func selectorError(format string, args ...any) *Error {
	msg := contextParam + ": " + fmt.Sprintf(format, args...)
	return &Error{Code: CodeInvalidRequest, Status: http.StatusBadRequest, Path: contextParam, Msg: msg, Err: errors.New(msg)}
}

// parseSelector reads the value of x-ctxkit-context.
func parseSelector(s string) (Selector, error) {
	sel := Selector{Max: defaultContextItems, Budget: defaultContextBudget}
	if len(s) > maxSelectorBytes {
		return sel, selectorError("%d bytes; the limit is %d", len(s), maxSelectorBytes)
	}
	if !utf8.ValidString(s) {
		return sel, selectorError("not valid UTF-8")
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }); i >= 0 {
		return sel, selectorError("a control character at byte %d", i)
	}
	if strings.TrimSpace(s) == "" {
		return sel, selectorError("empty: name tags (tag:NAME) or a query (q=TEXT)")
	}
	seen := map[string]bool{}
	for i, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			return sel, selectorError("part %d is empty (parts are separated by one \";\")", i+1)
		}
		name, value, ok := strings.Cut(part, "=")
		if tag, isTag := strings.CutPrefix(part, "tag:"); isTag {
			// tag:NAME, whose NAME may itself hold "=".
			name, value, ok = "tag", tag, true
		}
		if !ok {
			return sel, selectorError("part %d %q: not name=value (tag:NAME, q=TEXT, n=N, budget=TOKENS)", i+1, textcut.Clip(part, 40, "..."))
		}
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if name != "tag" {
			if seen[name] {
				return sel, selectorError("%s: given twice", name)
			}
			seen[name] = true
		}
		switch name {
		case "tag":
			switch {
			case value == "":
				return sel, selectorError("tag: empty")
			case len(value) > maxSelectorTagBytes:
				return sel, selectorError("tag: %d bytes; the limit is %d", len(value), maxSelectorTagBytes)
			case len(sel.Tags) == maxSelectorTags:
				return sel, selectorError("tag: more than %d tags", maxSelectorTags)
			}
			sel.Tags = append(sel.Tags, value)
		case "q":
			switch {
			case value == "":
				return sel, selectorError("q: empty")
			case len(value) > maxSelectorQuery:
				return sel, selectorError("q: %d bytes; the limit is %d", len(value), maxSelectorQuery)
			}
			sel.Query = value
		case "n":
			n, err := boundedInt(value, maxContextItems)
			if err != nil {
				return sel, selectorError("n: %q is not a whole number from 1 to %d", textcut.Clip(value, 40, "..."), maxContextItems)
			}
			sel.Max = n
		case "budget":
			n, err := boundedInt(value, maxContextBudget)
			if err != nil {
				return sel, selectorError("budget: %q is not a whole number of tokens from 1 to %d", textcut.Clip(value, 40, "..."), maxContextBudget)
			}
			sel.Budget = n
		default:
			return sel, selectorError("%q: not a part ctxkit knows (tag:, q=, n=, budget=)", textcut.Clip(name, 40, "..."))
		}
	}
	if len(sel.Tags) == 0 && sel.Query == "" {
		return sel, selectorError("name tags (tag:NAME) or a query (q=TEXT)")
	}
	return sel, nil
}

// boundedInt reads a decimal from 1 to limit.
func boundedInt(s string, limit int) (int, error) {
	if s == "" || len(s) > 6 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, errors.New("not a number")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > limit {
		return 0, errors.New("out of range")
	}
	return n, nil
}

// addContext adds the context x-ctxkit-context asks for to req, as the
// first block of its system prompt, and says what it added in
// X-Ctxkit-Context-Ids and X-Ctxkit-Warnings. Without the header it does
// nothing. The client's own request (which req may share the system
// prompt with) is not changed.
func (g *Gateway) addContext(w http.ResponseWriter, r *http.Request, req *chat.Request) error {
	values := r.Header.Values(ContextHeader)
	if len(values) == 0 {
		return nil
	}
	if len(values) > 1 {
		return selectorError("sent %d times; send one selector", len(values))
	}
	sel, err := parseSelector(values[0])
	if err != nil {
		return err
	}
	if g.ctxSource == nil {
		return selectorError("this gateway has no store to take context from")
	}
	items, warns, err := g.ctxSource.Context(r.Context(), sel)
	if err != nil {
		var e *Error
		switch {
		case r.Context().Err() != nil:
			return errClientGone
		case errors.As(err, &e):
			return e
		}
		g.opts.Logger.Error("gateway context", "err", err.Error())
		return &Error{Code: CodeAPI, Status: http.StatusInternalServerError, Path: contextParam,
			Msg: contextParam + ": the context could not be read from the store", Err: err}
	}
	block, ids, more, err := renderContext(items, sel)
	if err != nil {
		return err
	}
	warns = append(warns, more...)
	if len(ids) == 0 {
		warns = append(warns, contextParam+": no breadcrumb the caller may read was added")
	} else {
		placeCacheMark(req, &block, &warns)
		sys := []chat.Block{block}
		if req.System != nil {
			sys = append(sys, req.System.AsBlocks()...)
		}
		req.System = &chat.Content{Blocks: sys}
		w.Header().Set(ContextIDsHeader, strings.Join(ids, ","))
	}
	addWarnings(w.Header(), warns)
	return nil
}

// The block's elements. A view that holds one of them has its "<"
// escaped, so that no item can end the block or pose as another.
const (
	contextOpen  = "<ctxkit-context>\n"
	contextClose = "</ctxkit-context>"
)

// renderContext renders the items of sel as one text block:
//
//	<ctxkit-context>
//	<breadcrumb id="ID" title="TITLE">
//	VIEW
//	</breadcrumb>
//	...
//	</ctxkit-context>
//
// in the order given, at most sel.Max of them, and no more than sel.Budget
// tokens (o200k_base) in all. An item that would pass the budget is left
// out and a later, smaller one may still fit. A view that is a JSON string
// is its text; any other view its compact JSON. ids are those added, in
// order; warns name the items left out.
func renderContext(items []ContextItem, sel Selector) (block chat.Block, ids, warns []string, err error) {
	codec, err := tokencount.Codec("")
	if err != nil {
		return block, nil, nil, err
	}
	count := func(s string) int {
		n, err := codec.Count(s)
		if err != nil {
			// The tokenizer fails on no text; a failure counts as too
			// large.
			return sel.Budget + 1
		}
		return n
	}
	var text strings.Builder
	text.WriteString(contextOpen)
	used := count(contextOpen) + count(contextClose)
	for i := range items[:min(len(items), maxContextCandidates)] {
		if len(ids) == sel.Max {
			break
		}
		it := &items[i]
		if it.Omit != "" {
			warns = append(warns, fmt.Sprintf("%s: %s left out: %s", contextParam, it.ID, it.Omit))
			continue
		}
		left := sel.Budget - used
		elem, ok := renderItem(it, left*maxBytesPerToken)
		if !ok {
			warns = append(warns, fmt.Sprintf("%s: %s left out: larger than the %d tokens left of the budget", contextParam, it.ID, max(left, 0)))
			continue
		}
		n := count(elem)
		if n > left {
			warns = append(warns, fmt.Sprintf("%s: %s left out: %d tokens, %d left of the budget", contextParam, it.ID, n, max(left, 0)))
			continue
		}
		text.WriteString(elem)
		used += n
		ids = append(ids, it.ID)
	}
	text.WriteString(contextClose)
	return chat.Block{Type: chat.TypeText, Text: text.String()}, ids, warns, nil
}

// renderItem is one item's element, or false when it is longer than
// limit bytes.
func renderItem(it *ContextItem, limit int) (string, bool) {
	view := viewText(it.View)
	var b strings.Builder
	b.WriteString(`<breadcrumb id="`)
	b.WriteString(attr(it.ID))
	b.WriteString(`" title="`)
	b.WriteString(attr(it.Title))
	b.WriteString("\">\n")
	b.WriteString(view)
	b.WriteString("\n</breadcrumb>\n")
	if b.Len() > limit {
		return "", false
	}
	return b.String(), true
}

// viewText is a view as the model reads it: a JSON string's text, any
// other value its compact JSON, with the block's own elements escaped.
func viewText(v json.RawMessage) string {
	var s string
	if len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &s) == nil {
		return escapeElements(s, "&lt;")
	}
	var c bytes.Buffer
	if err := json.Compact(&c, v); err != nil {
		// Views are JSON; this is text all the same.
		return escapeElements(string(v), "&lt;")
	}
	// In JSON, \u003c is the same "<".
	return escapeElements(c.String(), `\u003c`)
}

// escapeElements replaces the "<" of every opening or closing tag of the
// block's elements (breadcrumb, ctxkit-context, in any case) by lt.
func escapeElements(s, lt string) string {
	if !strings.Contains(s, "<") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		rest := strings.TrimPrefix(s[i+1:], "/")
		if hasPrefixFold(rest, "breadcrumb") || hasPrefixFold(rest, "ctxkit-context") {
			b.WriteString(lt)
		} else {
			b.WriteByte('<')
		}
		s = s[i+1:]
	}
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// attr is s as an attribute value: on one line, with & < > " escaped.
var attrEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "\r", " ", "\n", " ", "\t", " ")

func attr(s string) string { return attrEscaper.Replace(s) }

// ephemeral is the cache point placed after the context block.
var ephemeral = json.RawMessage(`{"type":"ephemeral"}`)

// placeCacheMark marks block as a cache point, unless req already has
// as many as Anthropic takes (a point of the client's would be dropped to
// make room). The upstreams that cache a prompt's prefix on request
// (anthropic, bedrock) place it; the others' encoders leave it out
// without a word, so the request is the same to them with or without it.
func placeCacheMark(req *chat.Request, block *chat.Block, warns *[]string) {
	if n := cacheMarks(req); n >= anthropic.MaxBreakpoints {
		*warns = append(*warns, fmt.Sprintf("%s: no cache point after the context: the request has %d already", contextParam, n))
		return
	}
	block.CacheControl = ephemeral
}

// cacheMarks counts the cache points a request places.
func cacheMarks(req *chat.Request) int {
	n := 0
	for i := range req.Tools {
		if len(req.Tools[i].CacheControl) > 0 {
			n++
		}
	}
	blocks := func(bs []chat.Block) {
		for i := range bs {
			if len(bs[i].CacheControl) > 0 {
				n++
			}
			if c := bs[i].Content; c != nil {
				for j := range c.Blocks {
					if len(c.Blocks[j].CacheControl) > 0 {
						n++
					}
				}
			}
		}
	}
	if req.System != nil {
		blocks(req.System.Blocks)
	}
	for i := range req.Messages {
		blocks(req.Messages[i].Content.Blocks)
	}
	if _, ok := req.Extra["cache_control"]; ok {
		n++
	}
	return n
}

// addWarnings adds warns to the X-Ctxkit-Warnings header h may already
// have (one value: a client reads one).
func addWarnings(h http.Header, warns []string) {
	if len(warns) == 0 {
		return
	}
	v := wire.WarningsHeader(warns)
	if old := h.Get(WarningsHeader); old != "" {
		v = old + "; " + v
	}
	h.Set(WarningsHeader, v)
}
