package server_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/wire"
)

// anthropicThinking is an Anthropic stream whose thinking holds a
// secret, as a model's thinking holds what a tool result showed it.
const anthropicThinking = "event: message_start\n" +
	`data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":0}}}` + "\n\n" +
	"event: content_block_start\n" +
	`data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The tool showed the key ` + promptSecret + `."}}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCkgIsig"}}` + "\n\n" +
	"event: content_block_stop\n" +
	`data: {"type":"content_block_stop","index":0}` + "\n\n" +
	"event: content_block_start\n" +
	`data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"ok"}}` + "\n\n" +
	"event: content_block_stop\n" +
	`data: {"type":"content_block_stop","index":1}` + "\n\n" +
	"event: message_delta\n" +
	`data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}` + "\n\n" +
	"event: message_stop\n" +
	`data: {"type":"message_stop"}` + "\n\n"

// TestRecordsRedactSealedThinking: a Gemini client of a recorded route to
// an Anthropic upstream. The thinking text, a secret in it, is in the
// answer twice: as the thought part, and inside the sealed
// thoughtSignature (base64 of the signature and the thinking). The
// record redacts both: the envelope is sealed again with the thinking
// redacted.
func TestRecordsRedactSealedThinking(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, anthropicThinking)
	}))
	t.Cleanup(up.Close)
	t.Setenv("CTXKIT_TEST_UPSTREAM_KEY", "sk-upstream")
	cfg := `{"providers":[{"name":"up","type":"anthropic","base_url":"` + up.URL + `","api_key_env":"CTXKIT_TEST_UPSTREAM_KEY","models":["claude-plain"]}],` +
		`"routes":[{"model":"claude-x","targets":[{"provider":"up","model":"claude-x"}],"record":true}]}`
	path := filepath.Join(t.TempDir(), "gateway.json")
	os.WriteFile(path, []byte(cfg), 0o600)
	gc, err := gateway.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	db := newStore(t)
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	api := server.New(server.Options{Store: db, Key: key, MaxBodyBytes: 64 << 10, Gateway: gateway.New(gc, gateway.Options{})})
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		api.DrainRecords(ctx)
		db.Close()
	})
	e := &env{t: t, url: srv.URL, key: key}
	tok := e.token("acme", "alice", "emitter")
	r := e.do("POST", "/v1beta/models/claude-x:generateContent", tok,
		`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":2048,"thinkingConfig":{"includeThoughts":true,"thinkingBudget":1024}}}`,
		"x-goog-api-key", tok)
	if r.status != 200 || !strings.Contains(string(r.body), "Y3R4awFh") {
		t.Fatalf("want an answer with a sealed signature: %d %s", r.status, r.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := api.DrainRecords(ctx); err != nil {
		t.Fatal(err)
	}
	list := e.do("GET", "/breadcrumbs?schema_name="+server.ExchangeSchema, tok, nil)
	ids := regexp.MustCompile(`"id":"([^"]+)"`).FindAllStringSubmatch(string(list.body), -1)
	if len(ids) == 0 {
		t.Fatalf("no record: %s", list.body)
	}
	full := e.do("GET", "/breadcrumbs/"+ids[0][1]+"/full", tok, nil)
	if strings.Contains(string(full.body), promptSecret) {
		t.Fatalf("the secret is in the record as text: %s", full.body)
	}
	for _, m := range regexp.MustCompile(`Y3R4awF[A-Za-z0-9+/=]+`).FindAllString(string(full.body), -1) {
		if s, ok := wire.OpenSignature(m); ok && strings.Contains(s.Thinking, promptSecret) {
			t.Errorf("the record keeps the secret inside a sealed signature (thinking %q)", s.Thinking)
		}
	}
}
