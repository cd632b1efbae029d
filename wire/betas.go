package wire

import (
	"net/http"
	"strings"
)

// Anthropic's request headers. anthropic-version and anthropic-beta go
// to an Anthropic upstream as the client sent them. To any other upstream
// they are not sent; a beta that only tunes what Anthropic does (or whose
// request fields the field policy already checks) is named in a warning,
// a beta that is handled is passed over without one, and a beta whose
// feature lives in Anthropic's API alone is refused.

// AnthropicHeaders are the client request headers the gateway copies to an
// Anthropic upstream.
var AnthropicHeaders = []string{"anthropic-version", "anthropic-beta"}

// betaHandled are the betas ctxkit carries out for any upstream, by
// prefix: the structured-outputs betas (output_format is read as the
// request's format), and those GA or without effect on the wire.
var betaHandled = []string{"structured-outputs-", "prompt-caching-", "token-counting-", "fine-grained-tool-streaming-", "token-efficient-tools-", "interleaved-thinking-"}

// betaRefused are the betas, by prefix, whose feature only Anthropic's API
// has: files, code execution, the MCP connector, computer use, skills,
// context management, web fetch.
var betaRefused = []string{"files-api-", "code-execution-", "mcp-client-", "computer-use-", "skills-", "context-management-", "web-fetch-", "web-search-", "search-results-", "memory-"}

// AnthropicBetaHeaders are the headers to set on a request to upstream
// (a provider row's Name) for a client's request headers h: for an
// Anthropic upstream, anthropic-version and anthropic-beta as the client
// sent them (several anthropic-beta headers are joined with ","), nil
// when the client sent neither; for any other upstream none, with a
// warning per beta not handled, or an *Error of CodeUnsupportedField
// (Path "anthropic-beta") for a beta whose feature only Anthropic has.
func AnthropicBetaHeaders(h http.Header, upstream string) (set http.Header, warnings []string, err error) {
	var betas []string
	for _, v := range h.Values("anthropic-beta") {
		for _, b := range strings.Split(v, ",") {
			if b = strings.TrimSpace(b); b != "" {
				betas = append(betas, b)
			}
		}
	}
	if upstream == "anthropic" {
		if v := h.Get("anthropic-version"); v != "" {
			set = http.Header{}
			set.Set("anthropic-version", v)
		}
		if len(betas) > 0 {
			if set == nil {
				set = http.Header{}
			}
			set.Set("anthropic-beta", strings.Join(betas, ","))
		}
		return set, nil, nil
	}
	for _, b := range betas {
		switch {
		case hasPrefix(b, betaHandled):
		case hasPrefix(b, betaRefused):
			return nil, nil, unsupported("anthropic-beta", upstream, "the beta "+b+" is a feature of Anthropic's API")
		default:
			warnings = append(warnings, "anthropic-beta "+b+": not sent to "+upstream+" (Anthropic's)")
		}
	}
	return nil, warnings, nil
}

func hasPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
