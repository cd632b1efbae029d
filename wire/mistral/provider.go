package mistral

import (
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/openai"
)

// Provider is Mistral's row of the provider table: its request encoder
// and stream decoder, POST {base}/chat/completions with a bearer key, and
// error bodies read as a Chat Completions server's (Mistral answers
// {"object":"error","message","type","code"}, which that parser reads).
func Provider() wire.Provider {
	up := openai.CompatibleUpstream()
	up.Decode = DecodeStream
	up.Embed = embedCall()
	// Mistral's ids are exactly nine characters of [a-zA-Z0-9].
	up.ToolIDs = wire.ToolIDRule{Alphabet: wire.IDAlnum, MinLen: 9, MaxLen: 9, Len: 9}
	up.Unary.Decode = DecodeResponse
	return wire.Provider{
		Name:     "mistral",
		Encode:   wire.Stateless(EncodeRequest),
		Upstream: up,
	}
}
