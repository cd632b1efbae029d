package gemini

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"iter"
	"reflect"
	"strconv"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/internal/sse"
)

// MaxStreamChunk bounds one response chunk of a stream: an SSE event's
// data, or one element of the JSON array. A larger one ends the stream
// with a decode error; nothing larger is ever buffered. It is 8 MiB, the
// bound of the SSE reader.
const MaxStreamChunk = sse.DefaultMaxEvent

// MaxToolCalls bounds the function calls of one stream: one more ends the
// stream with a decode error. Models make a handful of calls in one
// response, a few tens at most; the bound leaves room for far more. The
// decoder keeps nothing per call, but what consumes the stream does (the
// blocks chat.Collect builds, the calls an encoder keeps), so every
// decoder bounds the calls of a stream alike.
const MaxToolCalls = 1000

// MaxToolCallBytes bounds the ids, names and arguments (compacted) of all
// the function calls of one stream together; more end the stream with a
// decode error. 64 MiB is as much as the gateway reads of a whole upstream
// response for a client that does not stream, and what the other decoders
// allow.
const MaxToolCallBytes = 64 << 20

// DecodeStream decodes the body of a streamGenerateContent response into
// the canonical chunk stream (see chat.Chunk). It never panics, buffers at
// most one response chunk (MaxStreamChunk) at a time, and closes r, when it
// is an io.Closer, once the loop ends.
//
// # Framing
//
// The mode is chosen by the body's first non-space byte:
//
//	[          the JSON array (the endpoint without alt=sse): [{…},{…}],
//	           decoded element by element as it arrives
//	{          bare JSON objects one after another: what an endpoint sends
//	           when the request fails ({"error":{…}}), or a single response
//	other      Server-Sent Events (alt=sse), read with package sse: each
//	           event's data is one GenerateContentResponse; there is no
//	           [DONE]. Lines that are not SSE fields are ignored, as SSE
//	           requires (an error object sent on such lines is lost, but
//	           the stream then ends without a finishReason, which is a
//	           decode error)
//
// # Chunks
//
// Every response chunk is unmarshalled once into a typed struct; unknown
// fields are ignored. Only candidates[0] is read (ctxkit never asks for
// more than one candidate). Its content.parts[] map, in order, to:
//
//	thought: true          reasoning {text, signature: thoughtSignature};
//	                       left out when both are empty
//	text                   text; an empty text gives nothing
//	functionCall           tool_call_start {index, id, name}, then
//	                       tool_call_delta {index, arguments}, then
//	                       tool_call_end {index, arguments}: Gemini sends a
//	                       call whole, so the delta and the end both carry
//	                       all the arguments, compacted ("{}" when args is
//	                       missing or null). index counts the calls of the
//	                       whole response from 0
//	other parts            nothing (inlineData, executableCode, ...)
//
// A thoughtSignature on a part that is not a thought (a functionCall, a
// text part, often an empty one, or any other part) becomes a reasoning
// chunk carrying only the signature, emitted just before what the part
// gives, so the signature travels with the reasoning and keeps its place
// (chat.Collect adds it to the thinking block just before, or starts a
// thinking block that holds only the signature).
//
// Gemini gives function calls no id (functionCall.id is optional and
// rarely set). When it is set it is used; otherwise the id is generated
// from the call alone, "call_<index>_<8 hex digits of the FNV-1a hash of
// name, a NUL byte and the compacted arguments>", so decoding the same
// stream twice gives the same ids.
//
// # Usage
//
// usageMetadata holds running totals on every chunk. A usage chunk is
// emitted whenever the converted totals change (not when they repeat):
//
//	Input       promptTokenCount + toolUsePromptTokenCount: the prompt
//	            count already includes cached tokens, and the tokens of
//	            tool-use prompts (code execution, search results) are
//	            prompt tokens the request is billed for, reported apart
//	CacheRead   cachedContentTokenCount
//	Output      candidatesTokenCount + thoughtsTokenCount (Gemini's
//	            candidates count leaves the thoughts out)
//	Reasoning   thoughtsTokenCount
//
// Within one response chunk the parts come first, then usage, then stop.
//
// # Stop
//
// candidates[0].finishReason gives the stop chunk (its Raw is the reason):
//
//	STOP                             end_turn, or tool_use when the response
//	                                 made a function call
//	MAX_TOKENS                       max_tokens
//	SAFETY, RECITATION, BLOCKLIST,   content_filter
//	PROHIBITED_CONTENT, SPII,
//	IMAGE_SAFETY,
//	IMAGE_PROHIBITED_CONTENT,
//	IMAGE_RECITATION
//	anything else                    error (MALFORMED_FUNCTION_CALL,
//	                                 LANGUAGE, OTHER, ...)
//
// A promptFeedback.blockReason (the prompt itself was blocked: no
// candidates come) gives a stop content_filter whose Raw is the block
// reason. Only the first stop is emitted; later chunks still give their
// parts and usage.
//
// # Errors
//
// An {"error":{"code","message","status"}} object in the stream (an SSE
// event, an array element or a bare object) gives an error chunk {type:
// status, or the code when there is no status; message; retryable for
// codes 429, 500, 503 and 504 and statuses RESOURCE_EXHAUSTED,
// UNAVAILABLE, INTERNAL and DEADLINE_EXCEEDED} and ends the stream.
//
// Decode errors end the stream after the chunks decoded before them:
// malformed JSON or a field of the wrong type, a response chunk larger
// than MaxStreamChunk, more than MaxToolCalls function calls or more than
// MaxToolCallBytes of them, a read error (wrapped), and a cut stream. A
// JSON error names the SSE event (and the fault's offset in its data), or
// the array element or bare object (and the stream offsets of its start
// and of the fault).
//
// A stream is cut when an SSE stream or a run of bare objects ends before
// any finishReason, blockReason or error object (alt=sse has no end
// marker, so a stream cut between two events is only known by its missing
// stop), or when the JSON array ends before its closing "]", even after a
// finishReason: the array's own framing says the body is incomplete, so
// it is reported rather than taken for a clean end. Both errors wrap
// io.ErrUnexpectedEOF. An SSE event or array element cut in the middle is
// an error too (malformed JSON, or "cut short"). "[]" is a complete, empty
// stream.
func DecodeStream(r io.Reader) iter.Seq2[chat.Chunk, error] {
	return chat.Stream(r, func(yield func(chat.Chunk) bool) error {
		d := &streamDecoder{yield: yield}
		return d.run(r)
	})
}

// The response types hold only what DecodeStream reads.
type streamResponse struct {
	Candidates     []streamCandidate `json:"candidates"`
	PromptFeedback *promptFeedback   `json:"promptFeedback"`
	UsageMetadata  *usageMetadata    `json:"usageMetadata"`
	Error          *apiError         `json:"error"`
}

type streamCandidate struct {
	Content struct {
		Parts []streamPart `json:"parts"`
	} `json:"content"`
	FinishReason string `json:"finishReason"`
}

type streamPart struct {
	Text             string        `json:"text"`
	Thought          bool          `json:"thought"`
	ThoughtSignature string        `json:"thoughtSignature"`
	FunctionCall     *FunctionCall `json:"functionCall"`
}

type promptFeedback struct {
	BlockReason string `json:"blockReason"`
}

type usageMetadata struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
	ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount"`
}

type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
}

// errCut is wrapped by the errors of a stream that ended too soon.
var errCut = io.ErrUnexpectedEOF

type streamDecoder struct {
	yield   func(chat.Chunk) bool
	calls   int        // function calls so far
	bytes   int        // their ids, names and arguments, together
	err     error      // the bound the stream went past (MaxToolCalls, MaxToolCallBytes)
	usage   chat.Usage // the last usage emitted
	stopped bool       // a stop chunk was emitted
	failed  bool       // an error chunk was emitted
	args    bytes.Buffer
}

func (d *streamDecoder) run(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var lead int64 // spaces skipped
	for ; ; lead++ {
		c, err := br.ReadByte()
		if err == io.EOF {
			return d.end()
		}
		if err != nil {
			return fmt.Errorf("gemini: reading the stream: %w", err)
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		br.UnreadByte()
		switch c {
		case '[':
			return d.array(br, lead)
		case '{':
			return d.objects(br, lead)
		}
		return d.sse(br)
	}
}

// end is the end of an SSE stream or of bare objects.
func (d *streamDecoder) end() error {
	if d.stopped || d.failed {
		return nil
	}
	return fmt.Errorf("gemini: the stream ended before a finishReason (cut short?): %w", errCut)
}

func (d *streamDecoder) sse(r io.Reader) error {
	n := 0
	tail := &tailReader{r: r}
	for ev, err := range sse.Read(tail, MaxStreamChunk) {
		if err != nil {
			return fmt.Errorf("gemini: after event %d: %w", n, err)
		}
		n++
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 {
			continue
		}
		var resp streamResponse
		if err := json.Unmarshal(data, &resp); err != nil {
			return fmt.Errorf("gemini: event %d: %w", n, jsonError(err, 0, 0))
		}
		if !d.response(&resp) {
			return d.err
		}
	}
	if !d.stopped && !d.failed {
		// A failure after the stream began can come as Google's plain
		// error body, outside any SSE event: the SSE reader passes over
		// such lines, and the stream would look cut.
		if e := strayError(tail.tail); e != nil {
			d.failed = true
			d.yield(chat.Chunk{Type: chat.ChunkError, Error: streamError(e)})
			return nil
		}
	}
	return d.end()
}

// maxTail bounds what is kept of a stream's last bytes for strayError.
const maxTail = 8 << 10

// tailReader keeps the last maxTail bytes read through it.
type tailReader struct {
	r    io.Reader
	tail []byte
}

func (t *tailReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n >= maxTail {
		t.tail = append(t.tail[:0], p[n-maxTail:n]...)
	} else {
		if over := len(t.tail) + n - maxTail; over > 0 {
			t.tail = append(t.tail[:0], t.tail[over:]...)
		}
		t.tail = append(t.tail, p[:n]...)
	}
	return n, err
}

// strayError reads the error object that ends an SSE stream outside any
// event: the run of lines at the end of tail that are not SSE fields
// ("data:", "event:", "id:", "retry:", comments), which holds a JSON
// object with an "error" member, or an array of one such object. nil
// when there is none.
func strayError(tail []byte) *apiError {
	lines := bytes.Split(tail, []byte("\n"))
	from := len(lines)
	for from > 0 {
		l := bytes.TrimRight(lines[from-1], "\r")
		if sseField(l) {
			break
		}
		from--
	}
	if from == 0 && len(tail) == maxTail {
		return nil // the run may have begun before what was kept
	}
	body := bytes.TrimSpace(bytes.Join(lines[from:], []byte("\n")))
	if len(body) > 1 && body[0] == '[' && body[len(body)-1] == ']' {
		body = bytes.TrimSpace(body[1 : len(body)-1])
	}
	if len(body) == 0 || body[0] != '{' {
		return nil
	}
	var resp struct {
		Error *apiError `json:"error"`
	}
	if json.Unmarshal(body, &resp) != nil {
		return nil
	}
	return resp.Error
}

// sseField reports whether line is an SSE field or comment.
func sseField(line []byte) bool {
	if len(line) > 0 && line[0] == ':' {
		return true
	}
	for _, f := range []string{"data", "event", "id", "retry"} {
		if rest, ok := bytes.CutPrefix(line, []byte(f)); ok && (len(rest) == 0 || rest[0] == ':') {
			return true
		}
	}
	return false
}

// array decodes the JSON array mode element by element. lead is the
// offset of r in the stream.
func (d *streamDecoder) array(r io.Reader, lead int64) error {
	lr := &limitReader{r: r, max: MaxStreamChunk}
	dec := json.NewDecoder(lr)
	if _, err := dec.Token(); err != nil { // the '[' seen by run
		return fmt.Errorf("gemini: reading the stream: %w", err)
	}
	for i := 1; ; i++ {
		lr.max = dec.InputOffset() + MaxStreamChunk
		if !dec.More() {
			break
		}
		start := dec.InputOffset()
		var resp streamResponse
		if err := dec.Decode(&resp); err != nil {
			return elementError("array element", i, lead, start, err)
		}
		if !d.response(&resp) {
			return d.err
		}
	}
	at := dec.InputOffset()
	tok, err := dec.Token()
	switch {
	case err == io.EOF:
		return fmt.Errorf("gemini: the JSON array ended at byte %d without its closing ] (cut short?): %w", lead+at, errCut)
	case err != nil:
		return elementError("the JSON array", 0, lead, at, err)
	case tok != json.Delim(']'):
		return fmt.Errorf("gemini: the JSON array: unexpected %v at byte %d", tok, lead+at)
	}
	lr.max = dec.InputOffset() + MaxStreamChunk
	at = dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("gemini: data after the JSON array at byte %d", lead+at)
	}
	return nil
}

// objects decodes bare JSON objects one after another. lead is the
// offset of r in the stream.
func (d *streamDecoder) objects(r io.Reader, lead int64) error {
	lr := &limitReader{r: r}
	dec := json.NewDecoder(lr)
	for i := 1; ; i++ {
		start := dec.InputOffset()
		lr.max = start + MaxStreamChunk
		var resp streamResponse
		err := dec.Decode(&resp)
		if err == io.EOF {
			return d.end()
		}
		if err != nil {
			return elementError("object", i, lead, start, err)
		}
		if !d.response(&resp) {
			return d.err
		}
	}
}

// elementError describes a decode error in the i-th value (i > 0) of a
// JSON stream read by a json.Decoder from byte lead of the stream on. The
// value starts at start (the decoder's offset before it: for an array
// element after the first, the comma before it).
func elementError(what string, i int, lead, start int64, err error) error {
	if i > 0 {
		what += " " + strconv.Itoa(i)
	}
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		return fmt.Errorf("gemini: %s (at byte %d) is cut short: %w", what, lead+start, errCut)
	}
	// A json.Decoder counts syntax error offsets from the start of its
	// input, type error offsets from the start of the value.
	return fmt.Errorf("gemini: %s (at byte %d): %w", what, lead+start, jsonError(err, lead, lead+start))
}

// jsonError names a JSON error's fault and the byte offset where it lies
// (syntax errors at synBase + offset, type errors at typBase + offset).
func jsonError(err error, synBase, typBase int64) error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Errorf("invalid JSON at byte %d: %w", synBase+syn.Offset, err)
	}
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		field := typ.Field
		if field == "" {
			field = "the value"
		}
		return fmt.Errorf("%s is a JSON %s, not %s (at byte %d)", field, typ.Value, jsonKind(typ.Type), typBase+typ.Offset)
	}
	return err
}

func jsonKind(t reflect.Type) string {
	if t == nil {
		return "the expected type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map, reflect.Pointer:
		return "an object"
	}
	return "a number"
}

var errTooLarge = fmt.Errorf("a response chunk larger than %d bytes", MaxStreamChunk)

// limitReader lets a json.Decoder read no further than byte max of the
// stream, so that one value (and the decoder's buffer) stays bounded.
type limitReader struct {
	r   io.Reader
	n   int64 // bytes read
	max int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n >= l.max {
		return 0, errTooLarge
	}
	if rest := l.max - l.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	k, err := l.r.Read(p)
	l.n += int64(k)
	return k, err
}

// response emits the chunks of one response chunk. It reports false when
// the stream must end: the consumer stopped, an error object came, or a
// bound was passed (d.err).
func (d *streamDecoder) response(resp *streamResponse) bool {
	if e := resp.Error; e != nil {
		d.failed = true
		d.yield(chat.Chunk{Type: chat.ChunkError, Error: streamError(e)})
		return false
	}
	// The usage first: Gemini reports it on the same chunk as the first
	// text, and a client learns the input tokens at the start of its
	// answer (Anthropic's message_start) only if they come before it.
	if m := resp.UsageMetadata; m != nil {
		u := chat.Usage{
			Input:     m.PromptTokenCount + m.ToolUsePromptTokenCount,
			Output:    m.CandidatesTokenCount + m.ThoughtsTokenCount,
			CacheRead: m.CachedContentTokenCount,
			Reasoning: m.ThoughtsTokenCount,
		}
		if u != d.usage {
			d.usage = u
			if !d.yield(chat.Chunk{Type: chat.ChunkUsage, Usage: &u}) {
				return false
			}
		}
	}
	var cand *streamCandidate
	if len(resp.Candidates) > 0 {
		cand = &resp.Candidates[0]
		for i := range cand.Content.Parts {
			if !d.part(&cand.Content.Parts[i]) {
				return false
			}
		}
	}
	if d.stopped {
		return true
	}
	if pf := resp.PromptFeedback; pf != nil && pf.BlockReason != "" {
		d.stopped = true
		return d.yield(chat.Chunk{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopContentFilter, Raw: pf.BlockReason}})
	}
	if cand != nil && cand.FinishReason != "" {
		d.stopped = true
		return d.yield(chat.Chunk{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: stopReason(cand.FinishReason, d.calls > 0), Raw: cand.FinishReason}})
	}
	return true
}

func (d *streamDecoder) part(p *streamPart) bool {
	if p.Thought && p.FunctionCall == nil {
		if p.Text == "" && p.ThoughtSignature == "" {
			return true
		}
		return d.yield(chat.Chunk{Type: chat.ChunkReasoning, Text: p.Text, Signature: p.ThoughtSignature})
	}
	if p.ThoughtSignature != "" {
		if !d.yield(chat.Chunk{Type: chat.ChunkReasoning, Signature: p.ThoughtSignature}) {
			return false
		}
	}
	if p.FunctionCall != nil {
		return d.call(p.FunctionCall)
	}
	if p.Text != "" {
		return d.yield(chat.Chunk{Type: chat.ChunkText, Text: p.Text})
	}
	return true
}

func (d *streamDecoder) call(fc *FunctionCall) bool {
	args := "{}"
	if raw := bytes.TrimSpace(fc.Args); len(raw) > 0 && string(raw) != "null" {
		d.args.Reset()
		if json.Compact(&d.args, raw) == nil {
			args = d.args.String()
		} else {
			args = string(raw) // not reached: the decoder checked it
		}
	}
	if d.calls >= MaxToolCalls {
		d.err = fmt.Errorf("gemini: more than %d function calls in one stream", MaxToolCalls)
		return false
	}
	n := len(fc.ID) + len(fc.Name) + len(args)
	if d.bytes+n > MaxToolCallBytes {
		d.err = fmt.Errorf("gemini: function calls larger than %d bytes together (the ids, names and arguments of all the stream's calls)", MaxToolCallBytes)
		return false
	}
	d.bytes += n
	i := d.calls
	d.calls++
	id := fc.ID
	if id == "" {
		id = callID(i, fc.Name, args)
	}
	return d.yield(chat.Chunk{Type: chat.ChunkToolCallStart, Index: i, ID: id, Name: fc.Name}) &&
		d.yield(chat.Chunk{Type: chat.ChunkToolCallDelta, Index: i, Arguments: args}) &&
		d.yield(chat.Chunk{Type: chat.ChunkToolCallEnd, Index: i, Arguments: args})
}

// callID is the id of a call Gemini gave none: stable for the same call at
// the same place.
func callID(index int, name, args string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write([]byte(args))
	var b [32]byte
	out := append(b[:0], "call_"...)
	out = strconv.AppendInt(out, int64(index), 10)
	out = append(out, '_')
	s := strconv.FormatUint(uint64(h.Sum32()), 16)
	for range 8 - len(s) {
		out = append(out, '0')
	}
	return string(append(out, s...))
}

func stopReason(finish string, calls bool) chat.StopReason {
	switch finish {
	case "STOP":
		if calls {
			return chat.StopToolUse
		}
		return chat.StopEndTurn
	case "MAX_TOKENS":
		return chat.StopMaxTokens
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
		"IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION":
		return chat.StopContentFilter
	}
	return chat.StopError
}

func streamError(e *apiError) *chat.StreamError {
	out := &chat.StreamError{Type: e.Status, Message: e.Message}
	if out.Type == "" {
		out.Type = strconv.Itoa(e.Code)
	}
	switch e.Code {
	case 429, 500, 503, 504:
		out.Retryable = true
	}
	switch e.Status {
	case "RESOURCE_EXHAUSTED", "UNAVAILABLE", "INTERNAL", "DEADLINE_EXCEEDED":
		out.Retryable = true
	}
	return out
}
