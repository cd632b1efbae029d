package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash"
	"io"
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
)

// Reasoning signatures are opaque values a provider attaches to its
// model's reasoning (Anthropic's thinking signature, Gemini's
// thoughtSignature, the Responses API's encrypted_content) and takes back
// only from itself. A client of one dialect talking to another provider
// hands the signature back in its own dialect's place, and nothing there
// says whose it is: a Gemini client cannot tell ctxkit that a
// thoughtSignature is Anthropic's. So the gateway seals a signature that
// crosses providers before the client sees it (SealChunks,
// SealResponse): the client gets an envelope naming the provider that
// made it, and each provider's encoder opens the envelope again
// (OpenSignature) and sends the signature on only to its own provider.
// No state is kept on the server: everything is in the envelope.
//
// An envelope is standard base64 (what Gemini's thoughtSignature, a proto
// bytes field, is; Google's SDKs decode and re-encode it, so either base64
// alphabet, padded or not, is read back) of
//
//	"ctxk" 0x01 kind  payload
//
// where kind is 'a' (an Anthropic thinking signature), 'r' (Anthropic
// redacted thinking), 'g' (a Gemini thoughtSignature), 'o' (a Responses
// reasoning item's encrypted_content), 'b' (a Bedrock reasoningText
// signature) or 'd' (Bedrock's redacted reasoning, redactedContent, as
// the base64 text Converse's JSON carries it). The payload of 'a' and
// 'b' is the signature, then either a 0 byte and the thinking text it
// signs, or, when that text is too long for an envelope, a 1 byte and
// the text's SHA-256 (32 bytes), or a 2 byte, the text's SHA-256 and its
// length in bytes (8 bytes, big-endian; envelopes are made so, the 1
// byte form is still read); the text is kept only for a client whose
// thinking text may not come back as it was signed: a Gemini client's
// thought parts, a Chat Completions client's streamed reasoning, see
// SealChunks; otherwise there is neither. A signature is printable text,
// so its end is the first 0, 1 or 2 byte. The payload of 'r' and 'd' is
// the redacted data; of 'g' and 'o' the signature.
//
// An envelope is routing, not trust: a client can send anything, so an
// opened signature is only ever sent to the provider its kind names,
// which checks it as it checks any signature; a forged one fails there.

// Signature homes: the providers whose signatures are sealed when they
// cross to a client of another dialect, by the provider table's and the
// dialects' names.
const (
	HomeAnthropic = "anthropic"
	HomeGemini    = "gemini"
	HomeResponses = "responses"
	// HomeBedrock: Claude's signatures on Bedrock are Bedrock's own
	// (nothing documents that Anthropic's API and Bedrock take each
	// other's), so they are sealed for a client of any other dialect.
	HomeBedrock = "bedrock"
)

// MaxSealedSignature bounds the length of a signature OpenSignature
// opens; a longer one is treated as not sealed (and so goes only where
// an unsealed signature goes).
const MaxSealedSignature = 4 << 20

const (
	sealMagic   = "ctxk\x01"
	kindThought = 'a'
	kindRedact  = 'r'
	kindGemini  = 'g'
	kindOpenAI  = 'o'
	kindBedrock = 'b'
	kindBRedact = 'd' // Bedrock's redactedContent

	// textSep, digestSep and lengthSep end the signature in the
	// payload of an 'a' or 'b' envelope: the text follows the first,
	// its SHA-256 the second, its SHA-256 and length the third.
	textSep   = 0
	digestSep = 1
	lengthSep = 2

	// maxDigestedLen bounds the length an envelope may give its text.
	maxDigestedLen = math.MaxInt32
)

// Sealed is an opened envelope.
type Sealed struct {
	// Home is the provider that made the signature (HomeAnthropic,
	// HomeGemini, HomeResponses, HomeBedrock).
	Home string
	// Redacted: the payload is redacted thinking (Anthropic's data,
	// Bedrock's redactedContent), not a signature.
	Redacted bool
	// Signature is the provider's own signature (or redacted data).
	Signature string
	// Thinking is the text an Anthropic (or Bedrock) signature signs,
	// when the envelope carries it.
	Thinking string
	// Digest is the SHA-256 (32 bytes) of the text an Anthropic or
	// Bedrock signature signs, when the text was too long for the
	// envelope; "" otherwise. Only a text with this digest may go back
	// with the signature (see ClaimSignatures).
	Digest string
	// Length is the length in bytes of the text whose SHA-256 is Digest,
	// when the envelope gives it (0 when it does not: envelopes made
	// before they did), so that a text several signatures sign in turn
	// (a streamed client's joined reasoning) can be cut at each.
	Length int
}

// Seal is the envelope of s, as SealSignature or SealRedacted make it:
// a Thinking too long for the envelope is carried as its digest, and a
// Digest is kept when there is no Thinking. An unknown Home, an empty
// Signature, or one too long for an envelope is returned as it is.
func (s Sealed) Seal() string {
	k := kindOf(s.Home)
	if s.Redacted {
		k = redactedKind(s.Home)
	}
	if k == 0 {
		return s.Signature
	}
	if k == kindThought || k == kindBedrock {
		if s.Thinking != "" {
			return seal(k, s.Signature, s.Thinking, nil, 0)
		}
		if len(s.Digest) == sha256.Size {
			return seal(k, s.Signature, "", []byte(s.Digest), s.Length)
		}
	}
	return seal(k, s.Signature, "", nil, 0)
}

// Signs reports whether text may go back with s's signature: any text
// when s carries no digest (the provider checks it), else only the text
// whose SHA-256 is s's Digest, the text signed.
func (s Sealed) Signs(text string) bool {
	return s.Digest == "" || sumOf(text) == s.Digest
}

// redactedKind is the envelope kind of home's redacted thinking, 0 for a
// home that has none.
func redactedKind(home string) byte {
	switch home {
	case HomeAnthropic:
		return kindRedact
	case HomeBedrock:
		return kindBRedact
	}
	return 0
}

func kindOf(home string) byte {
	switch home {
	case HomeAnthropic:
		return kindThought
	case HomeGemini:
		return kindGemini
	case HomeResponses:
		return kindOpenAI
	case HomeBedrock:
		return kindBedrock
	}
	return 0
}

// SignatureHome is the signature home of a provider row or dialect name,
// "" for one whose signatures are not sealed.
func SignatureHome(name string) string {
	if kindOf(name) != 0 {
		return name
	}
	return ""
}

// sealedLen is the length of an envelope of n payload bytes.
func sealedLen(n int) int { return base64.StdEncoding.EncodedLen(len(sealMagic) + 1 + n) }

// SealSignature is the envelope of sig, a signature home made; thinking,
// the text an Anthropic or Bedrock signature signs, is carried when not
// "" (for other homes it is ignored): whole when the envelope stays
// within MaxSealedSignature with it, else as its SHA-256. An unknown
// home, an empty sig, or one too long for an envelope is returned as it
// is.
func SealSignature(home, sig, thinking string) string {
	return seal(kindOf(home), sig, thinking, nil, 0)
}

// seal is the envelope of kind k of sig and, for an 'a' or 'b' kind, the
// thinking it signs (or, when thinking is "", its digest when not nil,
// and n, the text's length, when not 0).
func seal(k byte, sig, thinking string, digest []byte, n int) string {
	if k == 0 || sig == "" || sealedLen(len(sig)) > MaxSealedSignature {
		return sig
	}
	if k != kindThought && k != kindBedrock {
		thinking, digest = "", nil
	}
	if thinking != "" && sealedLen(len(sig)+1+len(thinking)) > MaxSealedSignature {
		h := sha256.Sum256([]byte(thinking))
		thinking, digest, n = "", h[:], len(thinking)
	}
	if n < 0 || n > maxDigestedLen {
		n = 0
	}
	if digest != nil && n > 0 && sealedLen(len(sig)+1+len(digest)+8) > MaxSealedSignature {
		n = 0
	}
	if digest != nil && sealedLen(len(sig)+1+len(digest)) > MaxSealedSignature {
		digest = nil
	}
	b := make([]byte, 0, len(sealMagic)+1+len(sig)+1+len(thinking)+len(digest)+8)
	b = append(b, sealMagic...)
	b = append(b, k)
	b = append(b, sig...)
	switch {
	case thinking != "":
		b = append(b, textSep)
		b = append(b, thinking...)
	case digest != nil && n > 0:
		b = append(b, lengthSep)
		b = append(b, digest...)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	case digest != nil:
		b = append(b, digestSep)
		b = append(b, digest...)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// SealRedacted is the envelope of Anthropic's redacted thinking data, for
// a client whose dialect has no place for it but a signature's.
func SealRedacted(data string) string { return seal(kindRedact, data, "", nil, 0) }

// SealRedactedFor is the envelope of redacted thinking home made: an
// Anthropic redacted_thinking block's data (SealRedacted), or Bedrock's
// redactedContent (the base64 text Converse's JSON carries). For any
// other home, or data too long for an envelope, data is returned as it
// is.
func SealRedactedFor(home, data string) string {
	return seal(redactedKind(home), data, "", nil, 0)
}

// sealPrefix is the base64 of the magic and a kind byte: six bytes, so
// eight characters that both alphabets spell the same.
func sealPrefix(kind byte) string {
	return base64.StdEncoding.EncodeToString(append([]byte(sealMagic), kind))
}

var sealPrefixes = [...]string{sealPrefix(kindThought), sealPrefix(kindRedact), sealPrefix(kindGemini), sealPrefix(kindOpenAI), sealPrefix(kindBedrock), sealPrefix(kindBRedact)}

// OpenSignature opens s when it is an envelope SealSignature or
// SealRedacted made (or one in its form: a client can forge one, and gets
// no more than a signature routed to the provider it names). ok is false
// for anything else, a provider's own signature included, and for s
// longer than MaxSealedSignature.
func OpenSignature(s string) (Sealed, bool) {
	if len(s) < 8 || len(s) > MaxSealedSignature {
		return Sealed{}, false
	}
	known := false
	for _, p := range sealPrefixes {
		if s[:8] == p {
			known = true
			break
		}
	}
	if !known {
		return Sealed{}, false
	}
	// Either alphabet, padded or not: a client may have decoded the
	// bytes and encoded them again its own way.
	t := strings.TrimRight(s, "=")
	if strings.ContainsAny(t, "-_") {
		if strings.ContainsAny(t, "+/") {
			return Sealed{}, false
		}
		t = strings.NewReplacer("-", "+", "_", "/").Replace(t)
	}
	b, err := base64.RawStdEncoding.DecodeString(t)
	if err != nil || len(b) <= len(sealMagic)+1 {
		return Sealed{}, false
	}
	kind, payload := b[len(sealMagic)], string(b[len(sealMagic)+1:])
	var out Sealed
	switch kind {
	case kindThought, kindBedrock:
		out.Home = HomeAnthropic
		if kind == kindBedrock {
			out.Home = HomeBedrock
		}
		out.Signature = payload
		if i := strings.IndexAny(payload, "\x00\x01\x02"); i >= 0 {
			out.Signature = payload[:i]
			rest := payload[i+1:]
			switch payload[i] {
			case textSep:
				out.Thinking = rest
			case digestSep:
				if out.Digest = rest; len(rest) != sha256.Size {
					return Sealed{}, false
				}
			default:
				if len(rest) != sha256.Size+8 {
					return Sealed{}, false
				}
				n := binary.BigEndian.Uint64([]byte(rest[sha256.Size:]))
				if n == 0 || n > maxDigestedLen {
					return Sealed{}, false
				}
				out.Digest, out.Length = rest[:sha256.Size], int(n)
			}
		}
	case kindRedact:
		out.Home, out.Redacted, out.Signature = HomeAnthropic, true, payload
	case kindBRedact:
		out.Home, out.Redacted, out.Signature = HomeBedrock, true, payload
	case kindGemini:
		out.Home, out.Signature = HomeGemini, payload
	case kindOpenAI:
		out.Home, out.Signature = HomeResponses, payload
	default:
		return Sealed{}, false
	}
	if out.Signature == "" {
		return Sealed{}, false
	}
	return out, true
}

// SignatureFor is what an encoder of provider home sends for sig, a
// signature a client handed back: sig itself when it is not sealed (a
// signature of the client's own dialect's provider, which the provider
// checks), the signature inside when it is sealed by home, and ok false
// when it is sealed by another provider (or is redacted thinking), which
// home would refuse.
func SignatureFor(home, sig string) (out string, ok bool) {
	s, sealed := OpenSignature(sig)
	if !sealed {
		return sig, true
	}
	if s.Home != home || s.Redacted {
		return "", false
	}
	return s.Signature, true
}

// sealing says how signatures from a provider are sealed for a dialect.
type sealing struct {
	home string // the upstream's signature home; "" seals nothing
	// text: carry the thinking text in an Anthropic or Bedrock envelope
	// (a Gemini client's thought parts may not come back, and a Chat
	// Completions client's streamed reasoning comes back however the
	// client put its deltas together; the signature comes back whole).
	text bool
	// redactedData: seal redacted thinking's data in place (a Chat
	// Completions client gets it as a reasoning.encrypted detail, a
	// Gemini client as the thoughtSignature of a thought part, neither
	// of which names a provider unless sealed).
	redactedData bool
}

func sealingFor(upstream, dialect string) sealing {
	home, client := SignatureHome(upstream), SignatureHome(dialect)
	// A client of a dialect that is no signature home (Chat Completions)
	// gets signatures sealed too: what it hands back unsealed names no
	// provider (ClaimSignatures).
	if home == "" || dialect == "" || home == client {
		return sealing{}
	}
	if client == "" {
		return sealing{home: home, text: true, redactedData: redactedKind(home) != 0}
	}
	// An Anthropic client holds Bedrock's redacted content as
	// redacted_thinking data, a Responses client any home's as
	// encrypted_content, and a Gemini client any home's as a thought
	// part's thoughtSignature, none of which names a provider: sealed in
	// place, it can go back to its home only (ClaimSignatures).
	data := redactedKind(home) != 0 && (client == HomeAnthropic && home == HomeBedrock || client == HomeResponses || client == HomeGemini)
	// A Gemini client's thought parts may not come back, nor whole: an
	// Anthropic or Bedrock envelope carries the text it signs.
	text := client == HomeGemini && (home == HomeAnthropic || home == HomeBedrock)
	return sealing{home: home, text: text, redactedData: data}
}

// SealChunks seals the reasoning signatures of an upstream's stream
// (provider row name upstream) for a client of dialect: when the
// upstream is a signature home and the dialect is another home or none
// (Chat Completions), every reasoning chunk's Signature becomes its
// envelope. For a Gemini client of an Anthropic upstream the envelope
// carries the thinking text since the last signature; for a client of a
// dialect that is no home the envelope of an Anthropic or Bedrock
// signature carries the thinking text since the last signature. For a
// Gemini, Responses or Chat Completions client (and an Anthropic client
// of Bedrock) Anthropic's redacted data and Bedrock's redactedContent
// are sealed in place, each in an envelope of its own kind (the Gemini
// dialect writes it as the thoughtSignature of a thought part of its
// own). A thinking text too long
// for an envelope is carried as its SHA-256 (see SealSignature), for
// which the text is hashed as it streams: what is held stays within
// MaxSealedSignature. Otherwise chunks are passed on as they are.
func SealChunks(chunks iter.Seq2[chat.Chunk, error], upstream, dialect string) iter.Seq2[chat.Chunk, error] {
	s := sealingFor(upstream, dialect)
	if s.home == "" {
		return chunks
	}
	return func(yield func(chat.Chunk, error) bool) {
		var text thoughtText
		for c, err := range chunks {
			if err == nil && c.Type == chat.ChunkReasoning {
				if s.redactedData && c.Redacted != "" {
					c.Redacted = sealedOnly(c.Redacted, SealRedactedFor(s.home, c.Redacted))
				} else if c.Signature != "" {
					c.Signature = sealedOnly(c.Signature, text.seal(s, c.Signature, c.Text))
				} else if s.text {
					text.add(c.Text)
				}
			}
			if !yield(c, err) {
				return
			}
		}
	}
}

// SealResponse seals the signatures of a collected response as SealChunks
// seals a stream's, in place.
func SealResponse(res *chat.Response, upstream, dialect string) {
	s := sealingFor(upstream, dialect)
	if s.home == "" {
		return
	}
	var text thoughtText
	gone := false // a block left unsealable, to be dropped
	for i := range res.Content {
		b := &res.Content[i]
		switch b.Type {
		case chat.TypeReasoning:
			if s.text {
				text.add(b.Text)
			}
		case chat.TypeThinking:
			if b.Signature == "" {
				if s.text {
					text.add(b.Thinking)
				}
				continue
			}
			b.Signature = sealedOnly(b.Signature, text.seal(s, b.Signature, b.Thinking))
		case chat.TypeThoughtSignature:
			if b.Signature != "" {
				b.Signature = sealedOnly(b.Signature, text.seal(s, b.Signature, ""))
				gone = gone || b.Signature == ""
			}
		case chat.TypeRedactedThinking:
			if s.redactedData && b.Data != "" {
				b.Data = sealedOnly(b.Data, SealRedactedFor(s.home, b.Data))
				gone = gone || b.Data == ""
			}
		}
	}
	if gone {
		// A block whose signature or data could not be sealed is left
		// out whole: it holds nothing a client can use.
		res.Content = slices.DeleteFunc(res.Content, func(b chat.Block) bool {
			return b.Type == chat.TypeThoughtSignature && b.Signature == "" || b.Type == chat.TypeRedactedThinking && b.Data == ""
		})
	}
}

// sealedOnly is sealed, the envelope made of v, or "" when v could not
// be sealed (too long for an envelope: SealSignature passes it as it
// is). Handed out unsealed, a provider's signature or redacted data
// would come back as the client dialect's own provider's and be sent to
// a provider that did not make it.
func sealedOnly(v, sealed string) string {
	if sealed == v {
		return ""
	}
	return sealed
}

// thoughtText is the thinking text since the last signature, bounded:
// past MaxSealedSignature bytes (more than an envelope holds) it is
// hashed instead, and the signature is sealed with the text's SHA-256.
type thoughtText struct {
	b strings.Builder
	h hash.Hash // the text's hash once it is too long to keep
	n int       // the length of the text hashed
}

func (c *thoughtText) add(s string) {
	if c.h != nil {
		io.WriteString(c.h, s)
		c.n += len(s)
		return
	}
	if c.b.Len()+len(s) > MaxSealedSignature {
		c.h = sha256.New()
		io.WriteString(c.h, c.b.String())
		io.WriteString(c.h, s)
		c.n = c.b.Len() + len(s)
		c.b.Reset()
		return
	}
	c.b.WriteString(s)
}

// seal adds last, the text that came with signature sig, when s carries
// the text, and returns sig's envelope (with the text, or its digest,
// since the last signature); the text starts again.
func (c *thoughtText) seal(s sealing, sig, last string) string {
	if !s.text {
		return SealSignature(s.home, sig, "")
	}
	c.add(last)
	if c.h != nil {
		d, n := c.h.Sum(nil), c.n
		c.h, c.n = nil, 0
		return seal(kindOf(s.home), sig, "", d, n)
	}
	text := c.b.String()
	c.b.Reset()
	return SealSignature(s.home, sig, text)
}

// ClaimSignatures readies the reasoning signatures in req, a request a
// client of dialect sent, for upstream (a provider row name), before any
// encoder sees it, and returns what it left out. req's messages are
// copied where they change: the caller's slices are not written.
//
// A signature a client hands back unsealed is its own dialect's
// provider's (the signatures of every other provider reach it sealed),
// so for a signature home upstream of another home it is sealed with the
// dialect's home, and the home encoders' one rule (SignatureFor: their
// own opened, another's refused) applies to it too. An upstream that is
// no signature home (Chat Completions, Mistral, DeepSeek) never gets an
// envelope: a sealed signature is left out of its thinking block (its
// text goes on), a sealed thought_signature or reasoning detail is
// dropped; unsealed ones pass on as they are, as they may be its own,
// and a message's reasoning_details otherwise go on as the client sent
// them (they are OpenRouter's own field), less every detail any of
// whose strings (a key or a value, at any depth) is an envelope.
// reasoning_details count only on an assistant message: on any other
// they are dropped with a warning.
//
// A message's reasoning_details (the Chat Completions dialect's carrier
// for signed reasoning, see the openai package's EncodeResponse) become
// canonical blocks again for a signature home upstream, and the field is
// cleared:
//
//   - a reasoning.text detail with a signature, or a reasoning.encrypted
//     detail whose data is an envelope, is taken when the envelope is the
//     upstream's own: Anthropic's or Bedrock's becomes a thinking block
//     (its text the one the envelope carries, else the detail's), first
//     in the message, in the details' order; Anthropic's redacted
//     thinking a redacted_thinking block, placed likewise, and Bedrock's
//     redactedContent (an envelope of its own kind, which no other
//     upstream takes) likewise for Bedrock; the Responses
//     API's a thinking block holding its encrypted reasoning; Gemini's
//     a thought_signature block just before the tool call its detail's
//     id names (the call it came on), first in the message when it
//     names none; when no detail of the message names a call, before
//     the message's first tool call (the next signature before the
//     second, and so on; those with no call left go first, where Gemini
//     signs a text answer), which is where Gemini 3 wants it;
//   - an Anthropic or Bedrock envelope that carries its thinking text's
//     SHA-256 (the text was too long to carry) is taken only with the
//     text it signs: the detail's text, or else the part of the
//     message's reasoning_content that is its (a streamed client joins
//     every block's deltas into it: the details' envelopes, in order,
//     cut it at the lengths they give, see joinedReasoning), when its
//     SHA-256 is the envelope's; otherwise it is dropped with a warning,
//     as ctxkit cannot vouch for the text it would be sent with;
//   - another provider's envelope is dropped with a warning naming its
//     maker, and an unsealed signature, which names no provider, with a
//     warning;
//   - details with no signature (reasoning.text, reasoning.summary) give
//     nothing: their text is the message's reasoning_content. When a
//     thinking block is restored, the message's reasoning block (from
//     reasoning_content) is dropped, its text having come signed;
//   - anything else (not an array, details past the request's
//     MaxReasoningDetails, a detail that is not an object of strings,
//     an unknown type) is dropped with a warning naming
//     messages[i].reasoning_details[k].
//
// A Gemini client hands back redacted thinking as the thought part the
// dialect wrote it in, which its decoder reads as a redacted_thinking
// block holding the envelope: kept for the provider that made it, and
// dropped with a warning for any other, as above. For a Bedrock upstream
// a Gemini client's thought_signature whose envelope carries the
// thinking text becomes that thinking block again, in place of the
// thought parts before it when they hold that text (rebuildThoughts).
//
// A message's dropped details give a few warnings and then one counting
// the rest, and a request's warnings are capped likewise, so what a
// request of malformed details costs is a small multiple of its size.
func ClaimSignatures(req *chat.Request, dialect, upstream string) []chat.Warning {
	c := claim{up: SignatureHome(upstream), client: SignatureHome(dialect), upstream: upstream}
	own := false
	for i := range req.Messages {
		m := &req.Messages[i]
		var (
			details  json.RawMessage
			dchanged bool
			back     restored
		)
		switch {
		case len(m.ReasoningDetails) == 0:
		case m.Role != chat.Assistant:
			c.warn(chat.Warnf(chat.MessagePath(i)+".reasoning_details", "only an assistant message's reasoning goes back, and this is a %s message: dropped", clip(m.Role)))
			dchanged = true
		case c.up != "":
			back, dchanged = c.restore(i, m), true
		default:
			details, dchanged = c.details(i, m.ReasoningDetails)
		}
		var blocks []chat.Block // a copy, once a block changes
		if !m.Content.IsString {
			for j := range m.Content.Blocks {
				b := m.Content.Blocks[j]
				keep, changed := c.block(i, j, &b)
				if blocks == nil && (changed || !keep) {
					blocks = make([]chat.Block, j, len(m.Content.Blocks))
					copy(blocks, m.Content.Blocks[:j])
				}
				if blocks != nil && keep {
					blocks = append(blocks, b)
				}
			}
		}
		if !back.empty() {
			if blocks == nil {
				blocks = m.Content.AsBlocks()
			}
			blocks = back.place(blocks)
		}
		if !dchanged && blocks == nil {
			continue
		}
		if !own {
			req.Messages = slices.Clone(req.Messages)
			m, own = &req.Messages[i], true
		}
		if dchanged {
			m.ReasoningDetails = details
		}
		if blocks != nil {
			m.Content = chat.Content{Blocks: blocks}
		}
	}
	if c.client == HomeGemini && c.up == HomeBedrock {
		rebuildThoughts(req)
	}
	if c.more > 0 {
		c.warns = append(c.warns, chat.Warnf("messages", "… and %d more warnings about reasoning signatures", c.more))
	}
	return c.warns
}

// MaxReasoningDetails bounds the reasoning_details ClaimSignatures reads
// in one request, all messages together (as many as a collected response
// can hold blocks); past it a message's details are dropped with one
// warning.
const MaxReasoningDetails = chat.MaxCollectedBlocks

// maxClaimWarnings bounds the warnings of one request; past it they are
// counted in a last one. maxDetailWarnings bounds those of one message's
// reasoning_details; past it they are counted in a last one of the
// message. Together with MaxReasoningDetails they keep what a request of
// malformed details costs a small multiple of its size.
const (
	maxClaimWarnings  = 256
	maxDetailWarnings = 8
)

// restored are the blocks a message's reasoning_details give back.
type restored struct {
	lead  []chat.Block // first in the message
	calls []chat.Block // Gemini signatures of tool calls: each before the next call
	ids   []string     // the call each of calls came on, "" when unknown
	text  bool         // a signed thinking block stands for the reasoning_content
}

func (r *restored) empty() bool { return len(r.lead) == 0 && len(r.calls) == 0 }

// place puts the restored blocks into a message's blocks (a fresh slice).
// A Gemini signature whose detail names its call (its id) goes just
// before that call, one without (a thought's) first; when no detail names
// a call, the signatures go before the calls in order, the spare ones
// first (the details of a client that kept no id).
func (r *restored) place(content []chat.Block) []chat.Block {
	out := make([]chat.Block, 0, len(r.lead)+len(r.calls)+len(content))
	out = append(out, r.lead...)
	byID := map[string]chat.Block{}
	calls := 0
	for k := range content {
		if content[k].Type == chat.TypeToolUse {
			calls++
			if content[k].ID != "" {
				byID[content[k].ID] = chat.Block{}
			}
		}
	}
	named := false
	var sigs []chat.Block
	for k, b := range r.calls {
		if _, ok := byID[r.ids[k]]; ok && r.ids[k] != "" {
			if byID[r.ids[k]].Type == "" {
				byID[r.ids[k]] = b
				named = true
				continue
			}
		}
		sigs = append(sigs, b)
	}
	if named {
		// The signatures that name no call of this message came on
		// thoughts: first, on no call.
		out = append(out, sigs...)
		sigs = nil
	} else if extra := len(sigs) - calls; extra > 0 {
		out = append(out, sigs[:extra]...)
		sigs = sigs[extra:]
	}
	for _, b := range content {
		if b.Type == chat.TypeReasoning && r.text {
			continue
		}
		if b.Type == chat.TypeToolUse {
			if s := byID[b.ID]; named && s.Type != "" {
				out = append(out, s)
				byID[b.ID] = chat.Block{Type: "placed"}
			} else if len(sigs) > 0 {
				out = append(out, sigs[0])
				sigs = sigs[1:]
			}
		}
		out = append(out, b)
	}
	return out
}

// reasoningDetail is what ClaimSignatures reads of a detail; other keys
// (format, index) are OpenRouter's bookkeeping. id names the tool call a
// Gemini signature came on.
type reasoningDetail struct {
	Type      string `json:"type"`
	Text      string `json:"text"`
	Signature string `json:"signature"`
	Data      string `json:"data"`
	ID        string `json:"id"`
}

// elements calls f with each element of raw, a JSON array, without
// decoding it, until f returns false; it reports false when raw is not
// a JSON array.
func elements(raw []byte, f func(k int, d []byte) bool) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '[' || raw[len(raw)-1] != ']' || !json.Valid(raw) {
		return false
	}
	depth, in, esc, start, k := 0, false, false, 1, 0
	for p := 1; p < len(raw)-1; p++ {
		ch := raw[p]
		switch {
		case in:
			switch {
			case esc:
				esc = false
			case ch == '\\':
				esc = true
			case ch == '"':
				in = false
			}
		case ch == '"':
			in = true
		case ch == '[' || ch == '{':
			depth++
		case ch == ']' || ch == '}':
			depth--
		case ch == ',' && depth == 0:
			if !f(k, bytes.TrimSpace(raw[start:p])) {
				return true
			}
			k, start = k+1, p+1
		}
	}
	if last := bytes.TrimSpace(raw[start : len(raw)-1]); len(last) > 0 {
		f(k, last)
	}
	return true
}

// budget takes n details of the request's MaxReasoningDetails, reporting
// false (and taking none) when they do not fit.
func (c *claim) budget(n int) bool {
	if c.read+n > MaxReasoningDetails {
		return false
	}
	c.read += n
	return true
}

// restore turns messages[i].reasoning_details (m's), for c.up (a
// signature home), into the blocks they hold (see ClaimSignatures).
func (c *claim) restore(i int, m *chat.Message) restored {
	raw := m.ReasoningDetails
	var r restored
	path := chat.MessagePath(i) + ".reasoning_details"
	n := 0
	if !elements(raw, func(int, []byte) bool { n++; return true }) {
		c.warn(chat.Warnf(path, "not an array of reasoning details: dropped"))
		return r
	}
	if !c.budget(n) {
		c.warn(chat.Warnf(path, "%d reasoning details past the request's %d: all dropped", n, MaxReasoningDetails))
		return r
	}
	dropped := 0
	drop := func(w chat.Warning) {
		if dropped++; dropped <= maxDetailWarnings {
			c.warn(w)
		}
	}
	var joined joinedReasoning
	elements(raw, func(k int, d []byte) bool {
		p := path + "[" + strconv.Itoa(k) + "]"
		var v reasoningDetail
		if len(d) == 0 || d[0] != '{' || json.Unmarshal(d, &v) != nil {
			drop(chat.Warnf(p, "not a reasoning detail (an object whose type, text, signature, data and id are strings): dropped"))
			return true
		}
		var sig string
		switch v.Type {
		case "reasoning.text":
			sig = v.Signature
		case "reasoning.encrypted":
			if sig = v.Data; sig == "" {
				drop(chat.Warnf(p, "a reasoning.encrypted detail without data: dropped"))
				return true
			}
		case "reasoning.summary":
		default:
			drop(chat.Warnf(p, "type %q is not reasoning.text, reasoning.encrypted or reasoning.summary: dropped", clip(v.Type)))
			return true
		}
		if sig == "" {
			return true // text only: the message's reasoning_content has it
		}
		s, sealed := OpenSignature(sig)
		switch {
		case !sealed:
			drop(chat.Warnf(p, "the signature came unsealed from a client whose reasoning_details are native to no provider, and %s takes back only its own: dropped", c.upstream))
			return true
		case s.Home != c.up:
			drop(chat.Warnf(p, "%s made by %s, and %s takes back only its own: dropped", sealedWhat(s), s.Home, c.upstream))
			return true
		}
		var b chat.Block
		switch {
		case s.Redacted:
			b = chat.Block{Type: chat.TypeRedactedThinking, Data: s.Signature}
		case s.Home == HomeGemini:
			r.calls = append(r.calls, chat.Block{Type: chat.TypeThoughtSignature, Signature: sig})
			r.ids = append(r.ids, v.ID)
			return true
		case s.Digest != "":
			// The text was too long for the envelope: it goes back
			// only as it was signed, be it the detail's or (a streamed
			// answer's, whose deltas the client joined) the message's
			// reasoning_content, or the part of it next.
			text, ok := signedText(s, v, m, &joined)
			if !ok {
				drop(chat.Warnf(p, "the thinking this signature signs was too long for its envelope, and the text that came back (the detail's, or the message's reasoning_content) is not the text signed: dropped"))
				return true
			}
			b = chat.Block{Type: chat.TypeThinking, Thinking: text, Signature: sig}
			r.text = true
		default:
			text := s.Thinking
			if text == "" && v.Type == "reasoning.text" {
				text = v.Text
			}
			if s.Home == HomeAnthropic || s.Home == HomeBedrock {
				joined.skip(len(text))
			}
			b = chat.Block{Type: chat.TypeThinking, Thinking: text, Signature: sig}
			// The message's reasoning_content is this block's text (or a
			// Responses summary, which the encrypted reasoning stands
			// for): the block replaces it.
			r.text = true
		}
		r.lead = append(r.lead, b)
		return true
	})
	if dropped > maxDetailWarnings {
		c.warn(chat.Warnf(path, "… and %d more of its %d reasoning details dropped", dropped-maxDetailWarnings, n))
	}
	return r
}

// rebuildThoughts turns each thought_signature block of req holding a
// Bedrock envelope that carries its thinking text (what a Gemini client
// hands back: the signature on the part after its thoughts) into the
// thinking block it was, in its place, and leaves out the reasoning
// blocks before it (the client's thought parts, one per streamed chunk,
// in as many assistant messages) when their text joined is that text:
// Converse takes the thinking back only whole and signed. An assistant
// message left with nothing is left out. The messages change in a fresh
// slice: the caller's slices are not written.
func rebuildThoughts(req *chat.Request) {
	type at struct{ msg, block int }
	var (
		pending []at              // reasoning blocks since the last signature
		drop    = map[at]bool{}   // carried thoughts
		rebuilt = map[at]Sealed{} // thought signatures that become thinking
		text    strings.Builder
	)
	for i := range req.Messages {
		m := &req.Messages[i]
		if m.Role != chat.Assistant {
			pending = pending[:0]
			continue
		}
		if m.Content.IsString {
			continue
		}
		for j, b := range m.Content.Blocks {
			switch b.Type {
			case chat.TypeReasoning:
				pending = append(pending, at{i, j})
			case chat.TypeThinking:
				pending = pending[:0]
			case chat.TypeThoughtSignature:
				s, ok := OpenSignature(b.Signature)
				if !ok || s.Home != HomeBedrock || s.Redacted || s.Thinking == "" {
					continue
				}
				rebuilt[at{i, j}] = s
				text.Reset()
				for _, p := range pending {
					text.WriteString(req.Messages[p.msg].Content.Blocks[p.block].Text)
				}
				if text.String() == s.Thinking {
					for _, p := range pending {
						drop[p] = true
					}
				}
				pending = pending[:0]
			}
		}
	}
	if len(rebuilt) == 0 {
		return
	}
	msgs := make([]chat.Message, 0, len(req.Messages))
	for i, m := range req.Messages {
		if m.Role != chat.Assistant || m.Content.IsString {
			msgs = append(msgs, m)
			continue
		}
		changed := false
		blocks := make([]chat.Block, 0, len(m.Content.Blocks))
		for j, b := range m.Content.Blocks {
			if drop[at{i, j}] {
				changed = true
				continue
			}
			if s, ok := rebuilt[at{i, j}]; ok {
				b = chat.Block{Type: chat.TypeThinking, Thinking: s.Thinking, Signature: b.Signature}
				changed = true
			}
			blocks = append(blocks, b)
		}
		if !changed {
			msgs = append(msgs, m)
			continue
		}
		if len(blocks) == 0 {
			continue
		}
		m.Content = chat.Content{Blocks: blocks}
		msgs = append(msgs, m)
	}
	req.Messages = msgs
}

// joinedReasoning is a message's reasoning blocks' text, joined once for
// all its details, and cut by their Anthropic or Bedrock envelopes in
// turn, as a streamed answer's signatures came: each signed the text
// since the one before, and a client of the Chat Completions dialect
// joins all of it into one reasoning_content. An envelope that carries
// its text, or its text's digest and length, says how long its part is,
// so the text is cut at each in turn; a part goes back with a digest's
// signature only when its SHA-256 is the digest. An envelope whose
// digest comes without a length (made before they had one) can only
// take all the text left, and after one that does not, where the next
// part starts is unknown: nothing more is cut. Each byte of the text is
// hashed at most once, whatever the details, and each part of it goes
// back with one signature only: a request cannot make of one text as
// many copies as it has details.
type joinedReasoning struct {
	done bool
	text string
	at   int  // the text before at is cut
	lost bool // where the next part starts is unknown
}

func (j *joinedReasoning) load(m *chat.Message) {
	if j.done {
		return
	}
	j.done = true
	if m.Content.IsString {
		return
	}
	var all strings.Builder
	for _, b := range m.Content.Blocks {
		if b.Type == chat.TypeReasoning {
			all.WriteString(b.Text)
		}
	}
	j.text = all.String()
}

// skip passes over the part of n bytes of an envelope that carries its
// text (or of a detail's own text of the digest). The text is joined
// only when a digest needs it (next).
func (j *joinedReasoning) skip(n int) {
	j.at = min(j.at+n, maxDigestedLen)
}

// next cuts the next part of the message's text, n bytes or, when n is
// 0 (an envelope that gives no length), all that is left, and returns it
// when its SHA-256 is digest.
func (j *joinedReasoning) next(m *chat.Message, digest string, n int) (string, bool) {
	j.load(m)
	j.at = min(j.at, len(j.text))
	rest := j.text[j.at:]
	switch {
	case j.lost:
		return "", false
	case n == 0:
		j.lost = true
	case n > len(rest):
		j.lost = true
		return "", false
	default:
		rest = rest[:n]
	}
	j.at += len(rest)
	if rest == "" || sumOf(rest) != digest {
		return "", false
	}
	return rest, true
}

// signedText is the text s's signature signs, s carrying its digest: the
// text of v, a reasoning.text detail, or else the next part of m's
// reasoning (see joinedReasoning), and ok false when neither is.
func signedText(s Sealed, v reasoningDetail, m *chat.Message, j *joinedReasoning) (string, bool) {
	if v.Type == "reasoning.text" && v.Text != "" && (s.Length == 0 || len(v.Text) == s.Length) && sumOf(v.Text) == s.Digest {
		j.skip(len(v.Text))
		return v.Text, true
	}
	return j.next(m, s.Digest, s.Length)
}

func sumOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return string(h[:])
}

// clip bounds a client's value quoted in a warning.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// claim is ClaimSignatures' rule for one request.
type claim struct {
	up       string // the upstream's signature home, "" for none
	client   string // the client dialect's signature home, "" for none
	upstream string // the upstream's name, for warnings
	warns    []chat.Warning
	more     int // the warnings past maxClaimWarnings
	read     int // the reasoning details read, of MaxReasoningDetails
}

// warn adds w, or counts it past maxClaimWarnings.
func (c *claim) warn(w chat.Warning) {
	if len(c.warns) >= maxClaimWarnings {
		c.more++
		return
	}
	c.warns = append(c.warns, w)
}

// block applies the rule to b, the block at messages[i].content[j]: keep
// false drops it, changed says b was rewritten.
func (c *claim) block(i, j int, b *chat.Block) (keep, changed bool) {
	if b.Type == chat.TypeRedactedThinking {
		return c.redacted(i, j, b), false
	}
	if b.Type != chat.TypeThinking && b.Type != chat.TypeThoughtSignature || b.Signature == "" {
		return true, false
	}
	path := chat.BlockPath(i, j)
	s, sealed := OpenSignature(b.Signature)
	switch {
	case c.up == "" && !sealed:
		// Possibly the upstream's own: it checks it.
		return true, false
	case c.up == "" && b.Type == chat.TypeThinking && b.Thinking != "" && !s.Redacted:
		c.warn(chat.Warnf(path, "the signature was made by %s, which %s cannot check: the thinking goes without it", s.Home, c.upstream))
		b.Signature = ""
		return true, true
	case c.up == "":
		c.warn(chat.Warnf(path, "%s of %s, which %s cannot take: dropped", sealedWhat(s), s.Home, c.upstream))
		return false, false
	case sealed || c.client == c.up:
		// The encoder opens its own provider's envelope and refuses
		// another's; an unsealed one of the client's own home is the
		// upstream's.
		return true, false
	case c.client == "":
		c.warn(chat.Warnf(path, "the signature came from a client whose dialect is native to no provider, and %s takes back only its own: dropped", c.upstream))
		return false, false
	}
	tagged := SealSignature(c.client, b.Signature, "")
	if tagged == b.Signature {
		// Too long for an envelope: still not the upstream's.
		c.warn(chat.Warnf(path, "the signature was made by %s, and %s takes back only its own: dropped", c.client, c.upstream))
		return false, false
	}
	b.Signature = tagged
	return true, true
}

// redacted applies the rule to b, a redacted_thinking block at
// messages[i].content[j]: data ctxkit sealed goes only to the provider
// that made it (whose encoder opens it), and is dropped with a warning
// for any other. Unsealed data is the client dialect's provider's (every
// other home's reaches a client sealed), or names no provider (a
// Responses client's): it is kept for an upstream of the client's own
// home, and for one that is no home (whose encoder has no place for it),
// and dropped with a warning for any other home.
func (c *claim) redacted(i, j int, b *chat.Block) bool {
	s, sealed := OpenSignature(b.Data)
	if !sealed && c.up != "" && c.client != c.up {
		c.warn(chat.Warnf(chat.BlockPath(i, j), "unsealed redacted thinking, and %s takes back only its own: dropped", c.upstream))
		return false
	}
	if !sealed || s.Redacted && s.Home == c.up {
		return true
	}
	c.warn(chat.Warnf(chat.BlockPath(i, j), "%s made by %s, and %s takes back only its own: dropped", sealedWhat(s), s.Home, c.upstream))
	return false
}

func sealedWhat(s Sealed) string {
	if s.Redacted {
		return "redacted thinking"
	}
	return "a signature"
}

// details applies the rule to a message's reasoning_details for an
// upstream that is no signature home, returning the details to send and
// whether they changed: a detail any of whose strings (a value or a key,
// at any depth; a bare string detail itself) is a ctxkit envelope is
// dropped, anything else goes on as the client wrote it. Details that are
// not a JSON array are left to the encoders; past the request's
// MaxReasoningDetails a message's details are all dropped, as they can
// no longer be checked.
func (c *claim) details(i int, raw json.RawMessage) (json.RawMessage, bool) {
	path := chat.MessagePath(i) + ".reasoning_details"
	n := 0
	if !elements(raw, func(int, []byte) bool { n++; return true }) {
		return raw, false
	}
	if !c.budget(n) {
		c.warn(chat.Warnf(path, "%d reasoning details past the request's %d: all dropped", n, MaxReasoningDetails))
		return nil, true
	}
	var kept [][]byte
	dropped := 0
	elements(raw, func(k int, d []byte) bool {
		s, sealed := sealedIn(d)
		if !sealed {
			kept = append(kept, d)
			return true
		}
		if dropped++; dropped <= maxDetailWarnings {
			c.warn(chat.Warnf(path+"["+strconv.Itoa(k)+"]", "%s of %s, which %s cannot take: dropped", sealedWhat(s), s.Home, c.upstream))
		}
		return true
	})
	if dropped > maxDetailWarnings {
		c.warn(chat.Warnf(path, "… and %d more of its %d reasoning details dropped", dropped-maxDetailWarnings, n))
	}
	if dropped == 0 {
		return raw, false
	}
	if len(kept) == 0 {
		return nil, true
	}
	out := append([]byte{'['}, bytes.Join(kept, []byte{','})...)
	return append(out, ']'), true
}

// sealedIn finds a ctxkit envelope among the strings of d, valid JSON
// (its keys too, at any depth), reading it in place: only a string with
// an escape is decoded, so the check costs no more than d's size.
func sealedIn(d []byte) (Sealed, bool) {
	for p := 0; p < len(d); p++ {
		if d[p] != '"' {
			continue
		}
		start, escaped := p+1, false
		for p = start; p < len(d) && d[p] != '"'; p++ {
			if d[p] == '\\' {
				escaped = true
				p++
			}
		}
		seg := d[start:p]
		if escaped {
			var str string
			if json.Unmarshal(d[start-1:p+1], &str) == nil {
				if s, ok := OpenSignature(str); ok {
					return s, true
				}
			}
			continue
		}
		if len(seg) < 8 || !slices.ContainsFunc(sealPrefixes[:], func(pre string) bool { return string(seg[:8]) == pre }) {
			continue
		}
		if s, ok := OpenSignature(string(seg)); ok {
			return s, true
		}
	}
	return Sealed{}, false
}
