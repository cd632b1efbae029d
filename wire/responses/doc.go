// Package responses speaks OpenAI's Responses API (POST /v1/responses) in
// both directions.
//
// As a client dialect (Dialect): DecodeRequest reads a Responses request
// as a canonical request, and EncodeResponse and EncodeStream answer it —
// a Response object, or the API's typed server-sent events with sequence
// numbers — whatever upstream made the answer. Continue puts a
// conversation continued by previous_response_id together, and Advisory
// says which kept fields an upstream may drop.
//
// As an upstream (Provider, the provider table's "responses" row):
// EncodeRequest converts a canonical request to a Responses request, and
// DecodeStream reads the API's stream as canonical chunks.
//
// # Reasoning across turns
//
// A Responses model's reasoning comes back to it only as the encrypted
// content of its reasoning items (ctxkit sends "store": false, so the
// upstream keeps nothing). DecodeStream hands the content on as a
// reasoning chunk's Signature; chat.Collect makes a thinking block of it
// (the summary as its text); every client dialect writes such a block so
// that its client hands it back (a thinking block's signature, OpenRouter's
// reasoning_details, a reasoning item's encrypted_content), and
// EncodeRequest sends it back as the reasoning item. A thinking block
// without a signature, and other providers' reasoning blocks, cannot go
// to the Responses API and are dropped with a warning. In the other
// direction, the reasoning items a Responses client sends back become
// thinking blocks with signatures (or redacted_thinking, see
// EncodeResponse), which an Anthropic upstream takes back as its own; a
// signature of one provider sent to another is refused by that provider,
// as with every dialect.
package responses
