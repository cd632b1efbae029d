package server

import (
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/wire"
)

// A record keeps the bodies a client and the gateway exchanged, and
// those may hold ctxkit's reasoning envelopes (wire.SealSignature): a
// Gemini thoughtSignature, an Anthropic signature, a Responses
// encrypted_content, a Chat reasoning_details entry, in a request a
// client hands back or in an answer, whole or streamed. An Anthropic
// signature's envelope carries the thinking it signs, base64-encoded,
// where the redactor cannot see it. So before a body is redacted its
// envelopes are opened, their thinking and signature redacted, and an
// envelope in which redaction changed something is sealed again with the
// redacted text. A record is evidence of what was said, not a credential
// to replay: the envelope stays readable (wire.OpenSignature opens it,
// as a curator's tool may), and its provider would refuse it, as it
// refuses any thinking changed after it was signed. An envelope with
// nothing to redact is kept as it was, byte for byte.
//
// Where an envelope cannot be looked into whole, it is replaced by
// sealedMarker: one the body was cut in (the rest, and perhaps the rest
// of a secret, is not in the record), one longer than
// wire.MaxSealedSignature (no envelope ctxkit makes), one nested in
// envelopes maxSealedDepth deep (only a forged one is), and one that
// begins as an envelope of a known kind and does not open.

// sealedMarker stands for an envelope the record does not keep.
const sealedMarker = "[REDACTED:sealed]"

// maxSealedDepth bounds the envelopes opened inside envelopes. Each
// level's payload is three quarters of its envelope's length at most,
// and the envelopes of one level do not overlap, so the bytes opened
// for a text of n bytes are fewer than 4n, however the envelopes nest.
const maxSealedDepth = 4

// sealedPrefix is what every envelope begins with, whatever its kind:
// the base64 of "ctxk", 0x01 and the kind's first bits. It has none of
// the characters in which the two base64 alphabets differ, so an
// envelope a client re-encoded URL-safe begins with it too.
var sealedPrefix = commonPrefix(
	wire.SealSignature(wire.HomeAnthropic, "x", ""),
	wire.SealSignature(wire.HomeGemini, "x", ""),
	wire.SealSignature(wire.HomeResponses, "x", ""),
	wire.SealSignature(wire.HomeBedrock, "x", ""),
	wire.SealRedacted("x"),
	wire.SealRedactedFor(wire.HomeBedrock, "x"),
)

// kindPrefixes are the beginnings of the envelopes of each kind wire
// makes: the magic and the kind byte, six bytes, eight characters.
var kindPrefixes = [...]string{
	wire.SealSignature(wire.HomeAnthropic, "x", "")[:8],
	wire.SealSignature(wire.HomeGemini, "x", "")[:8],
	wire.SealSignature(wire.HomeResponses, "x", "")[:8],
	wire.SealSignature(wire.HomeBedrock, "x", "")[:8],
	wire.SealRedacted("x")[:8],
	wire.SealRedactedFor(wire.HomeBedrock, "x")[:8],
}

func commonPrefix(ss ...string) string {
	p := ss[0]
	for _, s := range ss[1:] {
		n := 0
		for n < len(p) && n < len(s) && p[n] == s[n] {
			n++
		}
		p = p[:n]
	}
	return p
}

// redactSealed is s with each envelope in it whose thinking or
// signature holds something the redactor changes sealed again with them
// redacted, and each envelope it cannot look into replaced by
// sealedMarker. decoded says s is a decoded string (a JSON value), in
// which a line break can only be part of the value, so it is read as
// part of an envelope (the base64 decoder skips it) rather than its end;
// cut says the text s is part of went on past s's end. depth is the
// envelopes s is inside.
func (rc *exchangeRecorder) redactSealed(s string, decoded, cut bool, depth int) string {
	if len(sealedPrefix) < 6 {
		return s // wire's envelopes changed form: TestSealedPrefix fails
	}
	var b strings.Builder
	done, from := 0, 0 // s[:done] is in b; envelopes are looked for from s[from:]
	for {
		i := strings.Index(s[from:], sealedPrefix)
		if i < 0 {
			break
		}
		start := from + i
		end := envelopeEnd(s, start, decoded)
		from = end
		out, changed := rc.redactEnvelope(s[start:end], cut && end == len(s), depth)
		if !changed {
			continue
		}
		if b.Len() == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[done:start])
		b.WriteString(out)
		done = end
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// envelopeEnd is where the envelope that begins at s[start] ends: after
// the last of the characters of either base64 alphabet, of `\/` (a JSON
// encoder's escape of the slash, in text not decoded) and, in decoded
// text, of line breaks followed by more of the envelope; or after its
// padding, which only ends base64.
func envelopeEnd(s string, start int, decoded bool) int {
	end, j := start, start
	for j < len(s) {
		c := s[j]
		if end > start && s[end-1] == '=' && c != '=' {
			return end
		}
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '+', c == '/', c == '=', c == '-', c == '_':
			j++
			end = j
		case c == '\\' && j+1 < len(s) && s[j+1] == '/':
			j += 2
			end = j
		case decoded && (c == '\r' || c == '\n'):
			j++ // part of the envelope only if more of it follows
		default:
			return end
		}
	}
	return end
}

// redactEnvelope is env, text that begins as an envelope does, as a
// record keeps it, and whether that differs from env.
func (rc *exchangeRecorder) redactEnvelope(env string, cut bool, depth int) (string, bool) {
	if cut || len(env) > wire.MaxSealedSignature {
		return sealedMarker, true
	}
	plain := env
	if strings.Contains(plain, `\/`) {
		plain = strings.ReplaceAll(plain, `\/`, "/")
	}
	sealed, ok := wire.OpenSignature(plain)
	if !ok {
		if len(plain) >= len(kindPrefixes[0]) && slices.Contains(kindPrefixes[:], plain[:len(kindPrefixes[0])]) {
			// Begins as an envelope of a kind wire knows and does not
			// open: a forged or damaged one, whose payload could still
			// be read by a decoder more lenient than wire's.
			return sealedMarker, true
		}
		return env, false // base64 of other bytes, which no one takes for an envelope
	}
	if depth+1 >= maxSealedDepth {
		return sealedMarker, true
	}
	sig := rc.redactPayload(sealed.Signature, depth+1)
	thinking := rc.redactPayload(sealed.Thinking, depth+1)
	if sig == sealed.Signature && thinking == sealed.Thinking {
		return env, false
	}
	// Sealed again as it was: of its kind (a Bedrock redacted content
	// stays Bedrock's), with the digest of a text too long to carry. The
	// redacted signature, should it no longer fit an envelope, is
	// returned as it is, and the thinking left out: either way nothing
	// the redactor finds is kept.
	sealed.Signature, sealed.Thinking = sig, thinking
	return sealed.Seal(), true
}

// redactPayload is an envelope's signature or thinking, p, redacted, the
// envelopes in it too.
func (rc *exchangeRecorder) redactPayload(p string, depth int) string {
	p = rc.redactSealed(p, true, false, depth)
	if len(p) < rc.shortestSecret {
		return p
	}
	p, _ = rc.redact.Redact(p)
	return p
}
