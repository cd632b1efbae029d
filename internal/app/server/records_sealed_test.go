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
	const config = `"generationConfig":{"maxOutputTokens":2048,"thinkingConfig":{"includeThoughts":true,"thinkingBudget":1024}}`
	envelope := regexp.MustCompile(`Y3R4awF[A-Za-z0-9+/=_-]+`)
	// A whole answer and a streamed one, each followed by the next
	// turn, whose request hands the thought and its envelope back.
	for _, path := range []string{"/v1beta/models/claude-x:generateContent", "/v1beta/models/claude-x:streamGenerateContent?alt=sse"} {
		r := e.do("POST", path, tok, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],`+config+`}`, "x-goog-api-key", tok)
		sig := envelope.FindString(string(r.body))
		if r.status != 200 || sig == "" {
			t.Fatalf("%s: want an answer with a sealed signature: %d %s", path, r.status, r.body)
		}
		if s, ok := wire.OpenSignature(sig); !ok || !strings.Contains(s.Thinking, promptSecret) {
			t.Fatalf("%s: the client's envelope does not carry the thinking: %s", path, r.body)
		}
		next := `{"contents":[{"role":"user","parts":[{"text":"hi"}]},` +
			`{"role":"model","parts":[{"text":"The tool showed the key ` + promptSecret + `.","thought":true,"thoughtSignature":"` + sig + `"},{"text":"ok"}]},` +
			`{"role":"user","parts":[{"text":"and?"}]}],` + config + `}`
		if r := e.do("POST", path, tok, next, "x-goog-api-key", tok); r.status != 200 {
			t.Fatalf("%s: the next turn: %d %s", path, r.status, r.body)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := api.DrainRecords(ctx); err != nil {
		t.Fatal(err)
	}
	list := e.do("GET", "/breadcrumbs?schema_name="+server.ExchangeSchema, tok, nil)
	ids := map[string]bool{}
	for _, m := range regexp.MustCompile(`"id":"([^"]+)"`).FindAllStringSubmatch(string(list.body), -1) {
		ids[m[1]] = true
	}
	if len(ids) != 4 {
		t.Fatalf("want 4 records: %s", list.body)
	}
	for id := range ids {
		full := e.do("GET", "/breadcrumbs/"+id+"/full", tok, nil)
		if strings.Contains(string(full.body), promptSecret) {
			t.Fatalf("the secret is in the record as text: %s", full.body)
		}
		sealed := 0
		for _, m := range envelope.FindAllString(string(full.body), -1) {
			s, ok := wire.OpenSignature(m)
			if !ok {
				continue
			}
			sealed++
			if strings.Contains(s.Thinking, promptSecret) {
				t.Errorf("the record keeps the secret inside a sealed signature (thinking %q)", s.Thinking)
			}
			if s.Signature != "EqQBCkgIsig" || !strings.Contains(s.Thinking, "[REDACTED:") {
				t.Errorf("the envelope is not the one sealed again with the thinking redacted: %+v", s)
			}
		}
		if sealed == 0 {
			t.Errorf("the record keeps no envelope: %s", full.body)
		}
	}
	// Search finds the records by what they said, and not by the
	// secret.
	if r := e.do("GET", "/breadcrumbs/search?q=gateway", tok, nil); r.status != 200 || !strings.Contains(string(r.body), `"id"`) {
		t.Errorf("search for the records: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/breadcrumbs/search?q="+promptSecret, tok, nil); r.status != 200 || strings.Contains(string(r.body), `"id"`) {
		t.Errorf("search by the secret: %d %s", r.status, r.body)
	}
}
