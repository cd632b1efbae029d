package gemini

import (
	"encoding/json"
	"io"
	"iter"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
)

// Dialect is the generateContent client dialect's row: a client of
// Google's SDKs (genai, @google/genai) that calls
// POST /v1beta/models/{model}:generateContent, or :streamGenerateContent
// with or without alt=sse. The model and the stream mode come from the
// path (wire.Incoming); the body is read as below, answered by a
// GenerateContentResponse, and errors are Google's
// {"error":{"code","message","status"}}.
//
// # Request
//
// Field names are read in lowerCamelCase or snake_case (proto3 JSON, which
// the API reads, takes both); a field given under both names is refused.
// A field the API does not have is refused, as the API refuses it, and so
// is every field ctxkit cannot carry: the error (*chat.Error) names it
// with the client's own spelling, contents[2].parts[0].videoMetadata.
//
//	contents[]           messages: role user (or absent, or the older
//	                     "function") → user, model → assistant; every
//	                     content needs parts
//	parts: text          text block (an empty text gives none)
//	  thought: true      thinking {thinking, signature} when the part has a
//	                     thoughtSignature, reasoning {text} when not; with
//	                     text RedactedThought (or none) and a
//	                     thoughtSignature that is ctxkit's envelope of
//	                     redacted thinking, redacted_thinking {data: the
//	                     envelope} (see Response); RedactedThought with
//	                     no thoughtSignature gives none
//	  thoughtSignature   on any other part: a thought_signature block just
//	                     before the part's block (EncodeRequest puts it
//	                     back on the same part)
//	  inlineData         {mimeType, data}: an image block (base64) for
//	                     image/*, a document block otherwise
//	  fileData           {mimeType?, fileUri}: an image block (url) when
//	                     the type, or the URI's extension, is an image, a
//	                     document block otherwise; displayName (of either)
//	                     is a document's title, and on an image, a label
//	                     with no canonical place, is not carried
//	  functionCall       {id?, name, args}: tool_use (model contents only)
//	  functionResponse   {id?, name, response, parts?}: tool_result (user
//	                     contents only) whose content is the text of
//	                     response {"output": text} or {"error": text}
//	                     (is_error), else the response's JSON; its parts
//	                     (inlineData, fileData) follow as blocks
//	  executableCode, codeExecutionResult, videoMetadata, mediaResolution,
//	  partMetadata, functionCall.partialArgs/willContinue,
//	  functionResponse.willContinue/scheduling: refused
//	systemInstruction    text parts → the system prompt (a string for one
//	                     part); other parts refused
//	tools[]              functionDeclarations {name, description,
//	                     parameters (Gemini's Schema, converted to JSON
//	                     Schema) | parametersJsonSchema (as it is); none:
//	                     an empty object schema}; response,
//	                     responseJsonSchema and behavior refused; the tools
//	                     Gemini runs itself (googleSearch, codeExecution,
//	                     urlContext, ...) refused
//	toolConfig           functionCallingConfig: mode AUTO and VALIDATED →
//	                     auto, NONE → none, ANY → any, or tool when
//	                     allowedFunctionNames names one function (or any
//	                     when it names them all; a choice among some of
//	                     them is refused); names must be declared;
//	                     retrievalConfig refused
//	generationConfig     maxOutputTokens → max_tokens, temperature, topP,
//	                     stopSequences; topK, seed, presencePenalty,
//	                     frequencyPenalty kept in Extra as top_k, seed,
//	                     presence_penalty, frequency_penalty (the names the
//	                     converters read); candidateCount above 1 refused;
//	                     responseMimeType application/json → Format
//	                     json_object, or json_schema named "response" with
//	                     responseJsonSchema as it is or responseSchema
//	                     converted to JSON Schema (either one needs the
//	                     mime type; text/plain is no format; other types
//	                     refused); thinkingConfig: thinkingBudget 0 →
//	                     thinking disabled, N → enabled with budget N, -1 →
//	                     reasoning_effort medium, thinkingLevel → that
//	                     effort, lower-cased; includeThoughts accepted
//	                     (thoughts the upstream returns are always given
//	                     back); responseLogprobs true, logprobs, modalities
//	                     other than TEXT, speech, image, media resolution,
//	                     routing and civic-answer settings refused
//	safetySettings, cachedContent, labels, serviceTier
//	                     kept in Extra under those names (a Gemini upstream
//	                     can act on them; other converters report dropping
//	                     them)
//	model                in the path; the body's is used only when the
//	                     path has none
//
// Gemini pairs a functionResponse with its functionCall by name and order,
// and its calls rarely carry ids. A call without an id gets one made from
// its place and content (as DecodeStream names a call: "call_<n>_<hash>",
// n counting the request's calls) and a response without an id is paired
// with the first unanswered call of the same name, else the first
// unanswered call, and takes its id; so every tool_result names its
// tool_use, which every upstream needs, and the same history always gives
// the same ids. Ids the client gave are kept.
//
// Bounds: chat.MaxMessages contents, chat.MaxBlocks parts in all,
// chat.MaxTools function declarations, chat.MaxStopSequences stop
// sequences, 64 members in any object of the request, and schemas
// converted from Gemini's Schema nest at most 64 deep with at most 10000
// members in an object or array. Past one, the request is refused before
// the rest is read.
//
// # Response
//
// {"candidates":[{"content":{"role":"model","parts":[...]},"finishReason",
// "index":0}],"usageMetadata":{...},"modelVersion","responseId"}. Parts,
// in the order the content came: text → {"text"}; reasoning → {"text",
// "thought":true}; a tool call → {"functionCall":{"id","name","args"}}. A
// reasoning signature (the signature of a thinking block, or one that came
// alone) is written as the thoughtSignature of the next part that is not
// a thought, where Gemini 3 looks for it on a function call; when no part
// follows, or a second signature comes first, on an empty text part
// {"text":"","thoughtSignature"}. Redacted thinking (Anthropic's
// redacted_thinking, Bedrock's redactedContent) is a thought part in its
// place, {"text":RedactedThought,"thought":true,"thoughtSignature"}, the
// signature being the envelope the gateway sealed the data in (the text
// is there for Google's SDKs, whose chat sessions drop a turn with a
// part that holds no data); unsealed data, which would name no provider
// when it came back, is left out. A
// candidate with no part has one empty text part, so clients that read
// parts[0] find one. (The gateway seals the signatures of another
// provider's model before they get here, wire.SealChunks: a Gemini
// client then holds base64, as thoughtSignature must be, that names the
// provider and, for Anthropic's and Bedrock's, carries the
// thinking text, so the client sending back only the signature is enough
// for the thinking block to be rebuilt.)
//
// finishReason: the upstream's own when it is one of Gemini's reasons,
// else by the stop's reason: end_turn, tool_use (Gemini ends a turn of
// calls with STOP) and stop_sequence → STOP, max_tokens → MAX_TOKENS,
// content_filter → SAFETY, anything else → OTHER. usageMetadata:
// promptTokenCount = input, cachedContentTokenCount = cache read,
// thoughtsTokenCount = reasoning, candidatesTokenCount = output less
// reasoning, totalTokenCount = input + output (the inverse of
// DecodeStream's reading).
//
// # Stream
//
// With alt=sse: Content-Type text/event-stream, each
// GenerateContentResponse one event "data: <json>\r\n\r\n" (the framing
// of the API), one for each text or reasoning chunk and each completed
// function call, every one with the latest usageMetadata once there is
// one, the last with the finishReason: it is written when the chunks end
// or a chunk other than usage follows the stop, so usage an upstream
// reports after its finish reason (OpenAI's streams do) goes in it, and
// nothing else after the stop is written. There is no end marker; the last
// event ends with its blank line. Without alt=sse (alt=json): Content-Type
// application/json, one JSON array written as it goes: "[" then the
// responses separated by ",\r\n", then "]". A usage chunk is written with
// the next response, so usage that comes after the last part of a stream
// that then fails is not written. Tool call fragments are put together
// and written as one functionCall part when the call ends (Gemini sends
// calls whole); at most MaxToolCalls calls may be open at once, holding
// at most MaxToolCallBytes of arguments, or the stream fails (INTERNAL).
//
// An error in the stream (an error chunk, or a failure to read the
// upstream) ends it with Google's error object {"error":{"code",
// "message","status"}}: with alt=sse written bare, not as a data: event,
// in a write of its own (flushed before and after when the writer has a
// Flush method) and ended by a blank line: that is the form both the Go
// SDK (it reads a stream line that is not a data: field as an error
// object) and the JS SDK (it only recognises an error when one read holds
// the object whole) report as an API error; in the array it is the last
// element. The error's code and status are mapped as for Error.
//
// # Errors
//
// ErrorBody.
func Dialect() wire.Dialect {
	return wire.Dialect{
		Name: "gemini",
		Decode: func(body []byte, in wire.Incoming) (chat.Request, error) {
			if alt := in.Query.Get("alt"); alt != "" && alt != "sse" && alt != "json" {
				return chat.Request{}, &chat.Error{Code: chat.CodeInvalidValue, Path: "alt", Msg: "ctxkit answers with alt=json or alt=sse, not " + alt}
			}
			return decodeRequest(body, in.Model, in.Stream)
		},
		Response: func(res chat.Response, out wire.Outgoing) ([]byte, error) {
			return encodeResponse(res, out.Model, out.ID)
		},
		Stream: func(w io.Writer, out wire.Outgoing, chunks iter.Seq2[chat.Chunk, error]) error {
			return encodeStream(w, sseMode(out.Incoming), out.Model, out.ID, chunks)
		},
		StreamType: func(in wire.Incoming) string {
			if sseMode(in) {
				return "text/event-stream"
			}
			return "application/json; charset=UTF-8"
		},
		Error:    ErrorBody,
		IDPrefix: "",
	}
}

func sseMode(in wire.Incoming) bool { return in.Query.Get("alt") == "sse" }

// ErrorBody is an error response in Google's shape:
// {"error":{"code":<status>,"message","status"}}. status is the canonical
// name of the HTTP status (400 INVALID_ARGUMENT, 401 UNAUTHENTICATED, 403
// PERMISSION_DENIED, 404 NOT_FOUND, 409 ABORTED, 413 INVALID_ARGUMENT, 429
// RESOURCE_EXHAUSTED, 499 CANCELLED, 500 INTERNAL, 501 UNIMPLEMENTED, 503
// and 529 UNAVAILABLE, 504 DEADLINE_EXCEEDED; other 4xx
// FAILED_PRECONDITION, other 5xx INTERNAL). A reply without a status
// takes the code of its Type (invalid_request_error 400,
// authentication_error 401, permission_error 403, not_found_error 404,
// rate_limit_error 429, overloaded_error 503, anything else 500).
func ErrorBody(e wire.ErrorReply) []byte {
	code := e.Status
	if code == 0 {
		code, _ = streamErrorCode(&chat.StreamError{Type: e.Type})
	}
	return append(errorObject(code, statusName(code), e.Message), '\n')
}

func errorObject(code int, status, msg string) []byte {
	type body struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
	}
	data, _ := json.Marshal(struct {
		Error body `json:"error"`
	}{body{code, msg, status}})
	return data
}

func statusName(code int) string {
	switch code {
	case 400, 413:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 409:
		return "ABORTED"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case 501:
		return "UNIMPLEMENTED"
	case 503, 529:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	if code >= 400 && code < 500 {
		return "FAILED_PRECONDITION"
	}
	return "INTERNAL"
}

// streamErrorCode is the HTTP code and status of an error inside a
// stream: a Gemini status as it is, an Anthropic error type (the gateway's
// vocabulary) by its meaning, anything else INTERNAL, or UNAVAILABLE when
// a retry may succeed.
func streamErrorCode(e *chat.StreamError) (int, string) {
	switch e.Type {
	case "INVALID_ARGUMENT", "invalid_request_error":
		return 400, "INVALID_ARGUMENT"
	case "FAILED_PRECONDITION":
		return 400, "FAILED_PRECONDITION"
	case "UNAUTHENTICATED", "authentication_error":
		return 401, "UNAUTHENTICATED"
	case "PERMISSION_DENIED", "permission_error":
		return 403, "PERMISSION_DENIED"
	case "NOT_FOUND", "not_found_error":
		return 404, "NOT_FOUND"
	case "RESOURCE_EXHAUSTED", "rate_limit_error":
		return 429, "RESOURCE_EXHAUSTED"
	case "CANCELLED":
		return 499, "CANCELLED"
	case "UNAVAILABLE", "overloaded_error":
		return 503, "UNAVAILABLE"
	case "DEADLINE_EXCEEDED":
		return 504, "DEADLINE_EXCEEDED"
	case "INTERNAL", "api_error":
		return 500, "INTERNAL"
	}
	if e.Retryable {
		return 503, "UNAVAILABLE"
	}
	return 500, "INTERNAL"
}
