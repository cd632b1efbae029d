package wiretest

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
)

// encoderOf is the Encoder of a provider table row (with no cache state).
func encoderOf(p wire.Provider) Encoder {
	return func(req chat.Request, options json.RawMessage) (any, []chat.Warning, error) {
		out, _, warns, err := p.Encode(req, options, nil)
		return out, warns, err
	}
}

// RunProvider checks a row of the provider table: its encoder passes Run,
// refuses an unknown option with a wire.CodeOptions error and takes each
// of its caching strategies as an option; a stateful row returns state
// and reads it back. A row with an upstream side has a path that escapes
// the model, headers that carry the key and say what is accepted, and an
// error parser that keeps the status and Retry-After, finds no message
// in a page that is not the provider's JSON, and calls 429 and 5xx
// retryable. Its stream decoder is checked on its package's fixtures
// (RunStreamFixtures).
func RunProvider(t *testing.T, p wire.Provider) {
	t.Helper()
	if p.Name == "" || p.Encode == nil {
		t.Fatalf("row %q: a name and an encoder are required", p.Name)
	}
	enc := encoderOf(p)
	t.Run("conformance", func(t *testing.T) { Run(t, enc) })
	req, err := chat.DecodeRequest([]byte(corpus()[0].json))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("options", func(t *testing.T) {
		_, _, err := enc(req, json.RawMessage(`{"no_such_option":1}`))
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != wire.CodeOptions {
			t.Errorf("an unknown option gave %v, want a %s *wire.Error", err, wire.CodeOptions)
		}
		for _, c := range p.Caches {
			opts, _ := json.Marshal(map[string]string{"cache": c})
			if _, _, err := enc(req, opts); errors.As(err, &we) && we.Code == wire.CodeOptions {
				t.Errorf("cache %q is not an option the encoder takes: %v", c, err)
			}
		}
	})
	t.Run("state", func(t *testing.T) {
		_, state, _, err := p.Encode(req, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case p.Stateful && state == nil:
			t.Errorf("a stateful row returned no state")
		case !p.Stateful && state != nil:
			t.Errorf("a stateless row returned state %s", state)
		case p.Stateful:
			if _, _, _, err := p.Encode(req, nil, state); err != nil {
				t.Errorf("its own state is refused: %v", err)
			}
		}
	})
	up := p.Upstream
	if up == nil {
		return
	}
	t.Run("upstream", func(t *testing.T) {
		if up.Path == nil || up.SetHeader == nil || up.Decode == nil || up.ParseError == nil || up.RateLimit == nil {
			t.Fatalf("an upstream side needs Path, SetHeader, Decode, ParseError and RateLimit")
		}
		if path := up.Path("org/model x"); !strings.HasPrefix(path, "/") || strings.Contains(path, "org/model x") {
			t.Errorf("Path: %q, want an absolute path with the model escaped", path)
		}
		h := http.Header{}
		up.SetHeader(h, "test-key-0123456789")
		carried := false
		for _, vs := range h {
			for _, v := range vs {
				carried = carried || strings.Contains(v, "test-key-0123456789")
			}
		}
		if !carried || h.Get("Accept") == "" {
			t.Errorf("SetHeader: %v, want the key in a header and an Accept", h)
		}
		e := up.ParseError(http.StatusTooManyRequests, http.Header{"Retry-After": {"7"}}, []byte("<html>slow down</html>"))
		if e.Status != http.StatusTooManyRequests || e.Message != "" || !e.Retryable || e.RetryAfter != "7" {
			t.Errorf("ParseError of a 429 page: %+v", e)
		}
		if e := up.ParseError(http.StatusBadGateway, http.Header{}, nil); !e.Retryable || e.Message != "" {
			t.Errorf("ParseError of an empty 502: %+v", e)
		}
		if up.RateLimit("") {
			t.Errorf("RateLimit: an empty type is not a rate limit")
		}
	})
}
