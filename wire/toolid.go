package wire

import (
	"crypto/sha256"
	"iter"
	"strconv"

	"github.com/ctxkit/ctxkit/chat"
)

// Alphabets of tool-call ids, for a ToolIDRule.
const (
	// IDAlnum is [A-Za-z0-9] (Mistral's ids).
	IDAlnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	// IDWord is [A-Za-z0-9_-] (Anthropic's and Bedrock's ids).
	IDWord = IDAlnum + "_-"
)

// ToolIDRule says which tool-call ids a provider accepts in a request —
// the ids of tool_use blocks and the tool_use_id of the tool_result
// blocks that answer them — and what an id it would refuse becomes. A
// client may send ids another provider made (Kimi's
// "functions.get_weather:0", OpenAI's "call_…", a 64-character id from
// Bedrock): passed on unchanged, they make the upstream answer 400, so the
// gateway rewrites them with RewriteToolIDs.
//
// The zero rule accepts every id (Gemini's: its calls have no ids).
type ToolIDRule struct {
	// Alphabet holds every byte an accepted id may contain; "" accepts
	// any byte.
	Alphabet string
	// MinLen and MaxLen bound an accepted id's length in bytes; MaxLen 0
	// sets no upper bound.
	MinLen, MaxLen int
	// Prefix starts every id ctxkit makes for the provider, and Len is
	// the made id's whole length: Prefix, then Len-len(Prefix) digits of
	// the SHA-256 of the client's id written in Alphabet (in IDAlnum when
	// Alphabet is ""). Prefix must be of Alphabet, and Len within MinLen
	// and MaxLen.
	Prefix string
	Len    int
}

// Valid reports whether the provider accepts id.
func (r ToolIDRule) Valid(id string) bool {
	c := r.checker()
	return c.valid(id)
}

// idChecker is a rule made ready to check many ids: its alphabet as a
// set of bytes.
type idChecker struct {
	min, max int
	any      bool
	set      [256 / 64]uint64
}

func (r ToolIDRule) checker() idChecker {
	c := idChecker{min: r.MinLen, max: r.MaxLen, any: r.Alphabet == ""}
	for i := 0; i < len(r.Alphabet); i++ {
		b := r.Alphabet[i]
		c.set[b/64] |= 1 << (b % 64)
	}
	return c
}

func (c *idChecker) valid(id string) bool {
	if len(id) < c.min || c.max > 0 && len(id) > c.max {
		return false
	}
	if c.any {
		return true
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		if c.set[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

// maxIDTries bounds how many candidates RewriteToolIDs derives for one id
// whose first candidate is taken. Each candidate is a fresh hash, so a
// second try is already as rare as a SHA-256 prefix collision (or an id a
// client made on purpose); the bound only guards against a rule whose
// made ids have no digits at all.
const maxIDTries = 64

// made is the n-th candidate for id under r: Prefix, then digits of
// SHA-256(id) (n = 0) or of SHA-256(id, NUL, n), more blocks of the hash
// (id, NUL, n, NUL, block) when Len asks for more than 32 digits.
func (r ToolIDRule) made(id string, n int) string {
	digits := r.Alphabet
	if digits == "" {
		digits = IDAlnum
	}
	b := make([]byte, 0, max(r.Len, len(r.Prefix)))
	b = append(b, r.Prefix...)
	for block := 0; len(b) < r.Len; block++ {
		var sum [32]byte
		switch {
		case n == 0 && block == 0:
			sum = sha256.Sum256([]byte(id))
		default:
			seed := id + "\x00" + strconv.Itoa(n)
			if block > 0 {
				seed += "\x00" + strconv.Itoa(block)
			}
			sum = sha256.Sum256([]byte(seed))
		}
		for _, c := range sum {
			if len(b) == r.Len {
				break
			}
			b = append(b, digits[int(c)%len(digits)])
		}
	}
	return string(b)
}

// ToolIDMap maps the ids RewriteToolIDs made back to the client's. A nil
// *ToolIDMap (nothing was rewritten) maps every id to itself.
type ToolIDMap struct {
	back map[string]string // made id → the client's id
}

// taken reports whether a made id is already an id of the request.
func (m *ToolIDMap) taken(id string, kept map[string]bool) bool {
	_, made := m.back[id]
	return made || kept[id]
}

// Restore is the client's id for an id of the upstream: the client's own
// when id is one RewriteToolIDs made for it, id itself otherwise.
func (m *ToolIDMap) Restore(id string) string {
	if m == nil {
		return id
	}
	if orig, ok := m.back[id]; ok {
		return orig
	}
	return id
}

// Chunks passes chunks on with the client's ids restored in tool-call
// starts (the only chunks that carry an id); with a nil map it is chunks
// itself.
func (m *ToolIDMap) Chunks(chunks iter.Seq2[chat.Chunk, error]) iter.Seq2[chat.Chunk, error] {
	if m == nil {
		return chunks
	}
	return func(yield func(chat.Chunk, error) bool) {
		for c, err := range chunks {
			if c.Type == chat.ChunkToolCallStart {
				c.ID = m.Restore(c.ID)
			}
			if !yield(c, err) {
				return
			}
		}
	}
}

// Response restores the client's ids in r's tool_use blocks, for a
// response that was not streamed.
func (m *ToolIDMap) Response(r *chat.Response) {
	if m == nil {
		return
	}
	for i := range r.Content {
		if b := &r.Content[i]; b.Type == chat.TypeToolUse {
			b.ID = m.Restore(b.ID)
		}
	}
}

// RewriteToolIDs returns req with every tool-call id that rule refuses —
// a tool_use block's id, a tool_result block's tool_use_id — replaced by
// one it accepts, and the map that gives the client its own ids back in
// the upstream's answer (nil when no id was rewritten; req is then
// returned as it is). req itself is not changed: the messages that change
// are copied, the rest shared.
//
// The rewriting keeps no state, so that every turn of a conversation,
// on any replica of the gateway, sends the upstream the same ids:
//
//   - an id the rule accepts is kept;
//   - any other id becomes rule.Prefix followed by digits of the SHA-256
//     of the id in the rule's alphabet (see ToolIDRule), the same for a
//     tool_use and the tool_results that name it;
//   - two different ids never become one: a made id that equals an id
//     the request keeps, or one already made for another id, is derived
//     again from the id and a counter (SHA-256 of id, NUL, 1, ...). Ids
//     are made in the order they first occur, so the ids of a
//     conversation's earlier turns keep their made ids as it grows; only
//     a client that sends an id equal to a made one can shift them.
//
// The gateway calls it with the upstream row's rule before Encode, and
// passes the upstream's stream through the map's Chunks (or a collected
// response through its Response):
//
//	sent, ids := wire.RewriteToolIDs(req, row.Upstream.ToolIDs)
//	body, _, warns, err := row.Encode(sent, opts, state)
//	…
//	chunks := ids.Chunks(row.Upstream.Decode(body))
func RewriteToolIDs(req chat.Request, rule ToolIDRule) (chat.Request, *ToolIDMap) {
	// Most requests hold only ids the upstream accepts: they are checked
	// without allocating.
	check := rule.checker()
	if allValid(req.Messages, &check) {
		return req, nil
	}
	kept := map[string]bool{}
	var order []string // the refused ids, in the order they first occur
	seen := map[string]bool{}
	eachID(req.Messages, func(id string) {
		switch {
		case check.valid(id):
			kept[id] = true
		case !seen[id]:
			seen[id] = true
			order = append(order, id)
		}
	})
	to := make(map[string]string, len(order))
	m := &ToolIDMap{back: make(map[string]string, len(order))}
	for _, id := range order {
		made := rule.made(id, 0)
		for n := 1; n < maxIDTries && m.taken(made, kept); n++ {
			made = rule.made(id, n)
		}
		to[id] = made
		m.back[made] = id
	}
	out := req
	out.Messages = make([]chat.Message, len(req.Messages))
	copy(out.Messages, req.Messages)
	for i := range out.Messages {
		c := &out.Messages[i].Content
		if c.IsString {
			continue
		}
		var blocks []chat.Block // the copy, made at the first change
		for j := range c.Blocks {
			b := &c.Blocks[j]
			var id string
			switch b.Type {
			case chat.TypeToolUse:
				id = b.ID
			case chat.TypeToolResult:
				id = b.ToolUseID
			default:
				continue
			}
			made, ok := to[id]
			if !ok {
				continue
			}
			if blocks == nil {
				blocks = make([]chat.Block, len(c.Blocks))
				copy(blocks, c.Blocks)
			}
			if b.Type == chat.TypeToolUse {
				blocks[j].ID = made
			} else {
				blocks[j].ToolUseID = made
			}
		}
		if blocks != nil {
			c.Blocks = blocks
		}
	}
	return out, m
}

// allValid reports whether check accepts every tool-call id of msgs.
func allValid(msgs []chat.Message, check *idChecker) bool {
	for i := range msgs {
		c := &msgs[i].Content
		if c.IsString {
			continue
		}
		for j := range c.Blocks {
			b := &c.Blocks[j]
			switch b.Type {
			case chat.TypeToolUse:
				if !check.valid(b.ID) {
					return false
				}
			case chat.TypeToolResult:
				if !check.valid(b.ToolUseID) {
					return false
				}
			}
		}
	}
	return true
}

// eachID calls f with every tool-call id of msgs, in order.
func eachID(msgs []chat.Message, f func(string)) {
	for i := range msgs {
		c := &msgs[i].Content
		if c.IsString {
			continue
		}
		for j := range c.Blocks {
			switch b := &c.Blocks[j]; b.Type {
			case chat.TypeToolUse:
				f(b.ID)
			case chat.TypeToolResult:
				f(b.ToolUseID)
			}
		}
	}
}
