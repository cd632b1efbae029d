package deepseek

import (
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/openai"
)

// Provider is DeepSeek's row of the provider table: its own request
// encoder (reasoning content), and the Chat Completions upstream side
// (POST {base}/chat/completions, bearer key, SSE, OpenAI-shaped errors,
// OpenAI's rule for tool-call ids).
func Provider() wire.Provider {
	return wire.Provider{
		Name:     "deepseek",
		Encode:   wire.Stateless(EncodeRequest),
		Upstream: openai.CompatibleUpstream(),
	}
}
