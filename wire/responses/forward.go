package responses

import (
	"bytes"
	"encoding/json"
	"io"
	"iter"
	"math"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/jsonscan"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/internal/oaicompat"
)

// forwarder is the Responses dialect's wire.Forwarder: the stream of a
// Responses upstream passed to a Responses client.
//
// The client's events are the encoder's, whatever the upstream wrote:
// its response id in every response object, its item ids and output
// indices, its sequence numbers counting from 0, the route's model. What
// a forwarded event saves is the way through chunks: a delta event
// (output_text.delta, refusal.delta, reasoning_summary_text.delta,
// reasoning_text.delta, function_call_arguments.delta) that holds only
// its type, item_id, output_index, delta and the keys no reader of the
// stream needs (sequence_number, content_index, summary_index, logprobs,
// obfuscation), each once, its delta a non-empty string valid as it is
// (see jsonscan.ValidString), is written by Decode as the encoder would
// write its chunk, the delta's bytes copied when they are already as the
// encoder escapes a string, while the encoder has the item of the delta's
// kind open with its part begun (a message, a reasoning summary, the
// call the decoder names) and the decoder would take the delta as it is
// (a call under way, within its bounds). Every other event (the start and
// end, item and part starts and ends, usage, errors, the first delta of
// an item) is decoded and encoded. The client reads the same bytes either
// way.
type forwarder struct {
	d       *streamDecoder
	e       *streamEncoder
	chunks  bool // yield the chunks of forwarded events too
	live    bool // Stream has written the stream's start and takes chunks
	yielded int  // chunks Decode yielded
	seen    int  // chunks Stream was given
	passing bool // the chunks being yielded are of an event forwarded
	werr    error
	esc     []byte // a delta escaped as the encoder escapes it
	shape   shape  // the last delta event skimmed whole
}

// forward is the dialect row's Forward.
func forward(out wire.Outgoing, o wire.ForwardOptions) wire.Forwarder {
	return &forwarder{e: newStreamEncoder(nil, out.Request, out.Model, out.ID, out.Created), chunks: o.Chunks}
}

func (f *forwarder) Decode(r io.Reader) iter.Seq2[chat.Chunk, error] {
	return chat.Stream(r, func(yield func(chat.Chunk) bool) error {
		f.d = newStreamDecoder(func(c chat.Chunk) bool {
			f.yielded++
			return yield(c)
		})
		return oaicompat.ReadEvents(r, MaxEvent, "responses stream", f.event, f.d.end, func() bool { return f.d.ok })
	})
}

func (f *forwarder) Stream(w io.Writer, chunks iter.Seq2[chat.Chunk, error]) error {
	e := f.e
	e.w = w
	// Decode writes through e only while live: once Stream has returned,
	// an event read after (a pipeline that pulls past the end) is decoded
	// only, and the encoder's room can serve another stream.
	defer e.release()
	if err := e.begin(); err != nil {
		return err
	}
	f.live = true
	defer func() { f.live = false }()
	var failure error
	for c, err := range chunks {
		if f.werr != nil {
			return f.werr
		}
		if err == nil {
			f.seen++
			if f.passing {
				continue // written by Decode
			}
		}
		var werr error
		if failure, werr = e.take(&c, err); werr != nil {
			return werr
		}
		if failure != nil {
			break
		}
	}
	if f.werr != nil {
		return f.werr
	}
	return e.end(failure)
}

// event handles one event: forwarded when it can be, else decoded.
func (f *forwarder) event(name string, data []byte) error {
	if f.live && f.werr == nil && f.seen == f.yielded && f.d.ok {
		if f.forward(data) {
			return nil
		}
	}
	return f.d.event(name, data)
}

// What a forwarded delta is.
const (
	deltaText = 1 + iota
	deltaReasoning
	deltaArgs
)

// delta is a delta event to forward, as skimmed: its strings as written
// (the delta with its quotes).
type delta struct {
	kind     uint8
	index    int
	hasIndex bool
	itemID   []byte
	value    []byte
	// Where in the event the values that change from delta to delta
	// are (end 0 when absent): its sequence number, delta and
	// obfuscation, white space around them left out.
	seq, text, pad [2]int
}

// skimDelta reads data as a delta event to forward into dl; false for
// any other event, or one in doubt.
func skimDelta(data []byte, dl *delta) bool {
	r := jsonscan.New(data)
	var set uint32
	// span is where the value just read began (from, after its key's
	// colon) and ended.
	span := func(from int) [2]int {
		for from < r.Pos() && isSpace(data[from]) {
			from++
		}
		return [2]int{from, r.Pos()}
	}
	ok := r.Object(func(key []byte) bool {
		from := r.Pos()
		switch string(key) {
		case "type":
			v, ok := r.RawString()
			if !ok || !seen(&set, 1<<0) {
				return false
			}
			switch string(v) {
			case "response.output_text.delta", "response.refusal.delta":
				dl.kind = deltaText
			case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
				dl.kind = deltaReasoning
			case "response.function_call_arguments.delta":
				dl.kind = deltaArgs
			default:
				return false
			}
			return true
		case "item_id":
			v, ok := r.RawString()
			dl.itemID = v
			return ok && seen(&set, 1<<1)
		case "output_index":
			v, ok := r.Int()
			if !ok || v < 0 || v > 1e9 || !seen(&set, 1<<2) {
				return false
			}
			dl.index, dl.hasIndex = int(v), true
			return true
		case "delta":
			v, ok := r.ValidString()
			dl.value, dl.text = v, span(from)
			return ok && len(v) > 2 && seen(&set, 1<<3)
		case "summary_index":
			// The decoder reads it as an integer: anything else is its
			// error to name.
			_, ok := r.Int()
			return ok && seen(&set, 1<<4)
		case "sequence_number":
			ok := seen(&set, 1<<5) && r.Skip(maxDepth)
			dl.seq = span(from)
			return ok
		case "content_index":
			return seen(&set, 1<<6) && r.Skip(maxDepth)
		case "logprobs":
			return seen(&set, 1<<7) && r.Skip(maxDepth)
		case "obfuscation":
			ok := seen(&set, 1<<8) && r.Skip(maxDepth)
			dl.pad = span(from)
			return ok
		}
		return false
	}) && r.End()
	return ok && dl.kind != 0 && dl.value != nil
}

// forward writes the delta event whose data is data as the encoder
// would write its chunk, if it can be (see forwarder), and reports
// whether it did.
func (f *forwarder) forward(data []byte) bool {
	var dl delta
	if !f.shape.match(data, &dl) {
		if !skimDelta(data, &dl) {
			return false
		}
		f.shape.learn(data, &dl)
	}
	d, e := f.d, f.e
	// The item the decoder takes the event to be about, as state finds
	// it.
	var s *itemState
	if dl.hasIndex {
		s = d.atIndex(dl.index)
	}
	if s == nil && len(dl.itemID) > 0 {
		s = d.withIDBytes(dl.itemID)
	}
	esc, plain := f.escape(dl.value)
	if esc == nil {
		return false
	}
	var c chat.Chunk
	var call *openCall
	switch dl.kind {
	case deltaText, deltaReasoning:
		open := e.text.on
		if dl.kind == deltaReasoning {
			open = e.reason.on && e.reason.part
		}
		// Past MaxStreamOutput the encoder ends the stream after the
		// chunk: the decode path's to do.
		if !open || e.size+len(esc) > MaxStreamOutput {
			return false
		}
		if s != nil {
			s.text = true
		}
		c.Type = chat.ChunkText
		if dl.kind == deltaReasoning {
			c.Type = chat.ChunkReasoning
		}
	case deltaArgs:
		if s == nil || s.kind != "function_call" || s.ended {
			return false
		}
		var ok bool
		if call, ok = e.calls[s.call]; !ok || call.held > 0 {
			// Bytes held back are the encoder's to write first.
			return false
		}
		n := len(plain)
		if plain == nil {
			// The arguments as the decoder keeps them: unescaped.
			v, ok := unquote(dl.value)
			if !ok {
				return false
			}
			c.Arguments, n = v, len(v)
		}
		if len(s.args)+n > MaxArguments || d.bytes+n > MaxToolCallBytes || e.size+n > MaxStreamOutput {
			return false
		}
		d.bytes += n
		c.Type, c.Index = chat.ChunkToolCallDelta, s.call
		if plain != nil {
			s.args = append(s.args, plain...)
			call.args = append(call.args, plain...)
		} else {
			s.args = append(s.args, c.Arguments...)
			call.args = append(call.args, c.Arguments...)
		}
		e.size += n
	}
	if f.chunks {
		switch {
		case c.Type != chat.ChunkToolCallDelta:
			c.Text, _ = unquote(dl.value)
		case c.Arguments == "":
			c.Arguments = string(plain)
		}
		f.passing = true
		d.emit(c)
		f.passing = false
		if !d.ok {
			return true
		}
	}
	var err error
	switch dl.kind {
	case deltaText:
		t := &e.text
		err = e.event("response.output_text.delta", func(b []byte) []byte {
			b = e.appendKeptEscaped(appendInt(at(b, t.id, t.index), "content_index", 0), "delta", esc)
			return appendRaw(b, "logprobs", []byte("[]"))
		})
	case deltaReasoning:
		r := &e.reason
		err = e.event("response.reasoning_summary_text.delta", func(b []byte) []byte {
			return e.appendKeptEscaped(appendInt(at(b, r.id, r.index), "summary_index", 0), "delta", esc)
		})
	case deltaArgs:
		err = e.event("response.function_call_arguments.delta", func(b []byte) []byte {
			b = appendKey(at(b, call.id, call.index), "delta")
			b = append(b, '"')
			b = append(b, esc...)
			return append(b, '"')
		})
	}
	if err == nil {
		err = e.send()
	}
	if err != nil {
		f.werr = err
		// An empty chunk takes the failure to Stream, which stops the
		// pipeline as a failed write of its own would.
		d.emit(chat.Chunk{Type: chat.ChunkText})
	}
	return true
}

// escape is the content of the string raw (quotes included, valid as
// jsonscan.ValidString reads it) as the encoder writes it
// (chat.AppendString), without its quotes; plain is raw's content when
// that is also its value (no escapes), nil otherwise. esc is nil when
// raw cannot be read.
func (f *forwarder) escape(raw []byte) (esc, plain []byte) {
	body := raw[1 : len(raw)-1]
	switch canonical(body) {
	case 2:
		return body, body
	case 1:
		return body, nil
	}
	v, ok := unquote(raw)
	if !ok {
		return nil, nil
	}
	f.esc = chat.AppendString(f.esc[:0], v)
	return f.esc[1 : len(f.esc)-1], nil
}

// canonical reports whether body, a valid JSON string's content, is
// written as chat.AppendString writes its value: 2 with no escapes at
// all, 1 with only the escapes it writes itself (\" \\ \n \r \t), 0
// otherwise (\u escapes, \/ \b \f, a raw U+2028 or U+2029, which it
// escapes).
func canonical(body []byte) int {
	out := 2
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '\\':
			i++
			switch body[i] {
			case '"', '\\', 'n', 'r', 't':
				out = 1
			default:
				return 0
			}
		case 0xE2:
			if i+2 < len(body) && body[i+1] == 0x80 && (body[i+2] == 0xA8 || body[i+2] == 0xA9) {
				return 0
			}
		}
	}
	return out
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

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// shape is a delta event learnt from one that skimDelta read whole: its
// bytes but for its holes, the values that change from one delta of a
// stream to the next (the sequence number, the delta, the obfuscation).
// An event with the same bytes outside the holes, an integer in the
// number hole and a valid string (jsonscan.ValidString) in each string
// hole has the same keys with the same values in the same order, but for
// those: skimDelta would read it as the learnt one, with its own delta.
// Checking an event against the shape of the one before costs a
// comparison of bytes where skimming it costs a decision per token.
type shape struct {
	lit  []byte // the event with its holes cut out
	cuts []hole
	dl   delta  // the learnt event as skimmed; itemID is id
	id   []byte // its item id, kept (the event's bytes are lent)
	buf  []byte // where lit and id are
	room [3]hole
}

// hole is where in a shape's bytes a value was cut out, and what it is.
type hole struct {
	at   int
	kind uint8
}

// What a hole holds.
const (
	holeSeq   = iota // an integer: digits, no leading zero
	holeDelta        // the delta, a valid string of at least one character
	holePad          // a valid string
)

// maxShape bounds the event a shape keeps: a delta is a few words.
const maxShape = 1 << 10

// learn makes data, which skimDelta read as dl, the shape, if it can
// be one; else the shape is left empty.
func (s *shape) learn(data []byte, dl *delta) {
	s.lit, s.cuts = nil, s.room[:0]
	if len(data) > maxShape {
		return
	}
	if need := len(data) + len(dl.itemID); cap(s.buf) < need {
		// One allocation for both, and the room of the next ones.
		s.buf = make([]byte, 0, max(need, 256))
	}
	s.lit = s.buf[:0]
	var holes [3]struct {
		span [2]int
		kind uint8
	}
	n := 0
	add := func(span [2]int, kind uint8) {
		if span[1] == 0 {
			return
		}
		v := data[span[0]:span[1]]
		switch kind {
		case holeSeq:
			if digits(v) != len(v) {
				return // left in the shape as it is
			}
		case holePad:
			if !oneString(v) {
				return
			}
		}
		holes[n].span, holes[n].kind = span, kind
		n++
	}
	add(dl.seq, holeSeq)
	add(dl.text, holeDelta)
	add(dl.pad, holePad)
	// In the order they were written.
	for i := 1; i < n; i++ {
		for j := i; j > 0 && holes[j].span[0] < holes[j-1].span[0]; j-- {
			holes[j], holes[j-1] = holes[j-1], holes[j]
		}
	}
	at := 0
	for _, h := range holes[:n] {
		s.lit = append(s.lit, data[at:h.span[0]]...)
		s.cuts = append(s.cuts, hole{at: len(s.lit), kind: h.kind})
		at = h.span[1]
	}
	s.lit = append(s.lit, data[at:]...)
	end := len(s.lit)
	s.id = append(s.buf[end:end], dl.itemID...)
	s.lit = s.lit[:end:end]
	s.dl = delta{kind: dl.kind, index: dl.index, hasIndex: dl.hasIndex, itemID: s.id}
}

// match reports whether data has the shape, and if so reads it into dl
// as skimDelta would.
func (s *shape) match(data []byte, dl *delta) bool {
	if len(s.lit) == 0 {
		return false
	}
	var value []byte
	pos, from := 0, 0
	for _, h := range s.cuts {
		seg := s.lit[from:h.at]
		if !bytes.HasPrefix(data[pos:], seg) {
			return false
		}
		pos += len(seg)
		if h.kind == holeSeq {
			n := digits(data[pos:])
			if n == 0 {
				return false
			}
			pos += n
		} else {
			r := jsonscan.NewAt(data, pos)
			v, ok := r.ValidString()
			if !ok {
				return false
			}
			if h.kind == holeDelta {
				if len(v) <= 2 {
					return false
				}
				value = v
			}
			pos = r.Pos()
		}
		from = h.at
	}
	if !bytes.Equal(data[pos:], s.lit[from:]) || value == nil {
		return false
	}
	*dl = s.dl
	dl.value = value
	return true
}

// digits is the length of the JSON integer of digits alone at the start
// of b (no sign, no leading zero): 0 when there is none.
func digits(b []byte) int {
	n := 0
	for n < len(b) && '0' <= b[n] && b[n] <= '9' {
		n++
	}
	if n > 1 && b[0] == '0' {
		return 0
	}
	return n
}

// oneString reports whether b is one valid string and nothing else.
func oneString(b []byte) bool {
	r := jsonscan.New(b)
	_, ok := r.ValidString()
	return ok && r.Pos() == len(b)
}
