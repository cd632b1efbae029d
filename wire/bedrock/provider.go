package bedrock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
)

// Provider is Amazon Bedrock's row of the provider table: the request
// encoder (stateful: cache points are kept stable between turns), POST
// {base}/model/{model}/converse-stream with a Bedrock API key as a bearer
// token, the event-stream decoder and the error-body parser.
func Provider() wire.Provider {
	return wire.Provider{
		Name:     "bedrock",
		Encode:   encode,
		Caches:   []string{CacheBedrock},
		Stateful: true,
		Upstream: &wire.Upstream{
			Path: func(model string) string { return "/model/" + url.PathEscape(model) + "/converse-stream" },
			SetHeader: func(h http.Header, key string) {
				h.Set("Authorization", "Bearer "+key)
				h.Set("Accept", "application/vnd.amazon.eventstream")
			},
			Decode:     DecodeStream,
			ParseError: parseError,
			RateLimit:  func(typ string) bool { return strings.EqualFold(typ, "throttlingException") },
			Embed:      embedCall(),
			// toolUseId is [a-zA-Z0-9_-]{1,64}; a made id looks like
			// Bedrock's own.
			ToolIDs: wire.ToolIDRule{Alphabet: wire.IDWord, MinLen: 1, MaxLen: 64, Prefix: "tooluse_", Len: 30},
			Unary:   unary(),
		},
	}
}

// encode reads the previous turn's cache points from state (a CacheState
// as JSON) and returns the new ones as the state to keep.
func encode(req chat.Request, options json.RawMessage, state []byte) (any, []byte, []chat.Warning, error) {
	var opts Options
	if err := wire.DecodeOptions(options, &opts); err != nil {
		return nil, nil, nil, err
	}
	if len(bytes.TrimSpace(state)) > 0 {
		var st CacheState
		dec := json.NewDecoder(bytes.NewReader(state))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&st); err != nil {
			return nil, nil, nil, &wire.Error{Code: wire.CodeState, Msg: fmt.Sprintf("not a cache state file: %v", err), Err: err}
		}
		opts.State = &st
	}
	out, warns, err := EncodeRequest(req, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	newState, err := json.MarshalIndent(out.CacheState, "", "  ")
	if err != nil {
		return nil, nil, nil, err
	}
	return out, append(newState, '\n'), warns, nil
}

// parseError reads an error response: {"message"} (or "Message"), its
// type in the X-Amzn-ErrorType header ("ThrottlingException:..." ) or the
// body's "__type".
func parseError(status int, h http.Header, body []byte) wire.APIError {
	e := wire.APIError{Status: status, RetryAfter: h.Get("Retry-After")}
	var v struct {
		Message string `json:"message"`
		Type    string `json:"__type"`
	}
	if json.Unmarshal(bytes.TrimSpace(body), &v) == nil {
		e.Message, e.Type = v.Message, v.Type
	}
	if t := h.Get("X-Amzn-ErrorType"); t != "" {
		e.Type = t
	}
	// "ThrottlingException:http://internal.amazon.com/..." or
	// "com.amazon.coral.service#ThrottlingException".
	if i := strings.LastIndexByte(e.Type, '#'); i >= 0 {
		e.Type = e.Type[i+1:]
	}
	if i := strings.IndexByte(e.Type, ':'); i >= 0 {
		e.Type = e.Type[:i]
	}
	if e.Message == "" {
		// A body in another shape (a proxy's, another provider's).
		e.Message = wire.Message(body)
	}
	e.Retryable = wire.RetryableStatus(status) || retryable(e.Type)
	return e
}
