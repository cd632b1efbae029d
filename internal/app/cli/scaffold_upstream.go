package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/upstream"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/openai"
)

// The exchange of `ctxkit scaffold` with the model's server: the model
// list, the streamed request for the plan, the reply read within bounds.

// modelServer is the OpenAI-compatible server scaffold asks.
type modelServer struct {
	row    wire.Provider // OpenAI Chat Completions' row of the provider table
	base   string
	key    string
	text   *upstreamText
	client *upstream.Client
}

// newModelServer is a client of the server at base: no redirect is
// followed (the key would go to another place) and a proxy from the
// environment is used only for https, where the proxy tunnels the
// connection and sees no header (internal/upstream).
func newModelServer(base, key string, text *upstreamText) *modelServer {
	return &modelServer{row: openai.Provider(), base: base, key: key, text: text, client: upstream.New(upstream.Options{
		HTTP2:        true,
		MaxErrorBody: maxErrorBodySize,
		Redirect: func(to *url.URL) error {
			return fmt.Errorf("the upstream redirected to %s: ctxkit follows no redirect, so that the API key goes nowhere else; give the final URL in --upstream", to.Redacted())
		},
	})}
}

func (u *modelServer) do(ctx context.Context, method, path string, body []byte, accept string) (*upstream.Response, error) {
	h := make(http.Header, 3)
	h.Set("Accept", accept)
	h.Set("User-Agent", "ctxkit-scaffold")
	if u.key != "" {
		h.Set("Authorization", "Bearer "+u.key)
	}
	resp, err := u.client.Do(ctx, upstream.Request{Method: method, URL: u.base + path, Header: h, Body: body, Redact: u.text.redact})
	var ue *upstream.Error
	switch {
	case err == nil:
		return resp, nil
	case !errors.As(err, &ue):
		return nil, err
	case ue.Code == upstream.CodeTransport:
		cause := ue.Err
		if ctx.Err() != nil {
			cause = ctx.Err()
		}
		if errors.Is(cause, context.DeadlineExceeded) {
			return nil, coded(codeUpstream, "%s %s: no answer within --timeout", method, u.base+path)
		}
		// A redirect's error names the Location the upstream sent.
		return nil, coded(codeUpstream, "%s %s: %s", method, u.base+path, u.text.clean(cause.Error()))
	default:
		msg := errorMessage(ue.Body, u.text)
		hint := ""
		switch ue.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			hint = ": check the API key in the variable --api-key-env names"
		case http.StatusNotFound:
			hint = ": is --upstream the API's base URL (ending in /v1)?"
		}
		return nil, coded(codeUpstream, "%s %s: the upstream answered %s%s%s", method, u.base+path, ue.Status, msg, hint)
	}
}

// errorMessage is the message of an error response: the OpenAI-shaped
// {"error":{"message"}}, a string error, or the start of the body,
// cleaned before it is cut (a key cut in two would not be redacted).
func errorMessage(body []byte, text *upstreamText) string {
	var shaped struct {
		Error json.RawMessage `json:"error"`
	}
	msg := ""
	if json.Unmarshal(body, &shaped) == nil && len(shaped.Error) > 0 {
		var obj struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(shaped.Error, &obj) == nil && obj.Message != "" {
			msg = obj.Message
		} else {
			_ = json.Unmarshal(shaped.Error, &msg)
		}
	}
	if msg == "" && utf8.Valid(body) {
		msg = string(body)
	}
	msg = oneLine(text.clean(msg))
	if len(msg) > 300 {
		cut := 300
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	if msg == "" {
		return ""
	}
	return " (" + msg + ")"
}

// models is the ids GET {base}/models lists.
func (u *modelServer) models(ctx context.Context) ([]string, error) {
	resp, err := u.do(ctx, http.MethodGet, "/models", nil, "application/json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(&resp.Body, maxModelsBytes+1))
	if err != nil {
		return nil, coded(codeUpstream, "GET %s/models: %v", u.base, err)
	}
	if len(body) > maxModelsBytes {
		return nil, coded(codeUpstream, "GET %s/models: the list is more than %d bytes", u.base, maxModelsBytes)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, coded(codeUpstream, "GET %s/models: not an OpenAI model list: %v", u.base, err)
	}
	ids := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	return ids, nil
}

// ask checks the model is listed, asks it for the plan and returns the
// reply's text and why it stopped.
func (s *scaffolder) ask(ctx context.Context, u *modelServer) (string, chat.StopReason, error) {
	ctx, cancel := context.WithTimeout(ctx, s.f.timeout)
	defer cancel()
	ids, err := u.models(ctx)
	if err != nil {
		return "", "", err
	}
	listed := false
	for _, id := range ids {
		listed = listed || id == s.f.model
	}
	if !listed {
		avail := "none"
		if len(ids) > 0 {
			const show = 50
			avail = u.text.clean(strings.Join(ids[:min(len(ids), show)], ", "))
			if len(ids) > show {
				avail += fmt.Sprintf(" and %d more", len(ids)-show)
			}
		}
		return "", "", coded(codeModelNotFound, "the upstream %s does not list the model %q; it lists: %s", s.base, s.f.model, avail)
	}
	wreq, _, warns, err := u.row.Encode(s.prompt(), nil, nil)
	if err != nil {
		return "", "", err
	}
	for _, w := range warns {
		s.progress("%s", w)
	}
	body, err := json.Marshal(wreq)
	if err != nil {
		return "", "", err
	}
	s.progress("asking %s at %s (a prompt of %d bytes; context files: %d)", s.f.model, s.base, len(body), len(s.files))
	resp, err := u.do(ctx, http.MethodPost, u.row.Upstream.Path(s.f.model), body, "text/event-stream")
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	r := &cappedReader{r: &resp.Body, n: maxStreamBytes}
	var chunks iter.Seq2[chat.Chunk, error]
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		// The upstream did not stream: one completion object.
		chunks = completionChunks(r)
	} else {
		chunks = u.row.Upstream.Decode(r)
	}
	// The echo goes to the operator's terminal: no control sequence of
	// the upstream's, no key.
	echo := newCleanWriter(s.e.stderr, s.text)
	res, err := chat.Collect(func(yield func(chat.Chunk, error) bool) {
		for c, err := range chunks {
			if err == nil && c.Type == chat.ChunkText && c.Text != "" && !s.f.quiet {
				io.WriteString(echo, c.Text)
			}
			if !yield(c, err) {
				return
			}
		}
	})
	echo.Flush()
	if echo.last != 0 && echo.last != '\n' {
		io.WriteString(s.e.stderr, "\n")
	}
	if err != nil {
		if ctx.Err() != nil {
			return "", "", coded(codeUpstream, "reading the reply: no complete answer within --timeout")
		}
		return "", "", coded(codeUpstream, "reading the reply: %s", s.text.clean(err.Error()))
	}
	if res.Error != nil {
		return "", "", coded(codeUpstream, "the upstream reported an error in the reply: %s", s.text.clean(res.Error.Error()))
	}
	var text strings.Builder
	for _, b := range res.Content {
		if b.Type == chat.TypeText {
			text.WriteString(b.Text)
		}
	}
	return text.String(), res.Stop.Reason, nil
}

// completionChunks reads a non-streamed chat completion as a chunk
// stream: its message's text, then its stop.
func completionChunks(r io.Reader) iter.Seq2[chat.Chunk, error] {
	return func(yield func(chat.Chunk, error) bool) {
		var c struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(r).Decode(&c); err != nil {
			yield(chat.Chunk{}, fmt.Errorf("the completion is not JSON: %w", err))
			return
		}
		if len(c.Choices) == 0 {
			yield(chat.Chunk{}, errors.New("the completion has no choices"))
			return
		}
		ch := c.Choices[0]
		if yield(chat.Chunk{Type: chat.ChunkText, Text: ch.Message.Content}, nil) && ch.FinishReason != "" {
			yield(chat.Chunk{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: openai.StopReason(ch.FinishReason), Raw: ch.FinishReason}}, nil)
		}
	}
}

// cappedReader reads at most n bytes of r and fails, rather than ending,
// when r holds more.
type cappedReader struct {
	r io.Reader
	n int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.n <= 0 {
		var one [1]byte
		if n, err := c.r.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("the reply is more than %d bytes", maxStreamBytes)
		} else if err != nil {
			return 0, err
		}
		return 0, nil
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	n, err := c.r.Read(p)
	c.n -= int64(n)
	return n, err
}
