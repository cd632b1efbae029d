package server_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/app/server"
)

func TestZZProbe4(t *testing.T) {
	var mode string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		switch mode {
		case "cut":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n")
		case "errev":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"},\"finish_reason\":null}]}\n\ndata: {\"error\":{\"message\":\"bad key sk-upstream here\",\"type\":\"server_error\"}}\n\n")
		case "200err":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"error":{"message":"key sk-upstream refused","type":"invalid_request_error"}}`)
		case "html":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `<html>hi sk-upstream</html>`)
		case "500":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(500)
			io.WriteString(w, `{"error":{"message":"key sk-upstream boom","type":"server_error"}}`)
		case "toolcut":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\"}}]},\"finish_reason\":null}]}\n\n")
		}
	}))
	t.Cleanup(up.Close)
	t.Setenv("CTXKIT_TEST_UPSTREAM_KEY", "sk-upstream")
	cfgPath := filepath.Join(t.TempDir(), "gateway.yaml")
	os.WriteFile(cfgPath, []byte("providers:\n  - name: up\n    type: openai\n    base_url: "+up.URL+"/v1\n    api_key_env: CTXKIT_TEST_UPSTREAM_KEY\n    models: [gpt-x]\n"), 0o600)
	cfg, _ := gateway.LoadConfig(cfgPath)
	e := newEnv(t, func(o *server.Options) { o.Gateway = gateway.New(cfg, gateway.Options{}) })
	alice := e.token("acme", "alice", "emitter")
	reqs := map[string][2]string{
		"chat":     {"/v1/chat/completions", `{"model":"gpt-x","messages":[{"role":"user","content":"q"}]`},
		"msgs":     {"/v1/messages", `{"model":"gpt-x","max_tokens":10,"messages":[{"role":"user","content":"q"}]`},
		"resp":     {"/v1/responses", `{"model":"gpt-x","input":"q"`},
		"gemini":   {"/v1beta/models/gpt-x:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]`},
		"geminiNS": {"/v1beta/models/gpt-x:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]`},
	}
	for _, m := range []string{"cut", "errev", "200err", "html", "500", "toolcut"} {
		mode = m
		for _, name := range []string{"chat", "msgs", "resp", "gemini", "geminiNS"} {
			for _, st := range []string{"", `,"stream":true`} {
				if (name == "gemini" || name == "geminiNS") && st != "" {
					continue
				}
				rq := reqs[name]
				r := e.do("POST", rq[0], alice, rq[1]+st+"}")
				fmt.Printf("== %s %s %s: %d\n%s\n", m, name, st, r.status, r.body)
			}
		}
	}
}
