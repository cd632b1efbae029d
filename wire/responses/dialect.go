package responses

import (
	"io"
	"iter"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/openai"
)

// Dialect is the Responses API client dialect's row (POST /v1/responses):
// requests read by DecodeRequest, answered by EncodeResponse and
// EncodeStream, errors in OpenAI's {"error":{"message","type","param",
// "code"}}, which the Responses API shares.
func Dialect() wire.Dialect {
	return wire.Dialect{
		Name:   "responses",
		Decode: func(body []byte, _ wire.Incoming) (chat.Request, error) { return DecodeRequest(body) },
		Response: func(res chat.Response, out wire.Outgoing) ([]byte, error) {
			return EncodeResponse(res, out.Request, out.Model, out.ID, out.Created)
		},
		Stream: func(w io.Writer, out wire.Outgoing, chunks iter.Seq2[chat.Chunk, error]) error {
			return EncodeStream(w, out.Request, out.Model, out.ID, out.Created, chunks)
		},
		Error:    openai.ErrorBody,
		IDPrefix: "resp_",
		Forward:  forward,
	}
}

// Provider is the Responses API's row of the provider table, "responses":
// the request encoder (EncodeRequest), POST {base}/responses with the key
// as a bearer token, the stream decoder (DecodeStream), and OpenAI's
// error parser and rate-limit types.
func Provider() wire.Provider {
	compat := openai.CompatibleUpstream()
	return wire.Provider{
		Name:   "responses",
		Encode: wire.Stateless(EncodeRequest),
		Upstream: &wire.Upstream{
			Path:       func(string) string { return "/responses" },
			SetHeader:  compat.SetHeader,
			Decode:     DecodeStream,
			ParseError: compat.ParseError,
			RateLimit:  compat.RateLimit,
			// call_id's limit is not documented: Chat Completions' is
			// taken, which every id a Responses upstream makes meets.
			ToolIDs: openai.ToolIDs(),
			// Embeddings are OpenAI's /embeddings whichever API the
			// chat goes through.
			Embed: openai.Provider().Upstream.Embed,
			// A client that does not stream is answered from one
			// Response object.
			Unary: &wire.Unary{
				Path:      func(string) string { return "/responses" },
				SetHeader: compat.Unary.SetHeader,
				Decode:    DecodeResponse,
			},
		},
	}
}

// advisory are the fields DecodeRequest keeps in Extra that only tune how
// an answer is made or billed.
var advisory = map[string]bool{
	"metadata": true, "user": true, "safety_identifier": true, "prompt_cache_key": true,
	"prompt_cache_retention": true, "service_tier": true, "truncation": true, "include": true,
	"text": true, "reasoning": true, "max_tool_calls": true,
}

// Advisory reports whether name, a field DecodeRequest keeps in
// chat.Request.Extra, is advisory: it tunes how the answer is made or
// billed (metadata, user, safety_identifier, prompt_cache_key,
// prompt_cache_retention, service_tier, truncation, include, text's
// verbosity, reasoning's summary, max_tool_calls), so an upstream other
// than the Responses API may drop it with a warning. The others change
// what the answer is (prompt, and fields ctxkit does not know), and an
// upstream that cannot carry them must refuse the request; store and
// previous_response_id are the gateway's own (see Continue).
func Advisory(name string) bool { return advisory[name] }

// Continue is the request a client continues with previous_response_id:
// the conversation so far (prev's messages), the previous response's
// output as one assistant turn (its thinking, redacted thinking, text and
// tool calls, in order; nothing when it has none), then next's messages.
// Everything else — model, instructions, tools, parameters, Extra — is
// next's: as the API says, instructions do not carry over. (DecodeRequest
// joins the system and developer messages of an input with instructions
// in the system prompt, so those of the earlier input do not carry over
// either: a client that continues a conversation sends its system
// messages again, as it sends instructions.) next's Extra keeps
// previous_response_id for the gateway to drop. The messages are copies:
// changing the result changes neither request.
func Continue(prev chat.Request, prevOut chat.Response, next chat.Request) chat.Request {
	out := next.Clone()
	msgs := make([]chat.Message, 0, len(prev.Messages)+1+len(next.Messages))
	for _, m := range prev.Messages {
		msgs = append(msgs, m.Clone())
	}
	var blocks []chat.Block
	for _, b := range prevOut.Content {
		switch b.Type {
		case chat.TypeText, chat.TypeThinking, chat.TypeRedactedThinking, chat.TypeReasoning, chat.TypeToolUse:
			blocks = append(blocks, b.Clone())
		}
	}
	if len(blocks) > 0 {
		msgs = append(msgs, chat.Message{Role: chat.Assistant, Content: chat.Of(blocks...)})
	}
	out.Messages = append(msgs, out.Messages...)
	return out
}
