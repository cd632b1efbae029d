package wire

import (
	"net/http"

	"github.com/ctxkit/ctxkit/chat"
)

// Limits of an embedding request and of the answers to it. A provider's
// answer is outside input too: its decoder refuses more vectors, or longer
// ones, than these.
const (
	// MaxEmbedInputs bounds the inputs of one request (OpenAI's own
	// bound).
	MaxEmbedInputs = 2048
	// MaxEmbedTokens bounds the token ids of one input given as tokens.
	MaxEmbedTokens = 1 << 16
	// MaxEmbedDimensions bounds a vector's length, asked for or answered.
	MaxEmbedDimensions = 1 << 16
)

// EmbedRequest is a request for embeddings, in the terms every provider's
// embedding API maps to.
type EmbedRequest struct {
	Model string
	// Texts are the inputs to embed, in order; Tokens, set instead, are
	// inputs given as token ids (OpenAI's integer arrays), which only a
	// row whose EmbedCall.Tokens is set takes.
	Texts  []string
	Tokens [][]int
	// Dimensions asks for vectors of that length; 0: the model's own.
	Dimensions int
	// User names the caller's end user: advisory, carried where the
	// provider takes it.
	User string
}

// Inputs is how many inputs r has.
func (r *EmbedRequest) Inputs() int {
	if r.Tokens != nil {
		return len(r.Tokens)
	}
	return len(r.Texts)
}

// Embeddings is what a provider answered to (part of) an EmbedRequest.
type Embeddings struct {
	// Vectors are one per input, in the inputs' order.
	Vectors [][]float32
	// InputTokens is the tokens the provider counted, when Counted.
	InputTokens int
	Counted     bool
}

// EmbedCall is how ctxkit calls a provider's embedding API.
type EmbedCall struct {
	// Tokens reports whether the API takes inputs given as token ids.
	Tokens bool
	// Encode makes the HTTP requests that embed req, to be sent in
	// order: more than one where the API embeds fewer inputs in a call
	// than req has. A request the API cannot carry is a *chat.Error
	// naming the field at fault; an advisory field it drops is a warning.
	Encode func(req EmbedRequest) ([]EmbedPart, []chat.Warning, error)
	// Decode reads the answer (headers and body) to part: exactly
	// part.Inputs vectors, or an error.
	Decode func(part EmbedPart, h http.Header, body []byte) (Embeddings, error)
}

// EmbedPart is one HTTP request of an embedding call: POST Path (appended
// to the provider's base URL) with Body.
type EmbedPart struct {
	Path   string
	Body   []byte
	Inputs int // how many of the request's inputs it embeds
}

// CountCall is how ctxkit asks a provider for the exact input-token count
// of a request.
type CountCall struct {
	// Path is the path, appended to the provider's base URL, of the count
	// for model.
	Path func(model string) string
	// Body makes the count request's body from the request as the row's
	// Encode encoded it (JSON), with what the count does not take left
	// out, named in the warnings.
	Body func(encoded []byte) ([]byte, []chat.Warning, error)
	// Decode reads the count from the answer's body.
	Decode func(body []byte) (int, error)
}
