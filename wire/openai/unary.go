package openai

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/internal/oaicompat"
)

// MaxChoices bounds the choices of a response DecodeResponse reads: the
// API's own bound on n.
const MaxChoices = 128

// compatibleUnary is the non-streamed call of a Chat Completions server:
// the same path and key as a stream, a JSON answer.
func compatibleUnary() *wire.Unary {
	return &wire.Unary{
		Path: func(string) string { return "/chat/completions" },
		SetHeader: func(h http.Header, key string) {
			h.Set("Authorization", "Bearer "+key)
			h.Set("Accept", "application/json")
		},
		Decode: DecodeResponse,
	}
}

// A chat.completion object, only the fields ctxkit reads. A choice's
// message has the fields of a stream chunk's delta: the message is what
// the deltas of a stream add up to, and it is read by the same code.
type unaryResponse struct {
	Choices []unaryChoice    `json:"choices"`
	Usage   *oaicompat.Usage `json:"usage"`
	Error   json.RawMessage  `json:"error"`
}

type unaryChoice struct {
	Index        int         `json:"index"`
	Message      streamDelta `json:"message"`
	FinishReason string      `json:"finish_reason"`
}

// DecodeResponse reads the body of a non-streamed Chat Completions
// response (a chat.completion object) as the response DecodeStream makes
// of the stream of the same answer, through chat.Collect: choice 0's
// message is read as one delta carrying all of it (content, refusal,
// reasoning_content / reasoning / reasoning_details, <think> tags at the
// start of the content, tool_calls and the legacy function_call), its
// finish_reason is the stop, usage the usage, and an "error" key (some
// OpenAI-compatible servers answer 200 with one) the response's Error.
//
// The reasoning_details read stay on the blocks they made, as they came,
// in the block's Extra["reasoning_details"] (a JSON array), for
// EncodeResponse to write back to a Chat Completions client.
//
// A body that is not a JSON object of that shape is an error naming the
// field at fault; so is one with more than MaxChoices choices, or tool
// calls past the stream's bounds (MaxArguments, MaxToolCalls,
// MaxToolCallBytes).
func DecodeResponse(body []byte) (chat.Response, error) {
	var r unaryResponse
	if err := parseResponse(body, &r); err != nil {
		return chat.Response{}, oaicompat.BodyError("openai response", err)
	}
	if len(r.Choices) > MaxChoices {
		return chat.Response{}, fmt.Errorf("openai response: choices: %d choices, more than %d", len(r.Choices), MaxChoices)
	}
	c := streamChunk{Usage: r.Usage, Error: r.Error}
	var details []reasoningDetail
	for i := range r.Choices {
		ch := &r.Choices[i]
		if ch.Index != 0 {
			continue
		}
		if n := len(ch.Message.ReasoningDetails); n > chat.MaxCollectedBlocks {
			return chat.Response{}, fmt.Errorf("openai response: choices[%d].message.reasoning_details: %d items, more than %d", i, n, chat.MaxCollectedBlocks)
		}
		c.Choices = []streamChoice{{Delta: ch.Message, FinishReason: ch.FinishReason}}
		details = ch.Message.ReasoningDetails
		break
	}
	res, err := chat.Collect(chat.Stream(nil, func(yield func(chat.Chunk) bool) error {
		d := streamDecoder{yield: yield, ok: true}
		if err := d.chunk(&c); err != nil {
			return err
		}
		d.end()
		return nil
	}))
	if err == nil {
		keepDetails(&res, details)
	}
	return res, err
}

// keepDetails puts each of details (a message's reasoning_details, in
// order) on the reasoning block it made (see streamDecoder.reasoning), in
// the block's Extra under rawDetails, so that EncodeResponse writes them
// back as they came: a reasoning.encrypted detail on its redacted
// thinking block, a text or summary detail on the thinking block it is
// part of (a signed one ends the block). At a detail that made no block
// it stops: the rest are written as ctxkit writes them.
func keepDetails(res *chat.Response, details []reasoningDetail) {
	j := 0 // the block the next detail belongs to, or one before it
	next := func(typ string) int {
		for ; j < len(res.Content); j++ {
			if res.Content[j].Type == typ {
				return j
			}
		}
		return -1
	}
	kept := map[int][]json.RawMessage{} // block → its details
	for k := range details {
		rd := &details[k]
		if len(rd.raw) == 0 {
			break
		}
		var at int
		if rd.Type == "reasoning.encrypted" {
			if at = next(chat.TypeRedactedThinking); at < 0 || res.Content[at].Data != rd.Data {
				break
			}
			j++
		} else {
			if at = next(chat.TypeThinking); at < 0 {
				break
			}
			if rd.Signature != "" {
				if res.Content[at].Signature != rd.Signature {
					break
				}
				j++
			}
		}
		kept[at] = append(kept[at], rd.raw)
	}
	for at, list := range kept {
		raw, err := json.Marshal(list)
		if err != nil {
			continue
		}
		b := &res.Content[at]
		if b.Extra == nil {
			b.Extra = map[string]json.RawMessage{}
		}
		b.Extra[rawDetails] = raw
	}
}
