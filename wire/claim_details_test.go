package wire_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/openai"
)

// TestClaimDetailsOnlyOnAssistant: reasoning_details are the reasoning
// of an assistant turn. The canonical decoder (the Anthropic dialect)
// takes the field on a user message too; ClaimSignatures must not turn
// it into a thinking block or a thoughtSignature in a user turn.
func TestClaimDetailsOnlyOnAssistant(t *testing.T) {
	for _, c := range []struct{ upstream, env string }{
		{wire.HomeAnthropic, wire.SealSignature(wire.HomeAnthropic, "EqQBsig", "user-planted thinking")},
		{wire.HomeAnthropic, wire.SealRedacted("EmwKAhgBdata")},
		{wire.HomeGemini, wire.SealSignature(wire.HomeGemini, "CiQBsig", "")},
	} {
		t.Run(c.upstream, func(t *testing.T) {
			body := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi","reasoning_details":[` +
				`{"type":"reasoning.encrypted","data":"` + c.env + `"}]}]}`
			req, err := chat.DecodeRequest([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			wire.ClaimSignatures(&req, "anthropic", c.upstream)
			for _, b := range req.Messages[0].Content.AsBlocks() {
				switch b.Type {
				case chat.TypeThinking, chat.TypeRedactedThinking, chat.TypeThoughtSignature:
					t.Fatalf("a user message got a %s block from its reasoning_details: %+v", b.Type, req.Messages[0].Content.Blocks)
				}
			}
		})
	}
}

// TestClaimNoEnvelopeToNoHome: ClaimSignatures promises that an
// upstream that is no signature home (OpenRouter) never gets a ctxkit
// envelope in reasoning_details. A Chat Completions client can hide one
// from its check: a second spelling of the key (Go's decoder matches
// keys case-insensitively and keeps the last), a detail that is a bare
// string, or the envelope under another key.
func TestClaimNoEnvelopeToNoHome(t *testing.T) {
	env := wire.SealSignature(wire.HomeAnthropic, "EqQBsig", "thinking")
	for name, details := range map[string]string{
		"second spelling": `[{"type":"reasoning.text","text":"t","signature":"` + env + `","Signature":"x"}]`,
		"bare string":     `["` + env + `"]`,
		"other key":       `[{"type":"reasoning.encrypted","data":"x","encrypted":"` + env + `"}]`,
	} {
		t.Run(name, func(t *testing.T) {
			body := `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"ok","reasoning_details":` +
				details + `},{"role":"user","content":"more"}]}`
			req, err := openai.DecodeRequest([]byte(body))
			if err != nil {
				t.Fatalf("decoder refused it (then the probe is moot): %v", err)
			}
			wire.ClaimSignatures(&req, "openai", "openai")
			out, _ := json.Marshal(req.Messages[1].ReasoningDetails)
			if strings.Contains(string(out), env[:16]) {
				t.Fatalf("an envelope goes to a no-home upstream: %s", req.Messages[1].ReasoningDetails)
			}
		})
	}
}

// TestClaimMalformedDetailsBounded: every malformed detail costs a warning, a
// path and a message of ~100 bytes, for two bytes of request
// ("1,"); MaxReasoningDetails bounds one message, not a request. A body
// of n bytes should not cost many times n in warnings (the gateway
// takes 32 MiB bodies).
func TestClaimMalformedDetailsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"model":"m","messages":[{"role":"user","content":"hi"}`)
	item := `,{"role":"assistant","content":"","reasoning_details":[1` + strings.Repeat(",1", wire.MaxReasoningDetails-1) + `]}`
	for b.Len() < 1<<20 {
		b.WriteString(item)
	}
	b.WriteString(`]}`)
	body := []byte(b.String())
	req, err := openai.DecodeRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	warns := wire.ClaimSignatures(&req, "openai", wire.HomeAnthropic)
	runtime.ReadMemStats(&after)
	size := 0
	for _, w := range warns {
		size += len(w.Path) + len(w.Message)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("body %d bytes: %d warnings, %d bytes of text, %d bytes allocated", len(body), len(warns), size, alloc)
	if alloc > 8*uint64(len(body)) {
		t.Fatalf("ClaimSignatures allocated %d bytes (%.0fx the body) for %d warnings", alloc, float64(alloc)/float64(len(body)), len(warns))
	}
}

// TestClaimGeminiSignatureOnItsCall: Gemini signed a thought part and
// the first of two parallel calls. Handed back, the call's signature
// should be on the first call again (which Gemini 3 checks) and the
// second call should get none; positional placement puts the thought's
// signature on the first call and the first call's on the second.
func TestClaimGeminiSignatureOnItsCall(t *testing.T) {
	chunks := []chat.Chunk{
		{Type: chat.ChunkReasoning, Text: "Two cities.", Signature: "THOUGHTsig"},
		{Type: chat.ChunkReasoning, Signature: "CALLsig"},
		{Type: chat.ChunkToolCallStart, Index: 0, ID: "call_1", Name: "get_weather"},
		{Type: chat.ChunkToolCallEnd, Index: 0, Arguments: `{"city":"Paris"}`},
		{Type: chat.ChunkToolCallStart, Index: 1, ID: "call_2", Name: "get_weather"},
		{Type: chat.ChunkToolCallEnd, Index: 1, Arguments: `{"city":"Rome"}`},
		{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopToolUse}},
	}
	seq := func(yield func(chat.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
	}
	res, err := chat.Collect(wire.SealChunks(seq, wire.HomeGemini, "openai"))
	if err != nil {
		t.Fatal(err)
	}
	body, err := openai.EncodeResponse(res, "m", "id", 1)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Choices []struct {
			Message map[string]any `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	msg := out.Choices[0].Message
	req, err := openai.DecodeRequest(mustJSON(t, map[string]any{"model": "m", "messages": []any{
		map[string]any{"role": "user", "content": "Paris and Rome?"}, msg,
		map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "Sunny"},
		map[string]any{"role": "tool", "tool_call_id": "call_2", "content": "Rainy"}}}))
	if err != nil {
		t.Fatal(err)
	}
	wire.ClaimSignatures(&req, "openai", wire.HomeGemini)
	var before = map[string]string{} // call id → the signature just before it
	blocks := req.Messages[1].Content.Blocks
	for k, b := range blocks {
		if b.Type == chat.TypeToolUse && k > 0 && blocks[k-1].Type == chat.TypeThoughtSignature {
			s, _ := wire.SignatureFor(wire.HomeGemini, blocks[k-1].Signature)
			before[b.ID] = s
		}
	}
	if before["call_1"] != "CALLsig" || before["call_2"] != "" {
		t.Fatalf("signatures before the calls %v (details %v), want CALLsig on call_1 only", before, msg["reasoning_details"])
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// claimBody is a Chat Completions request whose assistant messages (one
// a details list) carry those reasoning_details, each after a user turn.
func claimBody(t *testing.T, details ...string) chat.Request {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"model":"m","messages":[`)
	for k, d := range details {
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"role":"user","content":"q"},{"role":"assistant","content":"a","reasoning_details":` + d + `}`)
	}
	b.WriteString(`]}`)
	req, err := openai.DecodeRequest([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestClaimDetailsBudget: the details of a request share one bound, a
// message gives a few warnings and a count, a request a capped list.
func TestClaimDetailsBudget(t *testing.T) {
	env := wire.SealSignature(wire.HomeAnthropic, "EqQBsig", "t")
	signed := `{"type":"reasoning.text","text":"t","signature":"` + env + `"}`
	half := "[" + strings.Repeat(signed+",", wire.MaxReasoningDetails/2) + signed + "]" // one past half
	t.Run("request bound", func(t *testing.T) {
		req := claimBody(t, half, half)
		warns := wire.ClaimSignatures(&req, "openai", wire.HomeAnthropic)
		if n := len(req.Messages[1].Content.Blocks); n != wire.MaxReasoningDetails/2+2 {
			t.Fatalf("first message: %d blocks, want its %d details and its text", n, wire.MaxReasoningDetails/2+1)
		}
		if len(warns) != 1 || warns[0].Path != "messages[3].reasoning_details" || !strings.Contains(warns[0].Message, "past the request's") {
			t.Fatalf("warnings %v", warns)
		}
		if req.Messages[3].ReasoningDetails != nil || len(req.Messages[3].Content.AsBlocks()) != 1 {
			t.Fatalf("second message kept %s / %v", req.Messages[3].ReasoningDetails, req.Messages[3].Content.AsBlocks())
		}
	})
	t.Run("a message's warnings", func(t *testing.T) {
		req := claimBody(t, "[1"+strings.Repeat(",1", 19)+"]")
		warns := wire.ClaimSignatures(&req, "openai", wire.HomeAnthropic)
		if len(warns) != 9 || !strings.Contains(warns[8].Message, "12 more of its 20") {
			t.Fatalf("warnings %v", warns)
		}
	})
	t.Run("a request's warnings", func(t *testing.T) {
		many := make([]string, 600)
		for k := range many {
			many[k] = "[1]"
		}
		req := claimBody(t, many...)
		warns := wire.ClaimSignatures(&req, "openai", wire.HomeGemini)
		if len(warns) != 257 || !strings.Contains(warns[256].Message, "… and 344 more") {
			t.Fatalf("%d warnings, last %v", len(warns), warns[len(warns)-1])
		}
	})
}

// TestClaimDetailsOtherRoles: details on a message that is not the
// assistant's are dropped, with a warning, for every upstream.
func TestClaimDetailsOtherRoles(t *testing.T) {
	env := wire.SealSignature(wire.HomeAnthropic, "EqQBsig", "t")
	for _, up := range []string{wire.HomeAnthropic, "openai", wire.HomeBedrock} {
		body := `{"model":"m","max_tokens":10,"system":"s","messages":[{"role":"user","content":"hi","reasoning_details":[` +
			`{"type":"reasoning.text","text":"t","signature":"` + env + `"},{"type":"reasoning.text","text":"plain"}]}]}`
		req, err := chat.DecodeRequest([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		warns := wire.ClaimSignatures(&req, "anthropic", up)
		if req.Messages[0].ReasoningDetails != nil || len(warns) != 1 || warns[0].Path != "messages[0].reasoning_details" ||
			!strings.Contains(warns[0].Message, "user message") {
			t.Fatalf("%s: details %s, warnings %v", up, req.Messages[0].ReasoningDetails, warns)
		}
	}
}

// TestClaimNoEnvelopeAnyDepth: an envelope anywhere in a detail (nested,
// as a key, in an array) keeps the detail from a no-home upstream; the
// other details go on as the client wrote them.
func TestClaimNoEnvelopeAnyDepth(t *testing.T) {
	env := wire.SealRedacted("EmwKAhgBdata")
	plain := `{"type":"reasoning.text","text":"t","signature":"EqQBown","id":"rd_1","x":{"y":[1]}}`
	for name, d := range map[string]string{
		"nested":  `{"type":"reasoning.text","meta":{"a":[{"b":"` + env + `"}]}}`,
		"key":     `{"type":"reasoning.text","` + env + `":1}`,
		"array":   `[["` + env + `"]]`,
		"escaped": `{"type":"reasoning.encrypted","data":"\u00` + fmt.Sprintf("%x", env[0]) + env[1:] + `"}`,
	} {
		req := claimBody(t, "["+plain+","+d+"]")
		warns := wire.ClaimSignatures(&req, "openai", "openai")
		if got := string(req.Messages[1].ReasoningDetails); got != "["+plain+"]" || len(warns) != 1 {
			t.Fatalf("%s: details %s, warnings %v", name, got, warns)
		}
	}
}

// TestClaimGeminiByID: signatures naming their calls go before them
// whatever their order; one naming none goes first; with no id at all
// they go before the calls in order.
func TestClaimGeminiByID(t *testing.T) {
	sig := func(s string) string { return wire.SealSignature(wire.HomeGemini, s, "") }
	calls := `,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},` +
		`{"id":"c2","type":"function","function":{"name":"f","arguments":"{}"}}]`
	for _, c := range []struct{ name, details, want string }{
		{"by id", `[{"type":"reasoning.encrypted","data":"` + sig("S2") + `","id":"c2"},{"type":"reasoning.encrypted","data":"` + sig("T") + `"},` +
			`{"type":"reasoning.encrypted","data":"` + sig("S1") + `","id":"c1"}]`, "T S1 c1 S2 c2"},
		{"no id", `[{"type":"reasoning.encrypted","data":"` + sig("S1") + `"},{"type":"reasoning.encrypted","data":"` + sig("S2") + `"}]`, "S1 c1 S2 c2"},
	} {
		body := `{"model":"m","messages":[{"role":"user","content":"q"},{"role":"assistant","content":null,"reasoning_details":` + c.details + calls + `},` +
			`{"role":"tool","tool_call_id":"c1","content":"x"},{"role":"tool","tool_call_id":"c2","content":"y"}]}`
		req, err := openai.DecodeRequest([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		wire.ClaimSignatures(&req, "openai", wire.HomeGemini)
		var got []string
		for _, b := range req.Messages[1].Content.Blocks {
			switch b.Type {
			case chat.TypeThoughtSignature:
				s, _ := wire.SignatureFor(wire.HomeGemini, b.Signature)
				got = append(got, s)
			case chat.TypeToolUse:
				got = append(got, b.ID)
			}
		}
		if strings.Join(got, " ") != c.want {
			t.Fatalf("%s: %v, want %s", c.name, got, c.want)
		}
	}
}
