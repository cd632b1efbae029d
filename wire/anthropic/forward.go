package anthropic

import (
	"bytes"
	"encoding/json"
	"io"
	"iter"
	"math"
	"strconv"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/jsonscan"
	"github.com/ctxkit/ctxkit/wire"
)

// forwarder is the Messages dialect's wire.Forwarder: the stream of an
// Anthropic upstream passed to an Anthropic client.
//
// A content_block_delta event is forwarded when it holds only its type,
// its index and a delta of one of the types the decoder reads (text_delta,
// thinking_delta, signature_delta, input_json_delta) with its one string
// valid as it is (see jsonscan.ValidString) and not empty, for a block
// the decoder has open of the delta's kind, and the encoder has the same
// block open with nothing held back (no stop waiting, a thinking block
// not signed before more thinking, a tool call open with every fragment
// written and none waiting behind it). Its index is written as the
// encoder numbers the block; the rest passes as it came. Every other
// event (message_start with the gateway's id and model, block starts and
// stops, message_delta with the usage and its cost, errors) is decoded
// and encoded: a stream's few events besides its deltas.
type forwarder struct {
	d         decoder
	s         *streamWriter
	model, id string
	chunks    bool // yield the chunks of forwarded events too
	yielded   int  // chunks Decode yielded
	seen      int  // chunks Stream was given
	passing   bool // the chunks being yielded are of an event forwarded
	werr      error

	// tmpl is the shape of the last delta skimmed whole, tmplS what it
	// held: a delta of the same shape holds the same but for its string,
	// and is not read key by key.
	tmpl  jsonscan.Template
	tmplS skimmed
}

// forward is the dialect row's Forward.
func forward(out wire.Outgoing, o wire.ForwardOptions) wire.Forwarder {
	return &forwarder{model: out.Model, id: out.ID, chunks: o.Chunks}
}

func (f *forwarder) Decode(r io.Reader) iter.Seq2[chat.Chunk, error] {
	return chat.Stream(r, func(yield func(chat.Chunk) bool) error {
		f.d = decoder{blocks: map[int]*openBlock{}, yield: func(c chat.Chunk) bool {
			f.yielded++
			return yield(c)
		}}
		return f.d.run(r, f.forward)
	})
}

func (f *forwarder) Stream(w io.Writer, chunks iter.Seq2[chat.Chunk, error]) error {
	f.s = newStreamWriter(w, nil, f.model, f.id)
	for c, err := range chunks {
		if f.werr != nil {
			return f.werr
		}
		if err != nil {
			f.s.Fail(err)
			return err
		}
		f.seen++
		if f.passing {
			continue // written by Decode
		}
		if err := f.s.Write(c); err != nil {
			return err
		}
		if f.s.done {
			return f.s.err
		}
	}
	if f.werr != nil {
		return f.werr
	}
	return f.s.Close()
}

// skimmed is a content_block_delta to forward.
type skimmed struct {
	index          int
	idxFrom, idxTo int  // the index's digits in the data
	typ            kind // the delta's type
	value          []byte
	valueAt        [2]int // where value is in the data
}

// forward writes the event (name, data) as it came, if it can be (see
// forwarder), and reports whether it did (done); more is false when the
// consumer has stopped.
func (f *forwarder) forward(name kind, data []byte) (done, more bool, err error) {
	if name != kindBlockDelta && name != kindNone || f.s == nil || f.werr != nil || f.seen != f.yielded {
		return false, true, nil
	}
	s := f.s
	if s.done || s.err != nil || s.bound != nil || !s.started || s.stop != nil {
		return false, true, nil
	}
	var sk skimmed
	var hole [1][2]int
	switch {
	case f.tmpl.Match(data, hole[:]):
		sk = f.tmplS
		sk.value, sk.valueAt = data[hole[0][0]:hole[0][1]], hole[0]
		if t := &f.tmplS; t.idxFrom >= t.valueAt[1] {
			// The index after the string: moved with its end.
			shift := hole[0][1] - t.valueAt[1]
			sk.idxFrom, sk.idxTo = t.idxFrom+shift, t.idxTo+shift
		}
	case skim(data, &sk):
		if f.tmpl.Learn(data, [][2]int{sk.valueAt}) {
			f.tmplS = sk
		}
	default:
		return false, true, nil
	}
	ob := f.d.blocks[sk.index]
	// An empty string makes no chunk: the decode path writes nothing.
	if ob == nil || len(sk.value) <= 2 {
		return false, true, nil
	}
	var c chat.Chunk
	switch {
	case sk.typ == kindTextDelta && ob.kind == kindText && s.open == textBlock:
		c.Type = chat.ChunkText
	case sk.typ == kindThinkingDelta && ob.kind == kindThinking && s.open == thinkingBlock && !s.signed:
		c.Type = chat.ChunkReasoning
	case sk.typ == kindSignatureDelta && ob.kind == kindThinking && s.open == thinkingBlock:
		c.Type = chat.ChunkReasoning
	case sk.typ == kindInputJSONDelta && ob.kind == kindToolUse && s.open == toolBlock:
		tc := s.calls[ob.tool]
		if tc == nil || tc != s.cur || tc.state != callOpen || len(s.queue) > 0 || tc.sent != len(tc.args) {
			return false, true, nil
		}
		args, ok := unquote(sk.value)
		n := len(args)
		// Past a bound, the decode path ends the stream as it does.
		if !ok || ob.args.Len()+n > MaxArguments || f.d.bytes+n > MaxToolCallBytes || s.held+n > MaxToolCallBytes {
			return false, true, nil
		}
		ob.args.WriteString(args)
		f.d.bytes += n
		s.held += n
		tc.held += n
		tc.args = append(tc.args, args...)
		tc.sent = len(tc.args)
		c = chat.Chunk{Type: chat.ChunkToolCallDelta, Index: ob.tool, Arguments: args}
	default:
		return false, true, nil
	}
	if sk.typ == kindSignatureDelta {
		s.signed = true
	}
	s.fresh = false
	if f.chunks {
		if c.Type != chat.ChunkToolCallDelta {
			v, _ := unquote(sk.value)
			switch sk.typ {
			case kindSignatureDelta:
				c.Signature = v
			default:
				c.Text = v
			}
		}
		f.passing = true
		more = f.d.yield(c)
		f.passing = false
		if !more {
			return true, false, nil
		}
	}
	out := data
	if sk.index != s.next {
		out = append(s.buf[:0], data[:sk.idxFrom]...)
		out = strconv.AppendInt(out, int64(s.next), 10)
		out = append(out, data[sk.idxTo:]...)
		s.buf = out[:0]
	}
	if err := s.w.Event(evBlockDelta, out); err != nil {
		f.werr = err
		// An empty chunk takes the failure to Stream, which stops the
		// pipeline as a failed write of its own would.
		return true, f.d.yield(chat.Chunk{Type: chat.ChunkText}), nil
	}
	return true, true, nil
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

// skim reads data as a content_block_delta to forward into sk: only
// "type", "index" and "delta", each once, the delta's type and its one
// string; false for anything else.
func skim(data []byte, sk *skimmed) bool {
	if bytes.IndexByte(data, '\n') >= 0 {
		return false // written as one data line
	}
	r := jsonscan.New(data)
	if !r.Eat('{') {
		return false
	}
	var typ, index, delta bool
	for {
		k, ok := r.RawString()
		if !ok || !r.Eat(':') {
			return false
		}
		switch string(k) {
		case "type":
			v, ok := r.RawString()
			if !ok || typ || string(v) != evBlockDelta {
				return false
			}
			typ = true
		case "index":
			if index {
				return false
			}
			r.Space()
			sk.idxFrom = r.Pos()
			v, ok := r.Int()
			if !ok || v < 0 || v >= 1e9 {
				return false
			}
			sk.index, sk.idxTo, index = int(v), r.Pos(), true
		case "delta":
			if delta || !skimDelta(r, sk) {
				return false
			}
			delta = true
		default:
			return false
		}
		if r.Eat(',') {
			continue
		}
		return typ && index && delta && r.Eat('}') && r.End()
	}
}

// skimDelta reads a delta of one type and its string.
func skimDelta(r *jsonscan.Reader, sk *skimmed) bool {
	if !r.Eat('{') {
		return false
	}
	var field kind // the delta type whose field the string is
	for {
		k, ok := r.RawString()
		if !ok || !r.Eat(':') {
			return false
		}
		switch string(k) {
		case "type":
			v, ok := r.RawString()
			if !ok || sk.typ != kindNone {
				return false
			}
			sk.typ = kindOf(string(v))
		case "text", "thinking", "signature", "partial_json":
			if field != kindNone {
				return false
			}
			switch string(k) {
			case "text":
				field = kindTextDelta
			case "thinking":
				field = kindThinkingDelta
			case "signature":
				field = kindSignatureDelta
			default:
				field = kindInputJSONDelta
			}
			r.Space()
			at := r.Pos()
			if sk.value, ok = r.ValidString(); !ok {
				return false
			}
			sk.valueAt = [2]int{at, r.Pos()}
		default:
			return false
		}
		if r.Eat(',') {
			continue
		}
		return r.Eat('}') && field != kindNone && field == sk.typ
	}
}
