package responses

import (
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/internal/oaicompat"
)

// Bounds of DecodeStream: a stream that goes past one ends with an error
// rather than growing without limit.
const (
	// MaxEvent bounds one event. The API repeats a call's whole
	// arguments in its output_item.done and the whole response in
	// response.completed, so an event may be far larger than a delta.
	MaxEvent = 32 << 20
	// MaxArguments bounds the arguments of one tool call.
	MaxArguments = oaicompat.MaxArguments
	// MaxToolCalls bounds the tool calls of one stream.
	MaxToolCalls = oaicompat.MaxToolCalls
	// MaxToolCallBytes bounds the arguments, ids and names of all the
	// tool calls of one stream together.
	MaxToolCallBytes = oaicompat.MaxToolCallBytes
	// MaxItems bounds the output items of one stream, of every kind.
	MaxItems = 10000
)

// DecodeStream reads a Responses API stream (stream: true) as canonical
// chunks. Events are read by their JSON "type" (the "event:" line is the
// same name, and ignored); "data: [DONE]", which the API does not send
// but other servers do, ends the stream like its end.
//
//   - response.output_text.delta and response.refusal.delta → text
//     chunks. A text part whose item had no deltas (a server that sends
//     only done events) is taken from response.output_text.done, or the
//     item's output_item.done.
//   - response.reasoning_summary_text.delta and
//     response.reasoning_text.delta (the raw reasoning of open models) →
//     reasoning chunks; a second summary part of an item is preceded by a
//     "\n\n" reasoning chunk, so the parts stay apart in the text. At a
//     reasoning item's output_item.done (where the API says its
//     encrypted_content is complete), the content comes as a reasoning
//     chunk with that Signature: chat.Collect makes one thinking block of
//     the item, which the encoders send back as this item. (Content behind
//     the marker EncodeResponse gives redacted reasoning — ctxkit in front
//     of ctxkit — is a Redacted chunk again.)
//   - function_call items: output_item.added → tool_call_start (id the
//     call_id, the item id when it has none); each
//     response.function_call_arguments.delta → tool_call_delta; the
//     item's output_item.done → tool_call_end with the whole arguments
//     (a "{}" delta first when there were none; the arguments of
//     function_call_arguments.done or of the item when no deltas came).
//     Canonical indices count the calls in the order they began.
//   - response.completed → a usage chunk and a stop: tool_use when the
//     response made a call, end_turn otherwise (Raw "completed").
//     response.incomplete → usage and a stop: max_tokens for
//     max_output_tokens, content_filter for content_filter (Raw the
//     reason). Usage: input_tokens → Input, input_tokens_details
//     .cached_tokens → CacheRead (cache_write_tokens → CacheWrite),
//     output_tokens → Output, output_tokens_details.reasoning_tokens →
//     Reasoning.
//   - response.failed → an error chunk: type the error's code
//     (server_error when it has none), its message, retryable when the
//     code names a server error, a rate limit, an overload or a timeout;
//     then the usage, if any. An "error" event (code, message, param; or
//     an "error" object) → an error chunk likewise.
//   - Other events (created, in_progress, content_part, the built-in
//     tools' events, annotations) carry nothing a chunk does.
//
// Events are read in one pass (encoding/json only for shapes the API does
// not send); what no chunk needs — the response objects' echo and
// output, content parts, and the texts that done events repeat for an
// item whose deltas came — is checked to be valid JSON but not decoded.
//
// A stream that ends without a terminal event ends cleanly with the calls
// still open ended, and no stop: the consumer learns it was cut. A last
// event cut short is dropped; other data that is not JSON ends the stream
// with an error naming the event. Past MaxEvent, MaxItems, MaxToolCalls,
// MaxArguments or MaxToolCallBytes the stream ends with an error.
func DecodeStream(r io.Reader) iter.Seq2[chat.Chunk, error] {
	return chat.Stream(r, func(yield func(chat.Chunk) bool) error {
		d := newStreamDecoder(yield)
		return oaicompat.ReadEvents(r, MaxEvent, "responses stream", d.event, d.end, func() bool { return d.ok })
	})
}

// The wire shapes of an event, only the fields ctxkit reads.
type wireEvent struct {
	Type         string          `json:"type"`
	OutputIndex  *int            `json:"output_index"`
	ItemID       string          `json:"item_id"`
	Item         *wireItem       `json:"item"`
	Delta        string          `json:"delta"`
	Text         string          `json:"text"`
	Refusal      string          `json:"refusal"`
	Arguments    string          `json:"arguments"`
	SummaryIndex int             `json:"summary_index"`
	Response     *wireResponse   `json:"response"`
	Code         json.RawMessage `json:"code"`
	Message      string          `json:"message"`
	Error        json.RawMessage `json:"error"`
}

type wireItem struct {
	Type             string     `json:"type"`
	ID               string     `json:"id"`
	CallID           string     `json:"call_id"`
	Name             string     `json:"name"`
	Arguments        string     `json:"arguments"`
	Summary          []wireText `json:"summary"`
	Content          []wireText `json:"content"`
	EncryptedContent string     `json:"encrypted_content"`
	Status           string     `json:"status"`
}

type wireText struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Refusal string `json:"refusal"`
}

type wireResponse struct {
	Status            string          `json:"status"`
	Error             json.RawMessage `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Usage *wireUsage `json:"usage"`
}

type wireUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	OutputTokens       int64 `json:"output_tokens"`
	InputTokensDetails *struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

func (u *wireUsage) chat() *chat.Usage {
	out := &chat.Usage{Input: u.InputTokens, Output: u.OutputTokens}
	if d := u.InputTokensDetails; d != nil {
		out.CacheRead, out.CacheWrite = d.CachedTokens, d.CacheWriteTokens
	}
	if d := u.OutputTokensDetails; d != nil {
		out.Reasoning = d.ReasoningTokens
	}
	return out
}

// itemState is what the decoder keeps of one output item.
type itemState struct {
	id      string // the item's id, "" when it has none
	index   int    // its output index, if it came with one (at)
	at      bool
	kind    string // message, reasoning, function_call, or another
	text    bool   // a text or reasoning delta came
	parts   int    // summary parts begun
	call    int    // canonical index of a function call
	args    []byte // a call's arguments so far
	started bool   // a call's tool_call_start was sent
	ended   bool
}

type streamDecoder struct {
	yield func(chat.Chunk) bool
	ok    bool
	// The items, in the order they came, and when there are more than
	// fewItems, by output index and by id; the last one registered with
	// an index or id is the one it finds.
	list    []*itemState
	byIndex map[int]*itemState
	byID    map[string]*itemState
	items   int
	calls   []*itemState // in order of start
	bytes   int          // the arguments, ids and names kept, all calls together
	called  bool         // a call was made
	// The event being read, and its output index: kept here rather than
	// allocated for each event.
	ev       wireEvent
	index    int
	room     eventRoom
	few      [fewItems]*itemState // where list starts
	intern   func([]byte) (string, bool)
	streamed func(*wireEvent) bool
}

func newStreamDecoder(yield func(chat.Chunk) bool) *streamDecoder {
	d := &streamDecoder{yield: yield, ok: true}
	d.list = d.few[:0]
	d.intern, d.streamed = d.itemID, d.textStreamed
	return d
}

// fewItems is as many items as the decoder finds by looking at each in
// turn: a stream has a few, and maps of them would cost more than they
// save.
const fewItems = 8

// atIndex is the item registered with output index i, nil if none.
func (d *streamDecoder) atIndex(i int) *itemState {
	if d.byIndex != nil {
		return d.byIndex[i]
	}
	for k := len(d.list) - 1; k >= 0; k-- {
		if s := d.list[k]; s.at && s.index == i {
			return s
		}
	}
	return nil
}

// withID is the item registered with id, nil if none.
func (d *streamDecoder) withID(id string) *itemState {
	if d.byID != nil {
		return d.byID[id]
	}
	for k := len(d.list) - 1; k >= 0; k-- {
		if s := d.list[k]; s.id != "" && s.id == id {
			return s
		}
	}
	return nil
}

// withIDBytes is withID of an id as read.
func (d *streamDecoder) withIDBytes(id []byte) *itemState {
	if d.byID != nil {
		return d.byID[string(id)]
	}
	for k := len(d.list) - 1; k >= 0; k-- {
		if s := d.list[k]; s.id != "" && s.id == string(id) {
			return s
		}
	}
	return nil
}

// register adds s to the items the decoder finds.
func (d *streamDecoder) register(s *itemState) {
	d.list = append(d.list, s)
	switch {
	case d.byIndex != nil:
	case len(d.list) > fewItems:
		d.byIndex, d.byID = map[int]*itemState{}, map[string]*itemState{}
		for _, s := range d.list[:len(d.list)-1] {
			d.mapItem(s)
		}
	default:
		return
	}
	d.mapItem(s)
}

// mapItem puts s in the maps.
func (d *streamDecoder) mapItem(s *itemState) {
	if s.at {
		d.byIndex[s.index] = s
	}
	if s.id != "" {
		d.byID[s.id] = s
	}
}

// textStreamed reports whether the text ev repeats is of no use: ev ends
// an item (a text or reasoning done event, or the item's
// output_item.done) whose deltas came, and the decoder reads those
// events' text only for an item that had none. The item must be named by
// an output index already read (the API writes it before the text), so
// that no key read later can name another.
func (d *streamDecoder) textStreamed(ev *wireEvent) bool {
	if ev.OutputIndex == nil {
		return false
	}
	s := d.atIndex(*ev.OutputIndex)
	if s == nil || !s.text {
		return false
	}
	switch ev.Type {
	case "response.output_text.done", "response.reasoning_summary_text.done", "response.reasoning_text.done":
		return true
	case "response.output_item.done":
		return s.kind == "message" || s.kind == "reasoning"
	}
	return false
}

// itemID is the id of an item the decoder knows whose id is b: the
// events of an item name it again and again.
func (d *streamDecoder) itemID(b []byte) (string, bool) {
	if s := d.withIDBytes(b); s != nil {
		return s.id, true
	}
	return "", false
}

func (d *streamDecoder) emit(c chat.Chunk) bool {
	if d.ok && !d.yield(c) {
		d.ok = false
	}
	return d.ok
}

// state is the item an event is about, nil when it names none the
// decoder knows.
func (d *streamDecoder) state(ev *wireEvent) *itemState {
	if ev.OutputIndex != nil {
		if s := d.atIndex(*ev.OutputIndex); s != nil {
			return s
		}
	}
	id := ev.ItemID
	if id == "" && ev.Item != nil {
		id = ev.Item.ID
	}
	if id != "" {
		return d.withID(id)
	}
	return nil
}

// add registers the item of an output_item event.
func (d *streamDecoder) add(ev *wireEvent) (*itemState, error) {
	if s := d.state(ev); s != nil {
		return s, nil
	}
	if d.items == MaxItems {
		return nil, fmt.Errorf("more than %d output items in one stream", MaxItems)
	}
	d.items++
	s := &itemState{kind: ev.Item.Type, id: ev.Item.ID}
	if ev.OutputIndex != nil {
		s.index, s.at = *ev.OutputIndex, true
	}
	d.register(s)
	return s, nil
}

func (d *streamDecoder) event(_ string, data []byte) error {
	ev := &d.ev
	if err := parseEvent(data, ev, &d.index, &d.room, d.intern, d.streamed); err != nil {
		return oaicompat.DataError(data, err)
	}
	switch ev.Type {
	case "response.output_text.delta", "response.refusal.delta":
		if s := d.state(ev); s != nil {
			s.text = true
		}
		if ev.Delta != "" {
			d.emit(chat.Chunk{Type: chat.ChunkText, Text: ev.Delta})
		}
	case "response.output_text.done", "response.refusal.done":
		text := ev.Text
		if ev.Type == "response.refusal.done" {
			text = ev.Refusal
		}
		if s := d.state(ev); s != nil && !s.text && text != "" {
			s.text = true
			d.emit(chat.Chunk{Type: chat.ChunkText, Text: text})
		}
	case "response.reasoning_summary_part.added":
		if s := d.state(ev); s != nil {
			if s.parts > 0 && s.text {
				d.emit(chat.Chunk{Type: chat.ChunkReasoning, Text: "\n\n"})
			}
			s.parts++
		}
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		if s := d.state(ev); s != nil {
			s.text = true
		}
		if ev.Delta != "" {
			d.emit(chat.Chunk{Type: chat.ChunkReasoning, Text: ev.Delta})
		}
	case "response.reasoning_summary_text.done", "response.reasoning_text.done":
		if s := d.state(ev); s != nil && !s.text && ev.Text != "" {
			s.text = true
			d.emit(chat.Chunk{Type: chat.ChunkReasoning, Text: ev.Text})
		}
	case "response.output_item.added":
		if ev.Item == nil {
			return nil
		}
		s, err := d.add(ev)
		if err != nil {
			return err
		}
		if s.kind == "function_call" {
			return d.start(s, ev.Item)
		}
	case "response.function_call_arguments.delta":
		if s := d.state(ev); s != nil && s.kind == "function_call" && !s.ended {
			return d.arguments(s, ev.Delta)
		}
	case "response.function_call_arguments.done":
		if s := d.state(ev); s != nil && s.kind == "function_call" && !s.ended && len(s.args) == 0 {
			return d.arguments(s, ev.Arguments)
		}
	case "response.output_item.done":
		if ev.Item == nil {
			return nil
		}
		s, err := d.add(ev)
		if err != nil {
			return err
		}
		return d.itemDone(s, ev.Item)
	case "response.completed", "response.incomplete", "response.failed":
		return d.terminal(ev)
	case "error":
		d.emit(chat.Chunk{Type: chat.ChunkError, Error: eventError(ev)})
	}
	return nil
}

// start sends a call's tool_call_start, and the arguments its item came
// with.
func (d *streamDecoder) start(s *itemState, it *wireItem) error {
	if s.started {
		return nil
	}
	if len(d.calls) == MaxToolCalls {
		return fmt.Errorf("more than %d tool calls in one stream", MaxToolCalls)
	}
	id := it.CallID
	if id == "" {
		id = it.ID
	}
	if id == "" {
		id = "call_" + strconv.Itoa(len(d.calls))
	}
	if err := d.count(len(id) + len(it.Name)); err != nil {
		return err
	}
	s.started, s.call = true, len(d.calls)
	d.calls = append(d.calls, s)
	d.called = true
	d.emit(chat.Chunk{Type: chat.ChunkToolCallStart, Index: s.call, ID: id, Name: it.Name})
	return d.arguments(s, it.Arguments)
}

func (d *streamDecoder) count(n int) error {
	if d.bytes+n > MaxToolCallBytes {
		return fmt.Errorf("tool calls larger than %d bytes together (the arguments, ids and names of all the stream's calls)", MaxToolCallBytes)
	}
	d.bytes += n
	return nil
}

func (d *streamDecoder) arguments(s *itemState, args string) error {
	if args == "" {
		return nil
	}
	if len(s.args)+len(args) > MaxArguments {
		return fmt.Errorf("tool call %d: arguments larger than %d bytes", s.call, MaxArguments)
	}
	if err := d.count(len(args)); err != nil {
		return err
	}
	s.args = append(s.args, args...)
	d.emit(chat.Chunk{Type: chat.ChunkToolCallDelta, Index: s.call, Arguments: args})
	return nil
}

func (d *streamDecoder) itemDone(s *itemState, it *wireItem) error {
	if s.ended {
		return nil
	}
	switch s.kind {
	case "function_call":
		if err := d.start(s, it); err != nil {
			return err
		}
		if len(s.args) == 0 {
			args := it.Arguments
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			if err := d.arguments(s, args); err != nil {
				return err
			}
		}
		d.endCall(s)
	case "reasoning":
		s.ended = true
		if !s.text {
			var texts []string
			for _, t := range it.Summary {
				if t.Text != "" {
					texts = append(texts, t.Text)
				}
			}
			if len(texts) == 0 {
				for _, t := range it.Content {
					if t.Text != "" {
						texts = append(texts, t.Text)
					}
				}
			}
			if len(texts) > 0 {
				d.emit(chat.Chunk{Type: chat.ChunkReasoning, Text: strings.Join(texts, "\n\n")})
			}
		}
		switch enc := it.EncryptedContent; {
		case strings.HasPrefix(enc, redactedMarker):
			// ctxkit's own answer to a Responses client: redacted
			// reasoning of another provider.
			d.emit(chat.Chunk{Type: chat.ChunkReasoning, Redacted: enc[len(redactedMarker):]})
		case enc != "":
			d.emit(chat.Chunk{Type: chat.ChunkReasoning, Signature: enc})
		}
	case "message":
		s.ended = true
		if !s.text {
			for _, t := range it.Content {
				text := t.Text
				if t.Type == "refusal" {
					text = t.Refusal
				}
				if text != "" {
					d.emit(chat.Chunk{Type: chat.ChunkText, Text: text})
				}
			}
		}
	default:
		s.ended = true
	}
	return nil
}

func (d *streamDecoder) endCall(s *itemState) {
	s.ended = true
	d.emit(chat.Chunk{Type: chat.ChunkToolCallEnd, Index: s.call, Arguments: string(s.args)})
}

// end finishes a stream at its end or [DONE]: calls still open end.
func (d *streamDecoder) end() {
	for _, s := range d.calls {
		if !s.ended {
			if len(s.args) == 0 {
				s.args = []byte("{}")
				d.emit(chat.Chunk{Type: chat.ChunkToolCallDelta, Index: s.call, Arguments: "{}"})
			}
			d.endCall(s)
		}
	}
}

func (d *streamDecoder) terminal(ev *wireEvent) error {
	d.end()
	r := ev.Response
	if r == nil {
		r = &wireResponse{}
	}
	switch ev.Type {
	case "response.failed":
		e := &chat.StreamError{Type: "server_error", Message: "the response failed"}
		if len(r.Error) > 0 && string(r.Error) != "null" {
			e = oaicompat.StreamError(r.Error)
			e.Retryable = e.Retryable || oaicompat.Retryable(e.Type)
		}
		d.emit(chat.Chunk{Type: chat.ChunkError, Error: e})
		if r.Usage != nil {
			d.emit(chat.Chunk{Type: chat.ChunkUsage, Usage: r.Usage.chat()})
		}
		return nil
	case "response.incomplete":
		if r.Usage != nil {
			d.emit(chat.Chunk{Type: chat.ChunkUsage, Usage: r.Usage.chat()})
		}
		reason := "incomplete"
		if r.IncompleteDetails != nil && r.IncompleteDetails.Reason != "" {
			reason = r.IncompleteDetails.Reason
		}
		stop := chat.Stop{Reason: chat.StopEndTurn, Raw: reason}
		switch reason {
		case "max_output_tokens":
			stop.Reason = chat.StopMaxTokens
		case "content_filter":
			stop.Reason = chat.StopContentFilter
		}
		d.emit(chat.Chunk{Type: chat.ChunkStop, Stop: &stop})
		return nil
	}
	if r.Usage != nil {
		d.emit(chat.Chunk{Type: chat.ChunkUsage, Usage: r.Usage.chat()})
	}
	stop := chat.Stop{Reason: chat.StopEndTurn, Raw: "completed"}
	if d.called {
		stop.Reason = chat.StopToolUse
	}
	d.emit(chat.Chunk{Type: chat.ChunkStop, Stop: &stop})
	return nil
}

// eventError is the error of an "error" event: {code, message, param} at
// its top, or in an "error" object.
func eventError(ev *wireEvent) *chat.StreamError {
	if len(ev.Error) > 0 && string(ev.Error) != "null" {
		return oaicompat.StreamError(ev.Error)
	}
	raw, _ := json.Marshal(struct {
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code,omitempty"`
	}{ev.Message, ev.Code})
	return oaicompat.StreamError(raw)
}
