package sdktest_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/sdktest/fakeup"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

// upstream is one provider type of the gateway's configuration, a model
// routed to it for chat and one for embeddings ("" none).
type upstream struct {
	typ, model, embed string
}

// upstreams are the provider types, each behind its fake.
var upstreams = []upstream{
	{"openai", "gpt-5-mini", "text-embedding-3-small"},
	{"anthropic", "claude-sonnet-4-5", ""},
	{"gemini", "gemini-2.5-flash", "gemini-embedding-001"},
	{"bedrock", "amazon.nova-pro-v1:0", "amazon.titan-embed-text-v2:0"},
	{"mistral", "mistral-large-latest", "mistral-embed"},
	{"deepseek", "deepseek-chat", ""},
}

// Models of particular behaviour.
const (
	gemini3   = "gemini-3-pro-preview" // signs function calls, checks signatures
	reasoner  = "deepseek-reasoner"
	cohere    = "cohere.embed-english-v3"
	viaOpenAI = "gpt-5-responses" // a model of an openai upstream called through /v1/responses
)

// env is ctxkit's server with a gateway in front of one fake per
// upstream type, on loopback.
type env struct {
	t     testing.TB
	url   string // the server, without a trailing slash
	token string // a valid ctxkit token
	fakes map[string]*fakeup.Fake
}

// newEnv starts the fakes and ctxkit. responsesAPI adds an openai-type
// provider called through the Responses API (api: responses).
func newEnv(t testing.TB, responsesAPI bool) *env {
	t.Helper()
	e := &env{t: t, fakes: map[string]*fakeup.Fake{}}
	news := map[string]func(string) *fakeup.Fake{
		"openai": fakeup.NewOpenAI, "anthropic": fakeup.NewAnthropic, "gemini": fakeup.NewGemini,
		"bedrock": fakeup.NewBedrock, "mistral": fakeup.NewMistral, "deepseek": fakeup.NewDeepSeek,
	}
	var cfg strings.Builder
	cfg.WriteString("providers:\n")
	provider := func(name, typ, base, keyVar string, models []string, extra string) {
		fmt.Fprintf(&cfg, "  - name: %s\n    type: %s\n    base_url: %s\n    api_key_env: %s\n    models: [%s]\n%s",
			name, typ, base, keyVar, strings.Join(models, ", "), extra)
	}
	for _, u := range upstreams {
		key := "sk-fake-" + u.typ
		f := news[u.typ](key)
		srv := httptest.NewServer(f)
		t.Cleanup(srv.Close)
		e.fakes[u.typ] = f
		base := srv.URL
		if u.typ == "openai" || u.typ == "mistral" {
			base += "/v1"
		}
		keyVar := "CTXKIT_SDKTEST_KEY_" + strings.ToUpper(u.typ)
		t.Setenv(keyVar, key)
		models := []string{quote(u.model)}
		if u.embed != "" {
			models = append(models, quote(u.embed))
		}
		switch u.typ {
		case "gemini":
			models = append(models, quote(gemini3))
		case "deepseek":
			models = append(models, quote(reasoner))
		case "bedrock":
			models = append(models, quote(cohere))
		}
		provider(u.typ, u.typ, base, keyVar, models, "")
		if u.typ == "openai" && responsesAPI {
			provider("openai-responses", "openai", base, keyVar, []string{quote(viaOpenAI)}, "    api: responses\n")
		}
	}
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	gc, err := gateway.LoadConfig(path)
	if err != nil {
		t.Fatalf("gateway configuration: %v\n%s", err, cfg.String())
	}
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ctxkit.db"))
	if err != nil {
		t.Fatal(err)
	}
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	api := server.New(server.Options{Store: db, Key: key, Gateway: gateway.New(gc, gateway.Options{})})
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(func() { api.StopStreams(); srv.Close(); db.Close() })
	tok, err := server.Mint(key, server.Principal{OwnerID: "acme", AgentID: "sdk", Roles: []string{"subscriber"}}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	e.url, e.token = srv.URL, tok
	return e
}

func quote(s string) string { return `"` + s + `"` }

// fake is the fake of an upstream type.
func (e *env) fake(typ string) *fakeup.Fake { return e.fakes[typ] }

// ctx is a context that ends with the test, at most 20 s on.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

// headerWith reports whether a header's name or value contains part
// (case-insensitive).
func headerWith(h http.Header, part string) bool {
	part = strings.ToLower(part)
	for k, vs := range h {
		if strings.Contains(strings.ToLower(k), part) {
			return true
		}
		for _, v := range vs {
			if strings.Contains(strings.ToLower(v), part) {
				return true
			}
		}
	}
	return false
}
