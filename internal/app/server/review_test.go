package server_test

import (
	"strings"
	"testing"
)

// TestChatToolStrictCarried: a Chat Completions client's strict: true on
// a function tool asks the upstream for schema adherence; an OpenAI
// upstream is sent it, not a request without it.
func TestChatToolStrictCarried(t *testing.T) {
	e, bodies := responsesEnv(t)
	alice := e.token("acme", "alice", "emitter")
	r := e.do("POST", "/v1/chat/completions", alice, `{"model":"gpt-x","messages":[{"role":"user","content":"q"}],`+
		`"tools":[{"type":"function","function":{"name":"f","strict":true,"parameters":{"type":"object","properties":{},"additionalProperties":false}}}]}`)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	sent := bodies()
	if last := sent[len(sent)-1]; !strings.Contains(last, `"strict":true`) {
		t.Fatalf("the upstream was not sent the tool's strict: %s", last)
	}
	// From the Responses dialect too (it kept strict, then warned it away).
	r = e.do("POST", "/v1/responses", alice, `{"model":"gpt-x","input":"q","store":false,`+
		`"tools":[{"type":"function","name":"f","strict":true,"parameters":{"type":"object","properties":{},"additionalProperties":false}}]}`)
	if r.status != 200 || r.header.Get("X-Ctxkit-Warnings") != "" {
		t.Fatalf("%d %q %s", r.status, r.header.Get("X-Ctxkit-Warnings"), r.body)
	}
	sent = bodies()
	if last := sent[len(sent)-1]; !strings.Contains(last, `"strict":true`) {
		t.Fatalf("the upstream was not sent the tool's strict: %s", last)
	}
}
