package responses

import (
	"encoding/json"
	"errors"
	"io"
	"iter"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/chat"
)

// MaxStreamOutput bounds the text, reasoning (both as written in JSON,
// escaped) and arguments EncodeStream keeps for the events that repeat
// them (output_text.done, output_item.done, response.completed): a
// stream that goes past it ends with response.failed. It is as much as
// the gateway reads of a whole upstream answer for a client that does
// not stream.
const MaxStreamOutput = 64 << 20

// ErrStreamTooLarge is what EncodeStream returns for a stream past
// MaxStreamOutput.
var ErrStreamTooLarge = errors.New("responses: the response is larger than " + strconv.Itoa(MaxStreamOutput) + " bytes")

// EncodeStream writes a canonical chunk stream to w as a Responses API
// stream: typed server-sent events, each an "event:" line naming its type
// and a "data:" line whose JSON has that type and a sequence_number
// counting from 0, in the order the API sends them:
//
//   - response.created, then response.in_progress, each with the Response
//     object (status in_progress, no output, usage null; the request's
//     settings echoed as EncodeResponse does).
//   - text → a message item: response.output_item.added (status
//     in_progress, no content), response.content_part.added (an empty
//     output_text), one response.output_text.delta per chunk; when
//     another item begins or the stream ends, response.output_text.done,
//     response.content_part.done and response.output_item.done (the
//     item, completed, with its whole text).
//   - reasoning text → a reasoning item: output_item.added (no summary),
//     response.reasoning_summary_part.added, one
//     response.reasoning_summary_text.delta per chunk, then
//     reasoning_summary_text.done, reasoning_summary_part.done and
//     output_item.done; a signature ends the item, and the done item
//     carries it as encrypted_content (a signature alone is an item with
//     no summary). Redacted reasoning is an item of its own, added and
//     done at once, its encrypted_content marked as EncodeResponse marks
//     it.
//   - tool calls → function_call items: output_item.added (status
//     in_progress, call_id, name, arguments ""), one
//     response.function_call_arguments.delta per fragment,
//     response.function_call_arguments.done (arguments, name) and
//     output_item.done at the call's end. Calls end when their
//     tool_call_end comes: from an upstream that ends them all at its
//     stop (the Chat Completions shape), their done events follow each
//     other at the end.
//   - at the end: response.completed (status completed),
//     response.incomplete (incomplete_details.reason max_output_tokens or
//     content_filter) or response.failed (an error chunk, a decode error
//     or a stream cut before its stop: error {code, message}, as
//     EncodeResponse writes it), with the whole output and the last
//     usage; then "data: [DONE]", which the SDKs stop at.
//
// The done events and items repeat a text as its deltas wrote it, which
// is the chunks' text unless a chunk ends inside a UTF-8 character: its
// delta writes the stray bytes as U+FFFD, as encoding/json does, and the
// done text is the same, so that a client that joins the deltas has the
// done text.
//
// Output items are numbered (output_index) in the order they begin; their
// ids are those EncodeResponse gives, so a stored response read back has
// the same ones. Deltas carry no obfuscation padding.
//
// When chunks yields an error, EncodeStream ends with response.failed and
// returns the error; likewise with ErrStreamTooLarge past MaxStreamOutput.
// The events one chunk makes are written to w together, in one Write (a
// Write each 32 KiB for large ones), so that a writer that flushes or
// sets a deadline on each Write does it once per chunk. A write error
// ends the encoding and is returned.
func EncodeStream(w io.Writer, req *chat.Request, model, id string, created int64, chunks iter.Seq2[chat.Chunk, error]) error {
	e := newStreamEncoder(w, req, model, id, created)
	defer e.release()
	if err := e.begin(); err != nil {
		return err
	}
	var failure error
	for c, err := range chunks {
		var werr error
		if failure, werr = e.take(&c, err); werr != nil {
			return werr
		}
		if failure != nil {
			break
		}
	}
	return e.end(failure)
}

func newStreamEncoder(w io.Writer, req *chat.Request, model, id string, created int64) *streamEncoder {
	e := &streamEncoder{w: w, id: id, resp: echo(req, model, id, created)}
	// The buffers start in a room taken from those of the streams that
	// ended: a short answer is written without allocating them, and the
	// room, 7 KiB, is not allocated (nor cleared, nor swept) per stream.
	r := rooms.Get().(*room)
	e.room = r
	e.buf = r.bytes[:0:bufRoom]
	e.scratch = r.bytes[bufRoom:bufRoom:scratchRoom]
	e.kept = r.bytes[scratchRoom:scratchRoom:keptRoom]
	e.spare = r.bytes[keptRoom:keptRoom:argsRoom]
	e.items = r.bytes[argsRoom:argsRoom]
	e.spans = r.spans[:0]
	return e
}

// room is the memory an encoder's buffers start in. Its bytes need no
// clearing between streams: every buffer starts empty and is read only
// up to what the stream wrote.
type room struct {
	bytes [itemsRoom]byte
	spans [8][2]int
	out   [8]json.RawMessage
}

var rooms = sync.Pool{New: func() any { return new(room) }}

// release gives the encoder's room back for another stream, once the
// stream has ended. Every slice of the encoder into it is dropped, so an
// encoder used after its release allocates its buffers anew rather than
// writing into another stream's.
func (e *streamEncoder) release() {
	r := e.room
	if r == nil {
		return
	}
	e.room = nil
	e.buf, e.scratch, e.kept, e.spare, e.items, e.spans = nil, nil, nil, nil, nil, nil
	e.resp.Output = nil
	for _, c := range e.calls {
		c.args = nil
	}
	clear(r.out[:]) // they point into items, which may have grown past the room
	rooms.Put(r)
}

// begin writes the stream's first events.
func (e *streamEncoder) begin() error {
	if err := e.event("response.created", e.start); err != nil {
		return err
	}
	if err := e.event("response.in_progress", e.start); err != nil {
		return err
	}
	return e.send()
}

// take encodes one chunk of the stream, or the error that ends it: it
// returns the failure the stream ends with (err, or ErrStreamTooLarge),
// and apart a write error.
func (e *streamEncoder) take(c *chat.Chunk, err error) (failure, werr error) {
	if err != nil {
		if e.err == nil {
			e.err = &chat.StreamError{Type: "server_error", Message: err.Error(), Retryable: true}
		}
		return err, nil
	}
	if err := e.chunk(c); err != nil {
		return nil, err
	}
	if err := e.send(); err != nil {
		return nil, err
	}
	if e.size > MaxStreamOutput {
		e.err = &chat.StreamError{Type: "server_error", Message: ErrStreamTooLarge.Error()}
		return ErrStreamTooLarge, nil
	}
	return nil, nil
}

// end closes what is open and writes the terminal event and [DONE];
// it returns failure, or the write error.
func (e *streamEncoder) end(failure error) error {
	if err := e.closeAll(); err != nil {
		return err
	}
	r := &e.resp
	r.Output = nil
	if e.room != nil {
		r.Output = e.room.out[:0]
	}
	for _, sp := range e.spans {
		r.Output = append(r.Output, e.items[sp[0]:sp[1]:sp[1]])
	}
	if !e.usage {
		// The API always reports usage at the end: none came, none was
		// counted.
		e.usageOf = chat.Usage{}
	}
	finish(r, e.stop, e.err, &e.usageOf)
	typ := "response.completed"
	switch r.Status {
	case "incomplete":
		typ = "response.incomplete"
	case "failed":
		typ = "response.failed"
	}
	if err := e.event(typ, e.start); err != nil {
		return err
	}
	e.buf = append(e.buf, "data: [DONE]\n\n"...)
	if err := e.send(); err != nil {
		return err
	}
	return failure
}

// streamEncoder writes the events of one stream. Its buffers are kept
// for the whole stream and reused from event to event and from item to
// item: an event costs no allocation of its own (a long text costs the
// growths of the buffers that keep it).
type streamEncoder struct {
	w   io.Writer
	buf []byte // the events not written yet
	seq int64
	id  string
	// resp is the response object of the first and last events.
	resp responseObject
	// items holds the JSON of the done items, one after another, and
	// spans where each is, by output index (zero while it is open).
	items []byte
	spans [][2]int
	// kept is the text of the open message or reasoning item (at most
	// one is open) as its deltas wrote it: escaped, without quotes.
	kept    []byte
	text    openItem
	reason  openItem
	calls   map[int]*openCall // by the chunks' tool call index
	spare   []byte            // a closed call's arguments' room, for the next call
	scratch []byte            // an added item's JSON, while its event is written
	size    int               // the bytes of text, reasoning and arguments kept
	usage   bool              // usageOf came
	usageOf chat.Usage
	stop    chat.Stop
	err     *chat.StreamError
	// The room the buffers start in, until release.
	room *room
}

// The parts of a room's bytes, each up to its end: buf, scratch, kept,
// the first call's arguments and items. They keep a room within 8 KiB, a
// size class of the allocator: a few bytes more would cost 9.25 KiB.
const (
	bufRoom     = 4 << 10
	scratchRoom = bufRoom + 256
	keptRoom    = scratchRoom + 1<<10
	argsRoom    = keptRoom + 256
	itemsRoom   = argsRoom + 1280
)

// openItem is the message or reasoning item being written.
type openItem struct {
	on    bool
	id    string
	index int
	part  bool // a reasoning item's summary part was added
}

type openCall struct {
	id, callID, name string
	index            int
	args             []byte
	// held is how many bytes at the end of args no delta has written: the
	// start of a character whose rest is still to come.
	held int
}

// start appends the response object of the first and last events.
func (e *streamEncoder) start(b []byte) []byte { return e.resp.appendJSON(appendKey(b, "response")) }

// event adds one event to those held (see send): its type, sequence
// number and the fields fields appends (each starting with a comma).
func (e *streamEncoder) event(typ string, fields func([]byte) []byte) error {
	b := append(e.buf, "event: "...)
	b = append(b, typ...)
	b = append(b, "\ndata: {\"type\":\""...)
	b = append(b, typ...)
	b = append(b, `","sequence_number":`...)
	b = strconv.AppendInt(b, e.seq, 10)
	e.seq++
	b = fields(b)
	b = append(b, "}\n\n"...)
	e.buf = b
	if len(b) >= batchBytes {
		return e.send()
	}
	return nil
}

// batchBytes is as much as the encoder holds before it writes: the events
// of one chunk (the first delta's item and part, the done events of an
// item) leave in one write, and a large one leaves at once.
const batchBytes = 32 << 10

// send writes the events held.
func (e *streamEncoder) send() error {
	if len(e.buf) == 0 {
		return nil
	}
	_, err := e.w.Write(e.buf)
	e.buf = e.buf[:0]
	return err
}

func appendKey(b []byte, k string) []byte {
	b = append(b, ",\""...)
	b = append(b, k...)
	return append(b, "\":"...)
}

func appendRaw(b []byte, k string, v []byte) []byte { return append(appendKey(b, k), v...) }

func appendStr(b []byte, k, v string) []byte { return chat.AppendString(appendKey(b, k), v) }

func appendInt(b []byte, k string, n int) []byte {
	return strconv.AppendInt(appendKey(b, k), int64(n), 10)
}

// at appends the item_id and output_index of an item's event.
func at(b []byte, id string, index int) []byte {
	return appendInt(appendStr(b, "item_id", id), "output_index", index)
}

// appendKept appends key k and s as a JSON string, and keeps s's escaped
// text in e.kept.
func (e *streamEncoder) appendKept(b []byte, k, s string) []byte {
	b = appendKey(b, k)
	n := len(b)
	b = chat.AppendString(b, s)
	esc := b[n+1 : len(b)-1]
	e.kept = append(e.kept, esc...)
	e.size += len(esc)
	return b
}

// appendKeptEscaped is appendKept of a string already escaped as
// chat.AppendString escapes it (esc, without its quotes).
func (e *streamEncoder) appendKeptEscaped(b []byte, k string, esc []byte) []byte {
	b = appendKey(b, k)
	b = append(b, '"')
	b = append(b, esc...)
	e.kept = append(e.kept, esc...)
	e.size += len(esc)
	return append(b, '"')
}

// next is the output index of a new item.
func (e *streamEncoder) next() int {
	e.spans = append(e.spans, [2]int{})
	return len(e.spans) - 1
}

// added writes the output_item.added event of the item at index, whose
// JSON is e.scratch.
func (e *streamEncoder) added(index int) error {
	return e.event("response.output_item.added", func(b []byte) []byte {
		return appendRaw(appendInt(b, "output_index", index), "item", e.scratch)
	})
}

// done writes the output_item.done event of the item at index, whose JSON
// is e.items[from:].
func (e *streamEncoder) done(index, from int) error {
	e.spans[index] = [2]int{from, len(e.items)}
	return e.event("response.output_item.done", func(b []byte) []byte {
		return appendRaw(appendInt(b, "output_index", index), "item", e.items[from:])
	})
}

func (e *streamEncoder) chunk(c *chat.Chunk) error {
	switch c.Type {
	case chat.ChunkText:
		if c.Text == "" {
			return nil
		}
		return e.textDelta(c.Text)
	case chat.ChunkReasoning:
		if c.Text != "" {
			if err := e.reasoningDelta(c.Text); err != nil {
				return err
			}
		}
		if c.Signature != "" {
			if !e.reason.on {
				if err := e.openReasoning(); err != nil {
					return err
				}
			}
			e.size += len(c.Signature)
			if err := e.closeReasoning(c.Signature); err != nil {
				return err
			}
		}
		if c.Redacted != "" {
			if err := e.closeText(); err != nil {
				return err
			}
			if err := e.closeReasoning(""); err != nil {
				return err
			}
			e.size += len(c.Redacted)
			i := e.next()
			id := itemID(prefixReasoning, e.id, i)
			e.scratch = newReasoning(id, nil, "", "").appendJSON(e.scratch[:0])
			if err := e.added(i); err != nil {
				return err
			}
			from := len(e.items)
			e.items = newReasoning(id, nil, "", c.Redacted).appendJSON(e.items)
			return e.done(i, from)
		}
		return nil
	case chat.ChunkToolCallStart:
		if err := e.closeText(); err != nil {
			return err
		}
		if err := e.closeReasoning(""); err != nil {
			return err
		}
		if old, ok := e.calls[c.Index]; ok {
			// A start under an index in use: the earlier call is over.
			if err := e.closeCall(c.Index, old, ""); err != nil {
				return err
			}
		}
		i := e.next()
		call := &openCall{id: itemID(prefixCall, e.id, i), callID: c.ID, name: c.Name, index: i, args: e.spare}
		e.spare = nil
		if call.callID == "" {
			call.callID = callID(call.id)
		}
		if e.calls == nil {
			e.calls = map[int]*openCall{}
		}
		e.calls[c.Index] = call
		e.size += len(c.ID) + len(c.Name)
		e.scratch = callItem{ID: call.id, Type: "function_call", Status: "in_progress", CallID: call.callID, Name: c.Name}.appendJSON(e.scratch[:0])
		return e.added(i)
	case chat.ChunkToolCallDelta:
		call, ok := e.calls[c.Index]
		if !ok || c.Arguments == "" {
			return nil
		}
		return e.argsDelta(call, c.Arguments)
	case chat.ChunkToolCallEnd:
		call, ok := e.calls[c.Index]
		if !ok {
			return nil
		}
		return e.closeCall(c.Index, call, c.Arguments)
	case chat.ChunkUsage:
		if c.Usage != nil {
			e.usage, e.usageOf = true, *c.Usage
		}
	case chat.ChunkStop:
		if c.Stop != nil {
			e.stop = *c.Stop
		}
	case chat.ChunkError:
		if c.Error != nil && e.err == nil {
			se := *c.Error
			e.err = &se
		}
	}
	return nil
}

func (e *streamEncoder) textDelta(s string) error {
	t := &e.text
	if !t.on {
		if err := e.closeReasoning(""); err != nil {
			return err
		}
		i := e.next()
		*t = openItem{on: true, id: itemID(prefixMessage, e.id, i), index: i}
		e.kept = e.kept[:0]
		e.scratch = newMessage(t.id, "in_progress", "", false).appendJSON(e.scratch[:0])
		if err := e.added(i); err != nil {
			return err
		}
		if err := e.event("response.content_part.added", func(b []byte) []byte {
			return newOutputText("").appendJSON(appendKey(appendInt(at(b, t.id, t.index), "content_index", 0), "part"))
		}); err != nil {
			return err
		}
	}
	return e.event("response.output_text.delta", func(b []byte) []byte {
		b = e.appendKept(appendInt(at(b, t.id, t.index), "content_index", 0), "delta", s)
		return appendRaw(b, "logprobs", []byte("[]"))
	})
}

// The done events of a message or reasoning item repeat its text as the
// deltas wrote it (e.kept): the text the client has, which is the text
// of the chunks unless a chunk ended inside a character (its bytes,
// invalid UTF-8, were written as U+FFFD by that chunk's delta).

func (e *streamEncoder) closeText() error {
	t := &e.text
	if !t.on {
		return nil
	}
	t.on = false
	part := outputText{Type: "output_text", esc: e.kept}
	if err := e.event("response.output_text.done", func(b []byte) []byte {
		b = appendText(appendKey(appendInt(at(b, t.id, t.index), "content_index", 0), "text"), "", e.kept)
		return appendRaw(b, "logprobs", []byte("[]"))
	}); err != nil {
		return err
	}
	if err := e.event("response.content_part.done", func(b []byte) []byte {
		return part.appendJSON(appendKey(appendInt(at(b, t.id, t.index), "content_index", 0), "part"))
	}); err != nil {
		return err
	}
	from := len(e.items)
	m := newMessage(t.id, "completed", "", false)
	m.Content = []outputText{part}
	e.items = m.appendJSON(e.items)
	return e.done(t.index, from)
}

func (e *streamEncoder) openReasoning() error {
	if err := e.closeText(); err != nil {
		return err
	}
	i := e.next()
	r := &e.reason
	*r = openItem{on: true, id: itemID(prefixReasoning, e.id, i), index: i}
	e.kept = e.kept[:0]
	e.scratch = newReasoning(r.id, nil, "", "").appendJSON(e.scratch[:0])
	return e.added(i)
}

func (e *streamEncoder) reasoningDelta(s string) error {
	if !e.reason.on {
		if err := e.openReasoning(); err != nil {
			return err
		}
	}
	r := &e.reason
	if !r.part {
		r.part = true
		if err := e.event("response.reasoning_summary_part.added", func(b []byte) []byte {
			return summaryText{Type: "summary_text"}.appendJSON(appendKey(appendInt(at(b, r.id, r.index), "summary_index", 0), "part"))
		}); err != nil {
			return err
		}
	}
	return e.event("response.reasoning_summary_text.delta", func(b []byte) []byte {
		return e.appendKept(appendInt(at(b, r.id, r.index), "summary_index", 0), "delta", s)
	})
}

// closeReasoning ends the reasoning item being written, with signature
// as its encrypted content.
func (e *streamEncoder) closeReasoning(signature string) error {
	r := &e.reason
	if !r.on {
		return nil
	}
	r.on = false
	item := newReasoning(r.id, nil, signature, "")
	if r.part {
		part := summaryText{Type: "summary_text", esc: e.kept}
		item.Summary = []summaryText{part}
		if err := e.event("response.reasoning_summary_text.done", func(b []byte) []byte {
			return appendText(appendKey(appendInt(at(b, r.id, r.index), "summary_index", 0), "text"), "", e.kept)
		}); err != nil {
			return err
		}
		if err := e.event("response.reasoning_summary_part.done", func(b []byte) []byte {
			return part.appendJSON(appendKey(appendInt(at(b, r.id, r.index), "summary_index", 0), "part"))
		}); err != nil {
			return err
		}
	}
	from := len(e.items)
	e.items = item.appendJSON(e.items)
	return e.done(r.index, from)
}

func (e *streamEncoder) argsDelta(call *openCall, s string) error {
	call.args = append(call.args, s...)
	e.size += len(s)
	// A chunk may end inside a character: its first bytes wait for the
	// rest, so that each delta is whole characters and the deltas joined
	// are the arguments the done event repeats.
	w := call.args[len(call.args)-len(s)-call.held:]
	call.held = partialRune(w)
	if len(w) == call.held {
		return nil
	}
	return e.writeArgs(call, string(w[:len(w)-call.held]))
}

// writeArgs writes one arguments delta.
func (e *streamEncoder) writeArgs(call *openCall, s string) error {
	return e.event("response.function_call_arguments.delta", func(b []byte) []byte {
		return appendStr(at(b, call.id, call.index), "delta", s)
	})
}

// partialRune is how many bytes at the end of b begin a character that
// needs more bytes than b holds (0 when b ends with a whole character or
// with bytes that are no character's start).
func partialRune(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return 0
			}
			return len(b) - i
		}
	}
	return 0
}

// closeCall ends call k, whose whole arguments are all ("": the deltas
// sent): what no delta carried is sent first.
func (e *streamEncoder) closeCall(k int, call *openCall, all string) error {
	delete(e.calls, k)
	sent := call.args
	if all == "" {
		all = string(sent)
	}
	if all == "" {
		all = "{}"
	}
	if len(all) > len(sent) && all[:len(sent)] == string(sent) {
		if err := e.argsDelta(call, all[len(sent):]); err != nil {
			return err
		}
	}
	if call.held > 0 {
		// The arguments end inside a character: its bytes, as they are.
		held := string(call.args[len(call.args)-call.held:])
		call.held = 0
		if err := e.writeArgs(call, held); err != nil {
			return err
		}
	}
	if err := e.event("response.function_call_arguments.done", func(b []byte) []byte {
		return appendStr(appendStr(at(b, call.id, call.index), "arguments", all), "name", call.name)
	}); err != nil {
		return err
	}
	from := len(e.items)
	e.items = callItem{ID: call.id, Type: "function_call", Status: "completed", Arguments: all,
		CallID: call.callID, Name: call.name}.appendJSON(e.items)
	e.spare = call.args[:0]
	return e.done(call.index, from)
}

// closeAll ends the items still open, calls in the order they began.
func (e *streamEncoder) closeAll() error {
	if err := e.closeText(); err != nil {
		return err
	}
	if err := e.closeReasoning(""); err != nil {
		return err
	}
	keys := make([]int, 0, len(e.calls))
	for k := range e.calls {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b int) int { return e.calls[a].index - e.calls[b].index })
	for _, k := range keys {
		if err := e.closeCall(k, e.calls[k], ""); err != nil {
			return err
		}
	}
	return nil
}
