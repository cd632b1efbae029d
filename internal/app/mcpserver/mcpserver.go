// Package mcpserver exposes ctxkit to MCP clients: tools over breadcrumbs,
// their LLM views, search and workspace search. Every tool result carries
// an envelope.Result as structuredContent (and a text copy); isError is
// true only for an ERROR envelope, never for a FALLBACK. A failure is a
// tool result, not a protocol error, so the envelope reaches the client.
//
// The tools call ctxkit's HTTP API through an API: in-process inside
// 'ctxkit serve' (the /mcp endpoint, with the caller's own bearer token),
// or a remote server for 'ctxkit mcp' over stdio. Both transports so expose
// the same tools with the same owner isolation.
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/envelope"
	"github.com/ctxkit/ctxkit/internal/apiclient"
)

// Call is one request to the ctxkit HTTP API.
type Call struct {
	Method string
	Path   string // escaped path, such as /breadcrumbs/ID
	Query  url.Values
	Body   []byte      // JSON; nil for none
	Header http.Header // extra request headers (If-Match)
}

// API performs calls. auth is the header of the MCP request that carried
// the tool call (nil over stdio): an in-process API takes the caller's
// Authorization from it; a remote one uses its own token.
type API interface {
	Do(ctx context.Context, c Call, auth http.Header) (status int, body []byte, err error)
}

// Options configure the MCP server.
type Options struct {
	Version string // reported to clients; default "dev"
}

// Error codes of tool results that do not come from the API.
const (
	CodeInvalidArguments = "invalid_arguments"
	CodeUnavailable      = "unavailable"
)

// New returns an MCP server with ctxkit's tools.
func New(api API, opts Options) *mcp.Server {
	if opts.Version == "" {
		opts.Version = "dev"
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "ctxkit", Version: opts.Version}, nil)
	for _, t := range tools {
		s.AddTool(&mcp.Tool{
			Name: t.name, Description: t.description,
			InputSchema: json.RawMessage(t.input), OutputSchema: json.RawMessage(outputSchema),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: t.readOnly},
		}, handler(api, t))
	}
	return s
}

// tool is one tool: its schema and how it becomes an API call.
type tool struct {
	name, description string
	input             string
	readOnly          bool
	args              func() any                   // a pointer to the arguments struct
	call              func(args any) (Call, error) // validated arguments to a call
	wrap              func(body []byte) ([]byte, error)
}

func handler(api API, t tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := t.args()
		raw := req.Params.Arguments
		if len(raw) == 0 || string(raw) == "null" {
			raw = json.RawMessage(`{}`)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(args); err != nil {
			return result(errorEnvelope(CodeInvalidArguments, t.name+": "+argError(err))), nil
		}
		c, err := t.call(args)
		if err != nil {
			return result(errorEnvelope(CodeInvalidArguments, t.name+": "+err.Error())), nil
		}
		var auth http.Header
		if req.Extra != nil {
			auth = req.Extra.Header
		}
		status, body, err := api.Do(ctx, c, auth)
		if err != nil {
			return result(errorEnvelope(CodeUnavailable, "ctxkit API: "+err.Error())), nil
		}
		if status >= 300 {
			var e struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if json.Unmarshal(body, &e) != nil || e.Error.Code == "" {
				e.Error.Code, e.Error.Message = "http_"+strconv.Itoa(status), strings.TrimSpace(string(body))
			}
			return result(errorEnvelope(e.Error.Code, e.Error.Message)), nil
		}
		env, err := t.wrap(body)
		if err != nil {
			return result(errorEnvelope("bad_reply", "the ctxkit API's reply: "+err.Error())), nil
		}
		return result(env), nil
	}
}

func argError(err error) string {
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return "unknown argument " + f
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("argument %s: must be %s, not %s", te.Field, te.Type, te.Value)
	}
	return "arguments: " + strings.TrimPrefix(msg, "json: ")
}

func errorEnvelope(code, msg string) []byte {
	data, _ := json.Marshal(envelope.Error[json.RawMessage](code, msg))
	return data
}

// result turns an envelope into a tool result.
func result(env []byte) *mcp.CallToolResult {
	var meta struct {
		Meta struct {
			Status envelope.Status `json:"status"`
		} `json:"meta"`
	}
	json.Unmarshal(env, &meta)
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(env)}},
		StructuredContent: json.RawMessage(env),
		IsError:           meta.Meta.Status == envelope.StatusError,
	}
}

// passThrough is for replies that are envelopes already.
func passThrough(body []byte) ([]byte, error) {
	var r envelope.Result[json.RawMessage]
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(r)
}

// one wraps a single JSON object reply as an OK envelope of one item.
func one(source envelope.Source) func([]byte) ([]byte, error) {
	return func(body []byte) ([]byte, error) {
		if !json.Valid(body) {
			return nil, errors.New("not JSON")
		}
		return json.Marshal(envelope.OK([]json.RawMessage{bytes.TrimSpace(body)}, envelope.WithSource(source)))
	}
}

// Remote is an API on a ctxkit server at a URL, called with a token.
type Remote struct {
	BaseURL string
	Token   string
	Client  *http.Client // default: a client with a one-minute timeout
}

// Do implements API.
func (r *Remote) Do(ctx context.Context, c Call, _ http.Header) (int, []byte, error) {
	client := apiclient.Client{BaseURL: r.BaseURL, Token: r.Token, HTTP: r.Client}
	resp, err := client.Do(ctx, apiclient.Request{Method: c.Method, Path: c.Path, Query: c.Query, Body: c.Body, Header: c.Header}, maxReplyBytes)
	return resp.Status, resp.Body, err
}

// maxReplyBytes bounds a reply of a remote server that a tool result relays.
const maxReplyBytes = 16 << 20
