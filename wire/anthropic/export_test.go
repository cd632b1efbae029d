package anthropic

import "github.com/ctxkit/ctxkit/chat"

// The tests reach the stream writer EncodeStream drives, and the error
// body it writes in an error event.
var NewStreamWriter = newStreamWriter

func EncodeError(e *chat.StreamError) []byte { return appendError(nil, e) }
