package chat

import (
	"encoding/json"
	"errors"
	"io"
	"iter"
	"strconv"
	"strings"
)

// A streamed response is a sequence of Chunks. Each wire package decodes
// its provider's stream into this sequence (DecodeStream) and the gateway
// writes it back out in the client's dialect.
//
// Usage chunks carry RUNNING TOTALS for the whole response so far, not
// increments: a consumer keeps the last usage chunk it saw and never adds
// them up. Providers differ (Anthropic repeats cumulative counts in
// message_delta, OpenAI sends one usage at the end, Gemini repeats running
// counts on every chunk); decoders convert each to running totals.

// ChunkType says what a chunk carries.
type ChunkType string

// Chunk types.
const (
	ChunkText          ChunkType = "text"
	ChunkReasoning     ChunkType = "reasoning"
	ChunkToolCallStart ChunkType = "tool_call_start"
	ChunkToolCallDelta ChunkType = "tool_call_delta"
	ChunkToolCallEnd   ChunkType = "tool_call_end"
	ChunkUsage         ChunkType = "usage"
	ChunkStop          ChunkType = "stop"
	ChunkError         ChunkType = "error"
)

// Chunk is one piece of a streamed response. Which fields are set depends
// on Type.
type Chunk struct {
	Type ChunkType `json:"type"`
	// Text: a text or reasoning fragment.
	Text string `json:"text,omitempty"`
	// Signature: a reasoning signature (Anthropic's signature_delta,
	// Gemini's thoughtSignature, Bedrock's reasoning signature); it may come
	// in a reasoning chunk of its own, with no text.
	Signature string `json:"signature,omitempty"`
	// Redacted: encrypted reasoning the provider sent instead of text.
	Redacted string `json:"redacted,omitempty"`
	// Detail: the provider's own form of a reasoning chunk with a
	// Signature or Redacted (an OpenRouter reasoning detail, raw JSON),
	// which a client of the same dialect gets back as it came. A string,
	// so that a Chunk stays comparable.
	Detail string `json:"-"`
	// Index: the tool call's position among this response's tool calls
	// (0, 1, ...), the same in its start, deltas and end.
	Index int `json:"index"`
	// ID and Name: tool_call_start.
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
	// Arguments: a fragment of the call's JSON arguments (tool_call_delta)
	// or all of them (tool_call_end: a complete JSON object, "{}" when the
	// call had none).
	Arguments string `json:"arguments,omitempty"`
	// Usage: running totals (see above).
	Usage *Usage `json:"usage,omitempty"`
	// Stop: why the response ended.
	Stop *Stop `json:"stop,omitempty"`
	// Error: an error the provider reported inside the stream.
	Error *StreamError `json:"error,omitempty"`
}

// Usage counts tokens for the whole response so far. Input counts every
// prompt token, cached or not; CacheRead and CacheWrite say how many of
// them were read from or written to a prompt cache. Output counts every
// generated token, reasoning included; Reasoning says how many were
// reasoning. Cost is what the response cost in US dollars, when it is
// known: the provider's own report (OpenRouter's), or the price a gateway
// put on the counts; nil when neither is known, which is not zero.
type Usage struct {
	Input      int64    `json:"input_tokens"`
	Output     int64    `json:"output_tokens"`
	CacheRead  int64    `json:"cache_read_tokens,omitempty"`
	CacheWrite int64    `json:"cache_write_tokens,omitempty"`
	Reasoning  int64    `json:"reasoning_tokens,omitempty"`
	Cost       *float64 `json:"cost,omitempty"`
}

// StopReason is a normalised reason for the end of a response.
type StopReason string

// Stop reasons.
const (
	StopEndTurn       StopReason = "end_turn"
	StopMaxTokens     StopReason = "max_tokens"
	StopToolUse       StopReason = "tool_use"
	StopSequence      StopReason = "stop_sequence"
	StopContentFilter StopReason = "content_filter"
	StopError         StopReason = "error"
)

// Stop is why a response ended: the normalised reason and the provider's own.
type Stop struct {
	Reason StopReason `json:"reason"`
	Raw    string     `json:"raw,omitempty"`
}

// StreamError is an error inside a stream: its type (the provider's, such
// as overloaded_error or throttlingException), message, and whether
// retrying the request may succeed.
type StreamError struct {
	Type      string `json:"type"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

func (e *StreamError) Error() string { return e.Type + ": " + e.Message }

// Response is a stream put together: what a non-streaming client gets.
type Response struct {
	// Content holds the text, reasoning (thinking, with signatures;
	// redacted_thinking) and tool_use blocks in the order they began.
	Content []Block
	Usage   Usage // the last running total
	Stop    Stop
	Error   *StreamError
}

// MaxCollectedBlocks bounds the content blocks Collect puts together. A
// block costs a few hundred bytes however little it holds, so a stream
// whose every small chunk starts a block (a redacted reasoning chunk, a
// tool call start, reasoning after a signature, text after reasoning)
// would otherwise cost far more memory than the stream's bytes. A real
// response has tens of blocks, a few hundred at most; chunks that add to
// the block being built (text after text, say) start none and are not
// limited in number.
const MaxCollectedBlocks = 10000

// ErrTooManyBlocks is the error Collect returns for a response with more
// than MaxCollectedBlocks blocks.
var ErrTooManyBlocks = errors.New("chat: the response has more than " + strconv.Itoa(MaxCollectedBlocks) + " content blocks")

// Collect reads a chunk stream to its end and puts the response together.
// Tool call arguments that are not a JSON object are kept as
// {"_raw": "<text>"}.
// It stops at the first decode error and returns it with what it had, and
// likewise with ErrTooManyBlocks at a chunk that would start block number
// MaxCollectedBlocks+1.
func Collect(chunks iter.Seq2[Chunk, error]) (Response, error) {
	var (
		r     Response
		calls = map[int]int{} // tool call index → block position
		args  = map[int]*strings.Builder{}
		last  = "" // the type of the block being added to
		// The text of the block being added to, built in linear time and
		// set on the block when another begins or the stream ends.
		text, sig strings.Builder
		signed    bool
	)
	settle := func() {
		if len(r.Content) == 0 {
			return
		}
		b := &r.Content[len(r.Content)-1]
		switch last {
		case TypeText:
			b.Text = text.String()
		case TypeThinking:
			b.Thinking, b.Signature = text.String(), sig.String()
		}
		text.Reset()
		sig.Reset()
		signed = false
	}
	// begin starts block b; it reports false, having added nothing, when
	// the response already has MaxCollectedBlocks blocks.
	begin := func(b Block) bool {
		settle()
		if len(r.Content) >= MaxCollectedBlocks {
			return false
		}
		r.Content = append(r.Content, b)
		last = b.Type
		return true
	}
	for c, err := range chunks {
		if err != nil {
			settle()
			return r, err
		}
		switch c.Type {
		case ChunkText:
			if last != TypeText && !begin(Block{Type: TypeText}) {
				return r, ErrTooManyBlocks
			}
			text.WriteString(c.Text)
		case ChunkReasoning:
			if c.Redacted != "" {
				if !begin(Block{Type: TypeRedactedThinking, Data: c.Redacted}) {
					return r, ErrTooManyBlocks
				}
				continue
			}
			// A signed thinking block is complete: more reasoning, or
			// another signature, starts a new one.
			if (last != TypeThinking || signed) && !begin(Block{Type: TypeThinking}) {
				return r, ErrTooManyBlocks
			}
			text.WriteString(c.Text)
			if c.Signature != "" {
				sig.WriteString(c.Signature)
				signed = true
			}
		case ChunkToolCallStart:
			if !begin(Block{Type: TypeToolUse, ID: c.ID, Name: c.Name}) {
				return r, ErrTooManyBlocks
			}
			calls[c.Index] = len(r.Content) - 1
			args[c.Index] = &strings.Builder{}
		case ChunkToolCallDelta:
			if b, ok := args[c.Index]; ok {
				b.WriteString(c.Arguments)
			}
		case ChunkToolCallEnd:
			pos, ok := calls[c.Index]
			if !ok {
				continue
			}
			a := c.Arguments
			if a == "" {
				a = args[c.Index].String()
			}
			if a == "" {
				a = "{}"
			}
			r.Content[pos].Input = toolInput(a)
		case ChunkUsage:
			if c.Usage != nil {
				r.Usage = *c.Usage // running totals: the last one wins
			}
		case ChunkStop:
			if c.Stop != nil {
				r.Stop = *c.Stop
			}
		case ChunkError:
			r.Error = c.Error
			if r.Stop.Reason == "" {
				r.Stop = Stop{Reason: StopError}
			}
		}
	}
	settle()
	return r, nil
}

// toolInput is a tool call's arguments as a block's input: a JSON object
// as it came; anything else (a stream cut inside the arguments, a model
// that wrote something that is not an object) kept as {"_raw": "<text>"},
// so the block stays valid and nothing is lost.
func toolInput(args string) json.RawMessage {
	if t := strings.TrimSpace(args); strings.HasPrefix(t, "{") && json.Valid([]byte(t)) {
		return json.RawMessage(args)
	}
	return RawArguments(args)
}

// RawArguments is the tool_use input that keeps arguments which are not a
// JSON object: {"_raw": "<text>"}. Every decoder uses the same shape.
func RawArguments(text string) json.RawMessage {
	raw, _ := json.Marshal(map[string]string{"_raw": text})
	return raw
}

// Stream turns a decoding function into the iterator every DecodeStream
// returns: decode runs, handing chunks to yield (which reports false once
// the consumer has stopped), and its error, if any, is the last item. r is
// closed when the loop ends, early or not, if it is an io.Closer.
func Stream(r io.Reader, decode func(yield func(Chunk) bool) error) iter.Seq2[Chunk, error] {
	return func(yield func(Chunk, error) bool) {
		if c, ok := r.(io.Closer); ok {
			defer c.Close()
		}
		stopped := false
		err := decode(func(c Chunk) bool {
			if !yield(c, nil) {
				stopped = true
				return false
			}
			return true
		})
		if err != nil && !stopped {
			yield(Chunk{}, err)
		}
	}
}
