package openai

// The tests reach the decoder options and the finish-reason mapping, which
// DecodeStream and EncodeStream keep to themselves.
type DecodeOptions = decodeOptions

var (
	DecodeStreamWith = decodeStream
	FinishReason     = finishReason
)
