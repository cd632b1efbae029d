package gemini

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
)

// generateResponse is a GenerateContentResponse as the dialect writes it.
type generateResponse struct {
	Candidates    []candidate `json:"candidates"`
	UsageMetadata *usageOut   `json:"usageMetadata,omitempty"`
	ModelVersion  string      `json:"modelVersion,omitempty"`
	ResponseID    string      `json:"responseId,omitempty"`
}

type candidate struct {
	Content       Content `json:"content"`
	FinishReason  string  `json:"finishReason,omitempty"`
	FinishMessage string  `json:"finishMessage,omitempty"`
	Index         int     `json:"index"`
}

type usageOut struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	TotalTokenCount         int64 `json:"totalTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount,omitempty"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount,omitempty"`
	// CostUsd is ctxkit's: the response's cost in US dollars, when it is
	// known.
	CostUsd *float64 `json:"costUsd,omitempty"`
}

func usageOf(u chat.Usage) *usageOut {
	return &usageOut{
		PromptTokenCount:        u.Input,
		CandidatesTokenCount:    max(u.Output-u.Reasoning, 0),
		TotalTokenCount:         u.Input + u.Output,
		CachedContentTokenCount: u.CacheRead,
		ThoughtsTokenCount:      u.Reasoning,
		CostUsd:                 u.Cost,
	}
}

// finishReasons are the finishReason values of the API.
var finishReasons = map[string]bool{
	"STOP": true, "MAX_TOKENS": true, "SAFETY": true, "RECITATION": true, "LANGUAGE": true, "OTHER": true,
	"BLOCKLIST": true, "PROHIBITED_CONTENT": true, "SPII": true, "MALFORMED_FUNCTION_CALL": true,
	"IMAGE_SAFETY": true, "UNEXPECTED_TOOL_CALL": true, "TOO_MANY_TOOL_CALLS": true,
	"IMAGE_PROHIBITED_CONTENT": true, "NO_IMAGE": true, "IMAGE_RECITATION": true, "IMAGE_OTHER": true,
}

func finishReason(s chat.Stop) string {
	if finishReasons[s.Raw] {
		return s.Raw
	}
	switch s.Reason {
	case chat.StopEndTurn, chat.StopToolUse, chat.StopSequence:
		return "STOP"
	case chat.StopMaxTokens:
		return "MAX_TOKENS"
	case chat.StopContentFilter:
		return "SAFETY"
	}
	return "OTHER"
}

// partWriter turns content, in order, into parts, placing signatures: a
// signature waits for the next part that is not a thought (see Dialect).
type partWriter struct {
	parts   []Part
	pending string
}

func (p *partWriter) signature(sig string) {
	if sig == "" {
		return
	}
	if p.pending != "" {
		p.parts = append(p.parts, Part{ThoughtSignature: p.pending})
	}
	p.pending = sig
}

func (p *partWriter) thought(text string) {
	if text != "" {
		p.parts = append(p.parts, Part{Text: text, Thought: true})
	}
}

func (p *partWriter) add(part Part) {
	part.ThoughtSignature, p.pending = p.pending, ""
	p.parts = append(p.parts, part)
}

// RedactedThought is the text of the thought part that holds redacted
// thinking. Redacted thinking has no text, but Google's SDKs keep a
// turn in a chat session's history only when each of its parts holds
// data (a text, a call, ...): a thought part with no text would cost the
// client the whole turn.
const RedactedThought = "[redacted thinking]"

// redacted writes redacted thinking (Anthropic's redacted_thinking,
// Bedrock's redactedContent) in its place as a thought part, text
// RedactedThought, whose thoughtSignature is data, the envelope the
// gateway sealed it in (wire.SealResponse, wire.SealChunks): a client
// keeps it with the thoughts and sends it back as it came, and the
// envelope says whose it is. A signature still waiting for its part is
// placed first, alone, so the order stays the upstream's. Data that is
// not such an envelope names no provider, and is left out.
func (p *partWriter) redacted(data string) {
	if s, ok := wire.OpenSignature(data); !ok || !s.Redacted {
		return
	}
	p.end()
	p.parts = append(p.parts, Part{Text: RedactedThought, Thought: true, ThoughtSignature: data})
}

// end places a signature no part took.
func (p *partWriter) end() {
	if p.pending != "" {
		p.parts = append(p.parts, Part{ThoughtSignature: p.pending})
		p.pending = ""
	}
}

// take returns the parts written since the last take.
func (p *partWriter) take() []Part {
	out := p.parts
	p.parts = nil
	return out
}

func callPart(id, name string, args json.RawMessage) Part {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	return Part{FunctionCall: &FunctionCall{ID: id, Name: name, Args: args}}
}

func modelContent(parts []Part) Content {
	if len(parts) == 0 {
		parts = []Part{{}}
	}
	return Content{Role: RoleModel, Parts: parts}
}

// encodeResponse writes a collected response (see Dialect). A response
// that ended in an error has finishReason OTHER and the error's message
// as its finishMessage.
func encodeResponse(res chat.Response, model, id string) ([]byte, error) {
	var pw partWriter
	for i := range res.Content {
		b := &res.Content[i]
		switch b.Type {
		case chat.TypeText:
			if b.Text != "" {
				pw.add(Part{Text: b.Text})
			}
		case chat.TypeThinking:
			pw.thought(b.Thinking)
			pw.signature(b.Signature)
		case chat.TypeReasoning:
			pw.thought(b.Text)
		case chat.TypeThoughtSignature:
			pw.signature(b.Signature)
		case chat.TypeToolUse:
			pw.add(callPart(b.ID, b.Name, b.Input))
		case chat.TypeRedactedThinking:
			pw.redacted(b.Data)
		}
	}
	pw.end()
	c := candidate{Content: modelContent(pw.take()), FinishReason: finishReason(res.Stop)}
	if res.Error != nil {
		c.FinishReason, c.FinishMessage = "OTHER", res.Error.Error()
	}
	return json.Marshal(generateResponse{
		Candidates:    []candidate{c},
		UsageMetadata: usageOf(res.Usage),
		ModelVersion:  model,
		ResponseID:    id,
	})
}

// maxStreamCalls bounds the tool calls a stream writer keeps arguments
// for at once (calls started and not ended), and maxStreamCallBytes the
// bytes of their arguments together: an upstream cannot make it hold
// more.
const (
	maxStreamCalls     = MaxToolCalls
	maxStreamCallBytes = MaxToolCallBytes
)

// streamWriter writes the dialect's stream (see Dialect).
type streamWriter struct {
	w         io.Writer
	sse       bool
	model, id string
	n         int // responses written
	pw        partWriter
	usage     *usageOut
	calls     map[int]*pendingCall
	held      int
	stop      *chat.Stop // held until no usage follows it
	err       error
}

type pendingCall struct {
	id, name string
	args     strings.Builder
}

func encodeStream(w io.Writer, sse bool, model, id string, chunks iter.Seq2[chat.Chunk, error]) error {
	s := &streamWriter{w: w, sse: sse, model: model, id: id}
	if !sse {
		s.write([]byte("["))
	}
	for c, err := range chunks {
		if err != nil {
			s.fail(500, "INTERNAL", err.Error())
			return err
		}
		done, err := s.chunk(c)
		if err != nil {
			s.fail(500, "INTERNAL", err.Error())
			return err
		}
		if done || s.err != nil {
			return s.err
		}
	}
	if s.stop != nil {
		s.finish()
		return s.err
	}
	// A stream that ends without a stop (the upstream's decoder reports a
	// cut one as an error) still gets its last parts.
	s.pw.end()
	if parts := s.pw.take(); len(parts) > 0 {
		s.response(parts, "")
	}
	s.close()
	return s.err
}

// finish writes the last response, with the finish reason, and closes
// the stream.
func (s *streamWriter) finish() {
	s.pw.end()
	s.response(s.pw.take(), finishReason(*s.stop))
	s.close()
}

// chunk writes what c gives; done reports the end of the stream.
func (s *streamWriter) chunk(c chat.Chunk) (done bool, err error) {
	if s.stop != nil && c.Type != chat.ChunkUsage {
		// The stop is held until no usage follows it (OpenAI-style
		// streams report usage after the finish reason); whatever
		// else comes after it is not part of the response.
		s.finish()
		return true, nil
	}
	switch c.Type {
	case chat.ChunkText:
		if c.Text != "" {
			s.pw.add(Part{Text: c.Text})
		}
	case chat.ChunkReasoning:
		if c.Redacted != "" {
			s.pw.redacted(c.Redacted)
		}
		s.pw.thought(c.Text)
		s.pw.signature(c.Signature)
	case chat.ChunkToolCallStart:
		if s.calls == nil {
			s.calls = map[int]*pendingCall{}
		}
		if _, dup := s.calls[c.Index]; dup {
			return false, nil
		}
		if len(s.calls) >= maxStreamCalls {
			return false, fmt.Errorf("gemini: more than %d tool calls open at once", maxStreamCalls)
		}
		s.calls[c.Index] = &pendingCall{id: c.ID, name: c.Name}
	case chat.ChunkToolCallDelta:
		if pc := s.calls[c.Index]; pc != nil {
			if s.held+len(c.Arguments) > maxStreamCallBytes {
				return false, fmt.Errorf("gemini: tool call arguments larger than %d bytes", maxStreamCallBytes)
			}
			s.held += len(c.Arguments)
			pc.args.WriteString(c.Arguments)
		}
	case chat.ChunkToolCallEnd:
		pc := s.calls[c.Index]
		if pc == nil {
			return false, nil
		}
		delete(s.calls, c.Index)
		s.held -= pc.args.Len()
		args := c.Arguments
		if args == "" {
			args = pc.args.String()
		}
		// Arguments that are not a JSON object (a model's slip) are kept
		// as {"_raw": ...}, as chat.Collect keeps them: args must be an
		// object.
		var raw json.RawMessage
		switch input := strings.TrimSpace(args); {
		case input == "":
		case strings.HasPrefix(input, "{") && json.Valid([]byte(input)):
			raw = json.RawMessage(input)
		default:
			raw = chat.RawArguments(args)
		}
		s.pw.add(callPart(pc.id, pc.name, raw))
	case chat.ChunkUsage:
		if c.Usage != nil {
			s.usage = usageOf(*c.Usage)
		}
		return false, nil
	case chat.ChunkStop:
		stop := chat.Stop{Reason: chat.StopEndTurn}
		if c.Stop != nil {
			stop = *c.Stop
		}
		s.stop = &stop
		return false, nil
	case chat.ChunkError:
		e := c.Error
		if e == nil {
			e = &chat.StreamError{Type: "api_error", Message: "the upstream failed"}
		}
		code, status := streamErrorCode(e)
		s.fail(code, status, e.Message)
		return true, nil
	}
	if parts := s.pw.take(); len(parts) > 0 {
		s.response(parts, "")
	}
	return false, nil
}

// response writes one GenerateContentResponse.
func (s *streamWriter) response(parts []Part, finish string) {
	data, err := json.Marshal(generateResponse{
		Candidates:    []candidate{{Content: modelContent(parts), FinishReason: finish}},
		UsageMetadata: s.usage,
		ModelVersion:  s.model,
		ResponseID:    s.id,
	})
	if err != nil {
		s.err = errors.Join(s.err, err)
		return
	}
	s.element(data)
}

// element writes one response or error object in the stream's framing.
func (s *streamWriter) element(data []byte) {
	var b []byte
	if s.sse {
		b = make([]byte, 0, len(data)+10)
		b = append(b, "data: "...)
		b = append(b, data...)
		b = append(b, "\r\n\r\n"...)
	} else {
		if s.n > 0 {
			b = append(b, ",\r\n"...)
		}
		b = append(b, data...)
	}
	s.n++
	s.write(b)
}

// fail ends the stream with an error object (see Dialect).
func (s *streamWriter) fail(code int, status, msg string) {
	obj := errorObject(code, status, msg)
	if !s.sse {
		s.element(obj)
		s.close()
		return
	}
	s.flush()
	s.write(append(obj, "\r\n\r\n"...))
	s.flush()
}

func (s *streamWriter) close() {
	if !s.sse {
		s.write([]byte("]"))
	}
}

func (s *streamWriter) write(b []byte) {
	if s.err != nil {
		return
	}
	if _, err := s.w.Write(b); err != nil {
		s.err = err
	}
}

func (s *streamWriter) flush() {
	if f, ok := s.w.(interface{ Flush() }); ok && s.err == nil {
		f.Flush()
	}
}
