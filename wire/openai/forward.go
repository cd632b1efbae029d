package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"math"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/jsonscan"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/internal/oaicompat"
)

// forwarder is the Chat Completions dialect's wire.Forwarder: the stream
// of an OpenAI upstream passed to an OpenAI client.
//
// An event is forwarded when it is a chunk object of one choice (index 0)
// whose delta holds only a role ("assistant"), content and
// reasoning_content, or only the arguments of one tool call that is
// under way (its canonical index the upstream's), with null logprobs,
// finish_reason and usage, and nothing else but keys that mean nothing to
// a client's reading of the answer (service_tier, system_fingerprint,
// obfuscation, provider); every string valid as it is (see
// jsonscan.ValidString), the decoder in a state where it makes of the
// event exactly its text (no <think> tag can open or close, nothing is
// held back). Its id, object, created and model are written as the
// gateway's, "usage":null is dropped for a client that did not ask for
// usage, and the rest passes as it came. Every other event is decoded
// and encoded.
type forwarder struct {
	d       streamDecoder
	e       *streamEncoder
	out     wire.Outgoing
	chunks  bool // yield the chunks of forwarded events too
	yielded int  // chunks Decode yielded
	seen    int  // chunks Stream was given
	passing bool // the chunks being yielded are of an event forwarded
	werr    error

	// upPrefix is the upstream's prefix (the members before "choices")
	// that head was made for: a copy, the events' data is lent.
	upPrefix []byte
	// head is `data: {"id":…,"object":…,"created":…,"model":…,` and the
	// upstream's members of upPrefix the gateway keeps.
	head []byte

	// tmpl is the shape, from "choices" on, of the last event skimmed
	// whole, and tmplS what that event held: an event of the same shape
	// holds the same but for its strings, and is not read key by key.
	tmpl  jsonscan.Template
	tmplS skimmed
}

// forward is the dialect row's Forward.
func forward(out wire.Outgoing, o wire.ForwardOptions) wire.Forwarder {
	withUsage := out.Request != nil && out.Request.StreamUsage
	return &forwarder{out: out, chunks: o.Chunks,
		e: newStreamEncoder(nil, nil, out.Model, out.ID, out.Created, withUsage)}
}

func (f *forwarder) Decode(r io.Reader) iter.Seq2[chat.Chunk, error] {
	return chat.Stream(r, func(yield func(chat.Chunk) bool) error {
		f.d = streamDecoder{ok: true, yield: func(c chat.Chunk) bool {
			f.yielded++
			return yield(c)
		}}
		return oaicompat.ReadEvents(r, 0, "openai stream", f.event, f.d.end, func() bool { return f.d.ok })
	})
}

func (f *forwarder) Stream(w io.Writer, chunks iter.Seq2[chat.Chunk, error]) error {
	f.e.w = w
	for c, err := range chunks {
		if f.werr != nil {
			return f.werr
		}
		if err != nil {
			_ = f.e.fail(err)
			return err
		}
		f.seen++
		if f.passing {
			continue // written by Decode
		}
		if err := f.e.chunk(&c); err != nil {
			return err
		}
	}
	if f.werr != nil {
		return f.werr
	}
	return f.e.finish()
}

// event handles one event: forwarded when it can be, else decoded.
func (f *forwarder) event(name string, data []byte) error {
	if name == "" && f.e.w != nil && f.werr == nil && f.seen == f.yielded {
		if done, err := f.forward(data); done || err != nil {
			return err
		}
	}
	return f.d.event(name, data)
}

// skimmed is what a forwarded event holds, its strings as written
// (quotes included; nil when absent or null).
type skimmed struct {
	role      bool // "role":"assistant"
	content   []byte
	reasoning []byte
	tool      bool
	toolKey   int
	args      []byte
	// usage is the span of `,"usage":null`, dropped for a client that
	// did not ask for usage; 0, 0 when there is none.
	usageFrom, usageTo int
	from               int // where "choices" starts
	// The event's string values from "choices" on, as spans of data, and
	// what each is: the holes of its template.
	holes [maxHoles][2]int
	kinds [maxHoles]uint8
	nh    int
}

// maxHoles bounds the string values of an event that is learnt as a
// template.
const maxHoles = 8

// What a template's hole is.
const (
	holeKept = iota
	holeContent
	holeReasoning
	holeArgs
)

// hole notes a string value of the event at [from, to).
func (s *skimmed) hole(from, to int, kind uint8) {
	if s.nh < maxHoles {
		s.holes[s.nh], s.kinds[s.nh] = [2]int{from, to}, kind
	}
	s.nh++
}

// forward writes the event whose data is data as it came, if it can be
// (see forwarder), and reports whether it did; the error is the one the
// decoder would have ended the stream with at this event.
func (f *forwarder) forward(data []byte) (bool, error) {
	var s skimmed
	if !f.skim(data, &s) {
		return false, nil
	}
	d := &f.d
	if d.think == thinkIn || d.held != "" || !f.e.role && !s.role {
		return false, nil
	}
	hasReasoning, hasContent := len(s.reasoning) > 2, len(s.content) > 2
	if d.think == thinkStart && !hasReasoning && hasContent {
		// The decoder looks for a <think> after leading white space: only
		// content that starts with neither is plain text at once.
		if c := s.content[1]; c == ' ' || c == '<' || c == '\\' {
			return false, nil
		}
	}
	var out [3]chat.Chunk
	n := 0
	if s.tool {
		if idx, ok := d.calls.Open(s.toolKey); !ok || idx != s.toolKey || len(s.args) <= 2 {
			return false, nil
		}
		args, ok := unquote(s.args)
		if !ok {
			return false, nil
		}
		// Open says the call is under way: the fragment is one delta.
		d.calls.Fragment(s.toolKey, "", "", args, func(c chat.Chunk) bool {
			out[n] = c
			return true
		})
		if err := d.calls.Err(); err != nil {
			return true, fmt.Errorf("openai: %w", err)
		}
		n++
		if f.e.sent == nil {
			f.e.sent = map[int][]byte{}
		}
		f.e.sent[s.toolKey] = append(f.e.sent[s.toolKey], args...)
	}
	if hasReasoning || hasContent {
		d.think = thinkOff
	}
	if s.role {
		f.e.role = true
	}
	if f.chunks {
		if hasReasoning {
			t, _ := unquote(s.reasoning)
			out[n] = chat.Chunk{Type: chat.ChunkReasoning, Text: t}
			n++
		}
		if hasContent {
			t, _ := unquote(s.content)
			out[n] = chat.Chunk{Type: chat.ChunkText, Text: t}
			n++
		}
		f.passing = true
		for i := range n {
			if !d.emit(out[i]) {
				break
			}
		}
		f.passing = false
		if !d.ok {
			return true, nil
		}
	}
	b := append(f.e.buf[:0], f.head...)
	if s.usageTo > 0 && !f.e.withUsage {
		b = append(b, data[s.from:s.usageFrom]...)
		b = append(b, data[s.usageTo:]...)
	} else {
		b = append(b, data[s.from:]...)
	}
	b = append(b, "\n\n"...)
	f.e.buf = b
	if _, err := f.e.w.Write(b); err != nil {
		f.werr = err
		// An empty chunk takes the failure to Stream, which stops the
		// pipeline as a failed write of its own would.
		d.emit(chat.Chunk{Type: chat.ChunkText})
	}
	return true, nil
}

// unquote decodes a string that jsonscan.ValidString accepted (an
// escaped surrogate pair by encoding/json).
func unquote(raw []byte) (string, bool) {
	if v, ok := jsonscan.New(raw).String(math.MaxInt); ok {
		return v, true
	}
	var v string
	err := json.Unmarshal(raw, &v)
	return v, err == nil
}

// Keys a chunk object may have that the forwarder passes on as they came
// (strings or null).
func keptKey(k []byte) bool {
	switch string(k) {
	case "service_tier", "system_fingerprint", "obfuscation", "provider":
		return true
	}
	return false
}

// skim reads data as an event to forward (see forwarder) into s, the
// prefix before "choices" known or learnt (f.head); false for anything
// else.
func (f *forwarder) skim(data []byte, s *skimmed) bool {
	from := 0
	if len(f.upPrefix) > 0 && bytes.HasPrefix(data, f.upPrefix) {
		from = len(f.upPrefix)
	} else if from = f.prefix(data); from < 0 {
		return false
	}
	// SSE carries a data line break as a new data line: an event is
	// written as one line.
	if bytes.IndexByte(data[from:], '\n') >= 0 {
		return false
	}
	s.from = from
	if f.matches(data, s) {
		return true
	}
	r := jsonscan.NewAt(data, from)
	if k, ok := r.RawString(); !ok || string(k) != "choices" || !r.Eat(':') || !r.Eat('[') {
		return false
	}
	if !f.choice(r, s) || !r.Eat(']') {
		return false
	}
	for {
		r.Space()
		at := r.Pos()
		if r.Eat('}') {
			if !r.End() {
				return false
			}
			f.learn(data, s)
			return true
		}
		if !r.Eat(',') {
			return false
		}
		k, ok := r.RawString()
		if !ok || !r.Eat(':') {
			return false
		}
		switch {
		case string(k) == "usage":
			if s.usageTo > 0 || !r.Literal("null") {
				return false
			}
			s.usageFrom, s.usageTo = at, r.Pos()
		case keptKey(k):
			if !r.Literal("null") {
				r.Space()
				at := r.Pos()
				if _, ok := r.ValidString(); !ok {
					return false
				}
				s.hole(at, r.Pos(), holeKept)
			}
		default:
			return false
		}
	}
}

// choice reads the one choice of a forwarded event.
func (f *forwarder) choice(r *jsonscan.Reader, s *skimmed) bool {
	if !r.Eat('{') {
		return false
	}
	delta := false
	for {
		k, ok := r.RawString()
		if !ok || !r.Eat(':') {
			return false
		}
		switch string(k) {
		case "index":
			if v, ok := r.Int(); !ok || v != 0 {
				return false
			}
		case "delta":
			if delta || !f.delta(r, s) {
				return false
			}
			delta = true
		case "logprobs", "finish_reason", "native_finish_reason":
			if !r.Literal("null") {
				return false
			}
		default:
			return false
		}
		if r.Eat(',') {
			continue
		}
		return delta && r.Eat('}')
	}
}

// Keys of a delta, as bits, so that none is read twice.
const (
	keyRole = 1 << iota
	keyContent
	keyReasoning
	keyTools
)

// delta reads a forwarded event's delta.
func (f *forwarder) delta(r *jsonscan.Reader, s *skimmed) bool {
	if !r.Eat('{') {
		return false
	}
	if r.Eat('}') {
		return true
	}
	seen := 0
	for {
		k, ok := r.RawString()
		if !ok || !r.Eat(':') {
			return false
		}
		bit := 0
		switch string(k) {
		case "role":
			bit = keyRole
			if !r.Literal("null") {
				v, ok := r.RawString()
				if !ok || string(v) != "assistant" {
					return false
				}
				s.role = true
			}
		case "content":
			bit = keyContent
			if !nullableRaw(r, &s.content, s, holeContent) {
				return false
			}
		case "reasoning_content":
			bit = keyReasoning
			if !nullableRaw(r, &s.reasoning, s, holeReasoning) {
				return false
			}
		case "refusal":
			// A refusal is written as content: forwarded only when null.
			if !r.Literal("null") {
				return false
			}
		case "tool_calls":
			bit = keyTools
			if !toolFragment(r, s) {
				return false
			}
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		if r.Eat(',') {
			continue
		}
		// Tool-call arguments travel alone: with text beside them, the
		// decoder's order and the encoder's events are the decode path's
		// business.
		return r.Eat('}') && (seen&keyTools == 0 || seen&(keyContent|keyReasoning) == 0)
	}
}

// nullableRaw reads a valid string as written into *dst, a hole of s of
// kind, or null.
func nullableRaw(r *jsonscan.Reader, dst *[]byte, s *skimmed, kind uint8) bool {
	if r.Literal("null") {
		*dst = nil
		return true
	}
	r.Space()
	at := r.Pos()
	v, ok := r.ValidString()
	*dst = v
	s.hole(at, r.Pos(), kind)
	return ok
}

// toolFragment reads a tool_calls array of one element that carries
// only an index and arguments.
func toolFragment(r *jsonscan.Reader, s *skimmed) bool {
	if !r.Eat('[') || !r.Eat('{') {
		return false
	}
	index, fn := false, false
	for {
		k, ok := r.RawString()
		if !ok || !r.Eat(':') {
			return false
		}
		switch string(k) {
		case "index":
			v, ok := r.Int()
			if !ok || index || v < 0 || v >= 1e9 {
				return false
			}
			s.toolKey, index = int(v), true
		case "function":
			if fn || !r.Eat('{') {
				return false
			}
			fn = true
			if k, ok := r.RawString(); !ok || string(k) != "arguments" || !r.Eat(':') {
				return false
			}
			r.Space()
			at := r.Pos()
			if s.args, ok = r.ValidString(); !ok {
				return false
			}
			// The hole is the string alone: the brace after it is the
			// template's.
			s.hole(at, r.Pos(), holeArgs)
			if !r.Eat('}') {
				return false
			}
		default:
			return false
		}
		if r.Eat(',') {
			continue
		}
		s.tool = index && fn
		return s.tool && r.Eat('}') && r.Eat(']')
	}
}

// prefix reads the members of data before "choices" and makes the head
// that replaces them; it returns where "choices" starts, or -1 when a
// member is one the forwarder does not pass on.
func (f *forwarder) prefix(data []byte) int {
	f.upPrefix = f.upPrefix[:0] // head is remade in place
	r := jsonscan.New(data)
	if !r.Eat('{') {
		return -1
	}
	// The gateway's id, object, created and model: the encoder's head
	// without its "choices".
	head := append(f.head[:0], f.e.head[:len(f.e.head)-len(`"choices":`)]...)
	for {
		r.Space()
		at := r.Pos()
		k, ok := r.RawString()
		if !ok || !r.Eat(':') {
			return -1
		}
		switch {
		case string(k) == "choices":
			if at > maxPrefix || bytes.IndexByte(data[:at], '\n') >= 0 {
				return -1
			}
			f.upPrefix = append(f.upPrefix[:0], data[:at]...)
			f.head = head
			return at
		case string(k) == "created":
			if _, ok := r.Int(); !ok {
				return -1
			}
		case string(k) == "id" || string(k) == "object" || string(k) == "model":
			if _, ok := r.RawString(); !ok {
				return -1
			}
		case keptKey(k):
			if !r.Literal("null") {
				if _, ok := r.RawString(); !ok {
					return -1
				}
			}
			head = append(head, data[at:r.Pos()]...)
			head = append(head, ',')
		default:
			return -1
		}
		if !r.Eat(',') {
			return -1
		}
	}
}

// learn makes the event s was skimmed from (whole, from "choices" on)
// the template of the next ones.
func (f *forwarder) learn(data []byte, s *skimmed) {
	if s.nh > maxHoles {
		return
	}
	var holes [maxHoles][2]int
	for i := range s.nh {
		holes[i] = [2]int{s.holes[i][0] - s.from, s.holes[i][1] - s.from}
	}
	if f.tmpl.Learn(data[s.from:], holes[:s.nh]) {
		f.tmplS = *s
	}
}

// matches reports whether data, from s.from on, has the shape of the
// template, and fills s as skimming it whole would.
func (f *forwarder) matches(data []byte, s *skimmed) bool {
	t := &f.tmplS
	if !f.tmpl.Learnt() || !f.tmpl.Match(data[s.from:], s.holes[:t.nh]) {
		return false
	}
	from := s.from
	*s = skimmed{role: t.role, tool: t.tool, toolKey: t.toolKey, from: from, nh: t.nh, kinds: t.kinds, holes: s.holes}
	for i := range t.nh {
		h := &s.holes[i]
		h[0], h[1] = h[0]+from, h[1]+from
		switch raw := data[h[0]:h[1]]; t.kinds[i] {
		case holeContent:
			s.content = raw
		case holeReasoning:
			s.reasoning = raw
		case holeArgs:
			s.args = raw
		}
	}
	if t.usageTo > 0 {
		// Where the template had it, moved by the holes before it.
		base, tbase := from, t.from
		for i := range t.nh {
			if t.holes[i][1] <= t.usageFrom {
				base, tbase = s.holes[i][1], t.holes[i][1]
			}
		}
		s.usageFrom = base + t.usageFrom - tbase
		s.usageTo = s.usageFrom + t.usageTo - t.usageFrom
	}
	return true
}
