package bedrock

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
)

// A point is a cache point to insert: after tools[blk] (msg == toolsMsg),
// after system[blk] (msg == systemMsg) or after messages[msg].content[blk];
// blk == endBlk puts it at the end of the field or message. Points sort in
// prompt order by (msg, blk).
type point struct {
	msg, blk int
	ttl      string
	path     string // the mark it comes from, for warnings
}

const (
	toolsMsg  = -2
	systemMsg = -1
	endBlk    = math.MaxInt
)

func (p point) cachePoint() *CachePointBlock {
	return &CachePointBlock{Type: "default", TTL: p.ttl}
}

// limits are a model's caching limits: at most maxPoints cache points a
// request, each covering at least minTokens tokens since the previous one,
// in the fields named.
type limits struct {
	maxPoints, minTokens    int
	tools, system, messages bool
}

// modelLimits is matched in order against the lower-cased model id; the
// first entry whose text the id contains applies.
var modelLimits = []struct {
	match string
	lim   limits
}{
	{"claude-opus-4-5", limits{4, 4096, true, true, true}},
	{"claude-haiku-4-5", limits{4, 4096, true, true, true}},
	{"claude-3-5-haiku", limits{4, 2048, true, true, true}},
	{"claude-3-haiku", limits{4, 2048, true, true, true}},
	{"claude", limits{4, 1024, true, true, true}},
	{"nova", limits{4, 1000, false, true, true}},
}

// defaultLimits apply to a model the table does not know.
var defaultLimits = limits{maxPoints: 1, minTokens: 2048, system: true, messages: true}

func (e *encoder) limits() limits {
	id := e.opts.Model
	if id == "" {
		id = e.req.Model
	}
	id = strings.ToLower(id)
	lim := defaultLimits
	for _, m := range modelLimits {
		if strings.Contains(id, m.match) {
			lim = m.lim
			break
		}
	}
	if e.opts.MaxPoints > 0 {
		lim.maxPoints = e.opts.MaxPoints
	}
	if e.opts.MinTokens > 0 {
		lim.minTokens = e.opts.MinTokens
	}
	return lim
}

// marks lists the request's cache_control marks in prompt order, one point
// per place. With pass set they are being mapped: the ttl is read, tool
// marks count only when the tools are sent, and a mark inside a tool
// result moves after the tool result (warning).
func (e *encoder) marks(pass, sendTools bool) []point {
	var pts []point
	add := func(p point, cc json.RawMessage) {
		if n := len(pts); n > 0 && pts[n-1].msg == p.msg && pts[n-1].blk == p.blk {
			return
		}
		if pass {
			p.ttl = e.ttl(p.path, cc)
		}
		pts = append(pts, p)
	}
	if sendTools || !pass {
		for i := range e.req.Tools {
			if cc := e.req.Tools[i].CacheControl; len(cc) > 0 {
				add(point{msg: toolsMsg, blk: i, path: "tools[" + strconv.Itoa(i) + "]"}, cc)
			}
		}
	}
	if s := e.req.System; s != nil {
		for j := range s.Blocks {
			if cc := s.Blocks[j].CacheControl; len(cc) > 0 {
				add(point{msg: systemMsg, blk: j, path: "system[" + strconv.Itoa(j) + "]"}, cc)
			}
		}
	}
	for i := range e.req.Messages {
		c := &e.req.Messages[i].Content
		for j := range c.Blocks {
			b := &c.Blocks[j]
			if len(b.CacheControl) > 0 {
				add(point{msg: i, blk: j, path: chat.BlockPath(i, j)}, b.CacheControl)
			}
			if b.Type != chat.TypeToolResult || b.Content == nil {
				continue
			}
			for k := range b.Content.Blocks {
				if cc := b.Content.Blocks[k].CacheControl; len(cc) > 0 {
					path := chat.BlockPath(i, j) + ".content[" + strconv.Itoa(k) + "]"
					if pass {
						e.warnf(path, "cache_control inside a tool result: Converse takes cache points between a message's blocks: placed after the tool result")
					}
					add(point{msg: i, blk: j, path: path}, cc)
				}
			}
		}
	}
	return pts
}

// ttl reads a cache_control's ttl: "5m" and "1h" are carried.
func (e *encoder) ttl(path string, cc json.RawMessage) string {
	var v struct {
		TTL string `json:"ttl"`
	}
	if json.Unmarshal(cc, &v) != nil || v.TTL == "" {
		return ""
	}
	if v.TTL != "5m" && v.TTL != "1h" {
		e.warnf(path, "cache_control ttl %q is not 5m or 1h: not sent", v.TTL)
		return ""
	}
	return v.TTL
}

// passThrough maps the request's own marks in the fields the model caches,
// keeping the latest ones when there are more than the model takes.
func (e *encoder) passThrough(lim limits, sendTools bool) []point {
	pts := e.marks(true, sendTools)
	kept := pts[:0]
	for _, p := range pts {
		switch {
		case p.msg == toolsMsg && !lim.tools:
			e.warnf(p.path, "cache_control: the model does not cache tools: dropped")
		case p.msg == systemMsg && !lim.system:
			e.warnf(p.path, "cache_control: the model does not cache the system prompt: dropped")
		case p.msg >= 0 && !lim.messages:
			e.warnf(p.path, "cache_control: the model does not cache messages: dropped")
		default:
			kept = append(kept, p)
		}
	}
	pts = kept
	if over := len(pts) - lim.maxPoints; over > 0 {
		for _, p := range pts[:over] {
			e.warnf(p.path, "cache_control: the model takes %s a request and the latest marks are kept: dropped", points(lim.maxPoints))
		}
		pts = pts[over:]
	}
	return pts
}

// points is "1 cache point" or "N cache points".
func points(n int) string {
	if n == 1 {
		return "1 cache point"
	}
	return strconv.Itoa(n) + " cache points"
}

// strategy is the multi-point strategy: see the package documentation.
func (e *encoder) strategy(lim limits, specs []ToolSpecification, sendTools bool) ([]point, CacheState) {
	var pts []point
	var st CacheState
	minTok, free, carry := lim.minTokens, lim.maxPoints, 0
	place := func(field string, msg, tokens int) {
		pts = append(pts, point{msg: msg, blk: endBlk})
		index := msg
		if msg < 0 {
			index = 0
		}
		st.Placements = append(st.Placements, Placement{Field: field, Index: index, Tokens: tokens})
		free--
	}
	if sendTools {
		t := 0
		for k := range specs {
			t += estimate(len(specs[k].Name) + len(specs[k].Description) + jsonLen(specs[k].InputSchema.JSON))
		}
		carry += t
		if lim.tools && free > 0 && t > 0 && carry >= minTok {
			place("tools", toolsMsg, carry)
			carry = 0
		}
	}
	if s := e.req.System; s != nil {
		t := systemTokens(s)
		carry += t
		if lim.system && free > 0 && t > 0 && carry >= minTok {
			place("system", systemMsg, carry)
			carry = 0
		}
	}
	msgs := e.req.Messages
	if !lim.messages || free <= 0 || len(msgs) == 0 {
		return pts, st
	}
	toks := make([]int, len(msgs))
	cand := make([]bool, len(msgs))
	for i := range msgs {
		toks[i] = contentTokens(&msgs[i].Content)
		cand[i] = msgs[i].Role == chat.User && toks[i] > 0
	}
	idx, rt := e.previous(toks, cand, carry, free)
	if idx == nil {
		idx, rt = firstPlacements(toks, cand, carry, free, minTok)
	} else {
		idx, rt = nextPlacements(toks, cand, idx, rt, free, minTok)
	}
	for k, i := range idx {
		place("messages", i, rt[k])
	}
	return pts, st
}

// previous reads the message placements of Options.State and checks them
// against this request: ascending, on user messages with content, no more
// than the free points, and each range still holding the tokens it held.
// It returns nil when there are none or they do not match (warning).
func (e *encoder) previous(toks []int, cand []bool, carry, free int) (idx, rt []int) {
	s := e.opts.State
	if s == nil {
		return nil, nil
	}
	for _, p := range s.Placements {
		if p.Field == "messages" {
			idx = append(idx, p.Index)
			rt = append(rt, p.Tokens)
		}
	}
	if len(idx) == 0 {
		return nil, nil
	}
	why := ""
	start, acc := 0, carry
	for k, i := range idx {
		if i < start || i >= len(toks) || !cand[i] {
			why = fmt.Sprintf("no user message with content at index %d after the previous placement", i)
			break
		}
		for ; start <= i; start++ {
			acc += toks[start]
		}
		if acc != rt[k] {
			why = fmt.Sprintf("the range ending at message %d holds %d tokens, not %d", i, acc, rt[k])
			break
		}
		acc = 0
	}
	if why == "" && len(idx) > free {
		why = fmt.Sprintf("%d message placements for %d free cache points", len(idx), free)
	}
	if why != "" {
		e.warnf("options.state", "the cache state does not match this request (%s): cache points placed afresh", why)
		return nil, nil
	}
	return idx, rt
}

// firstPlacements splits the messages into ranges that each reach minTok
// tokens and end on a user message, extends the last range to the last
// user message, and merges the adjacent ranges with the fewest combined
// tokens until the ranges fit the free points. It returns the messages
// the points follow and the tokens of their ranges.
func firstPlacements(toks []int, cand []bool, carry, free, minTok int) (idx, rt []int) {
	acc := carry
	for i, t := range toks {
		acc += t
		if cand[i] && acc >= minTok {
			idx = append(idx, i)
			rt = append(rt, acc)
			acc = 0
		}
	}
	if len(idx) == 0 {
		return nil, nil
	}
	last, extra := len(idx)-1, 0
	for i := idx[last] + 1; i < len(toks); i++ {
		extra += toks[i]
		if cand[i] {
			idx[last] = i
			rt[last] += extra
			extra = 0
		}
	}
	for len(idx) > free {
		k := smallestPair(rt)
		rt[k+1] += rt[k]
		idx = append(idx[:k], idx[k+1:]...)
		rt = append(rt[:k], rt[k+1:]...)
	}
	return idx, rt
}

// nextPlacements keeps the previous placements and adds one for the new
// messages when they reach minTok tokens up to their last user message: in a
// free point, or else in the point freed by merging the two adjacent
// ranges with the fewest combined tokens, if the new tokens are at least
// 1.2 times those (with a single point: 1.2 times its range, and the point
// moves).
func nextPlacements(toks []int, cand []bool, prev, prevRt []int, free, minTok int) (idx, rt []int) {
	idx = append([]int(nil), prev...)
	rt = append([]int(nil), prevRt...)
	last := idx[len(idx)-1]
	u, added, acc := -1, 0, 0
	for i := last + 1; i < len(toks); i++ {
		acc += toks[i]
		if cand[i] {
			u, added = i, acc
		}
	}
	switch {
	case u < 0 || added < minTok:
	case len(idx) < free:
		idx, rt = append(idx, u), append(rt, added)
	case len(idx) >= 2:
		k := smallestPair(rt)
		if gap := rt[k] + rt[k+1]; added*5 >= gap*6 {
			rt[k+1] = gap
			idx = append(append(idx[:k], idx[k+1:]...), u)
			rt = append(append(rt[:k], rt[k+1:]...), added)
		}
	default:
		if added*5 >= rt[0]*6 {
			idx, rt = []int{u}, []int{rt[0] + added}
		}
	}
	return idx, rt
}

// smallestPair is the k for which rt[k]+rt[k+1] is least (the first on a
// tie); len(rt) >= 2.
func smallestPair(rt []int) int {
	best := 0
	for k := 1; k+1 < len(rt); k++ {
		if rt[k]+rt[k+1] < rt[best]+rt[best+1] {
			best = k
		}
	}
	return best
}

// mediaTokens is the estimate for an image or a binary document.
const mediaTokens = 1600

// jsonLen is the length of raw JSON without its insignificant whitespace,
// so that the estimate does not depend on how the JSON was laid out.
func jsonLen(raw json.RawMessage) int {
	n, in, esc := 0, false, false
	for _, c := range raw {
		switch {
		case in:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				in = false
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		case c == '"':
			in = true
		}
		n++
	}
	return n
}

// estimate is the token estimate of n bytes of text: n/4, rounded up.
func estimate(n int) int { return (n + 3) / 4 }

// textTokens estimates a text block; blank text is omitted, so counts 0.
func textTokens(s string) int {
	if isBlank(s) {
		return 0
	}
	return estimate(len(s))
}

func systemTokens(s *chat.Content) int {
	if s.IsString {
		return textTokens(s.Text)
	}
	t := 0
	for j := range s.Blocks {
		if b := &s.Blocks[j]; b.Type == chat.TypeText {
			t += textTokens(b.Text)
		}
	}
	return t
}

func contentTokens(c *chat.Content) int {
	if c.IsString {
		return textTokens(c.Text)
	}
	t := 0
	for j := range c.Blocks {
		t += blockTokens(&c.Blocks[j])
	}
	return t
}

func blockTokens(b *chat.Block) int {
	switch b.Type {
	case chat.TypeText:
		return textTokens(b.Text)
	case chat.TypeReasoning:
		return estimate(len(b.Text))
	case chat.TypeThinking:
		return estimate(len(b.Thinking))
	case chat.TypeRedactedThinking:
		return estimate(len(b.Data))
	case chat.TypeImage:
		if img, _ := image(b.Source); img == nil {
			// Converse cannot carry it: the text stub is what is sent.
			return textTokens(chat.ImageStub(b.Source))
		}
		return mediaTokens
	case chat.TypeDocument:
		return documentTokens(b)
	case chat.TypeToolUse:
		return estimate(len(b.Name) + jsonLen(b.Input))
	case chat.TypeToolResult:
		if b.Content == nil {
			return 0
		}
		return contentTokens(b.Content)
	}
	return 0
}

// documentTokens estimates a document block as encoder.document sends it:
// a text source as its text, bytes and S3 objects Converse takes as
// media, one it cannot take as the text stub that replaces it, and an
// empty one (omitted) as nothing.
func documentTokens(b *chat.Block) int {
	s := b.Source
	switch {
	case s == nil:
	case s.Type == "base64" && docFormat(s.MediaType) != "":
		if s.Data == "" {
			return 0
		}
		return mediaTokens
	case s.Type == "text":
		return estimate(len(s.Data))
	case s.Type == "url" && strings.HasPrefix(s.URL, "s3://"):
		if docFormat(s.MediaType) != "" || docFormat(extType(s.URL)) != "" {
			return mediaTokens
		}
	}
	return textTokens(chat.DocumentStub(b))
}
