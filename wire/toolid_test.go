package wire_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/openai"
	"github.com/ctxkit/ctxkit/wire/providers"
)

// accepted is what each upstream accepts as a tool-call id, written from
// the providers' own statements (their error messages and API
// references), independently of the rows' rules.
var accepted = map[string]func(string) bool{
	"anthropic": regexp.MustCompile(`^[a-zA-Z0-9_-]+$`).MatchString,
	"openai":    func(id string) bool { return id != "" && len(id) <= 40 },
	"deepseek":  func(id string) bool { return id != "" && len(id) <= 40 },
	"mistral":   regexp.MustCompile(`^[a-zA-Z0-9]{9}$`).MatchString,
	"bedrock":   regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`).MatchString,
	"gemini":    func(string) bool { return true },
}

// clientIDs are ids clients send: other providers' ids, ids made by
// agents, and the odd ones.
var clientIDs = []string{
	"functions.get_weather:0",            // Kimi, and clients that copy it
	"call_abc123",                        // OpenAI's shape, short
	"call_" + strings.Repeat("x", 36),    // 41 characters
	"call_" + strings.Repeat("y", 35),    // 40 characters
	"toolu_01A09q90qw90lq917835lq9",      // Anthropic's
	"tooluse_" + strings.Repeat("Z", 56), // 64 characters, Bedrock's longest
	strings.Repeat("a", 65),
	"abcDEF123", // nine alphanumerics
	"abc_DEF12", // nine, with an underscore
	"вызов_1",   // not ASCII
	"get weather 1",
	"line\nbreak",
	"",
}

// upstreams are the rows with an upstream, by name.
func upstreams(t testing.TB) map[string]wire.Provider {
	rows := map[string]wire.Provider{}
	for _, p := range providers.All() {
		if p.Upstream != nil {
			rows[p.Name] = p
		}
	}
	for name := range accepted {
		if _, ok := rows[name]; !ok {
			t.Fatalf("no upstream row %q", name)
		}
	}
	return rows
}

// conversation is a request in which the assistant called tools with ids
// and the user answered each call, then said more.
func conversation(ids ...string) chat.Request {
	var calls, results []chat.Block
	for _, id := range ids {
		calls = append(calls, chat.Block{Type: chat.TypeToolUse, ID: id, Name: "get_weather", Input: json.RawMessage(`{"city":"Oslo"}`)})
		results = append(results, chat.Block{Type: chat.TypeToolResult, ToolUseID: id, Content: &chat.Content{IsString: true, Text: "sunny"}})
	}
	results = append(results, chat.Block{Type: chat.TypeText, Text: "and tomorrow?"})
	return chat.Request{
		Model: "m",
		Messages: []chat.Message{
			{Role: chat.User, Content: chat.Str("weather?")},
			{Role: chat.Assistant, Content: chat.Of(calls...)},
			{Role: chat.User, Content: chat.Of(results...)},
		},
		Tools: []chat.Tool{{Name: "get_weather", InputSchema: json.RawMessage(`{"type":"object"}`)}},
	}
}

// sentIDs are the tool_use ids and tool_result ids of req, in order.
func sentIDs(req chat.Request) (uses, results []string) {
	for _, m := range req.Messages {
		for _, b := range m.Content.Blocks {
			switch b.Type {
			case chat.TypeToolUse:
				uses = append(uses, b.ID)
			case chat.TypeToolResult:
				results = append(results, b.ToolUseID)
			}
		}
	}
	return uses, results
}

// TestRewriteToolIDsEveryUpstream: every client id, sent to every
// upstream, reaches it as an id it accepts — the id itself when it
// already does — the same in the call and its result, in the body the
// row encodes; the map gives the client's id back; the client's request
// is not changed.
func TestRewriteToolIDsEveryUpstream(t *testing.T) {
	rows := upstreams(t)
	for name, ok := range accepted {
		rule := rows[name].Upstream.ToolIDs
		for _, id := range clientIDs {
			t.Run(fmt.Sprintf("%s/%q", name, id), func(t *testing.T) {
				req := conversation(id)
				before, _ := json.Marshal(req)
				sent, ids := wire.RewriteToolIDs(req, rule)
				if after, _ := json.Marshal(req); string(after) != string(before) {
					t.Fatal("the client's request was changed")
				}
				uses, results := sentIDs(sent)
				got := uses[0]
				if results[0] != got {
					t.Fatalf("tool_use id %q, tool_result id %q", got, results[0])
				}
				if !ok(got) {
					t.Fatalf("%s refuses %q", name, got)
				}
				if ok(id) {
					if got != id || ids != nil {
						t.Fatalf("an accepted id became %q (map %v)", got, ids)
					}
					return
				}
				if ids.Restore(got) != id {
					t.Fatalf("Restore(%q) = %q, want %q", got, ids.Restore(got), id)
				}
				body, _, _, err := rows[name].Encode(sent, nil, nil)
				if err != nil {
					t.Fatalf("encode: %v", err)
				}
				data, _ := json.Marshal(body)
				if name != "gemini" && !strings.Contains(string(data), `"`+got+`"`) {
					t.Fatalf("the encoded body does not send %q: %s", got, data)
				}
				if q, _ := json.Marshal(id); id != "" && strings.Contains(string(data), string(q)) {
					t.Fatalf("the encoded body still sends %s: %s", q, data)
				}
			})
		}
	}
}

// TestToolIDRulesMakeWhatTheyAccept: every row's rule makes ids that it
// and the upstream accept, with enough digits that two client ids do not
// meet by chance.
func TestToolIDRulesMakeWhatTheyAccept(t *testing.T) {
	for name, p := range upstreams(t) {
		rule := p.Upstream.ToolIDs
		if rule == (wire.ToolIDRule{}) {
			continue
		}
		if rule.Len-len(rule.Prefix) < 9 {
			t.Errorf("%s: made ids have %d digits", name, rule.Len-len(rule.Prefix))
		}
		sent, _ := wire.RewriteToolIDs(conversation("bad id \x00", strings.Repeat("!", 70), ""), rule)
		uses, _ := sentIDs(sent)
		for _, made := range uses {
			if !rule.Valid(made) {
				t.Errorf("%s: the rule refuses its own %q", name, made)
			}
			if ok := accepted[name]; ok != nil && !ok(made) {
				t.Errorf("%s refuses %q", name, made)
			}
		}
	}
}

// refused is refused by every upstream that checks ids: too long for
// OpenAI, with characters the others refuse.
func refused(id string) string { return id + "/" + strings.Repeat("x", 40) }

// TestRewriteToolIDsMultiTurn: a conversation's ids reach the upstream
// the same on every turn, and from a second, independent call (another
// replica): the rewriting keeps no state.
func TestRewriteToolIDsMultiTurn(t *testing.T) {
	rows := upstreams(t)
	for _, name := range []string{"anthropic", "openai", "mistral", "bedrock"} {
		rule := rows[name].Upstream.ToolIDs
		turn1 := conversation(refused("functions.get_weather:0"), refused("functions.get_time:1"))
		turn2 := conversation(refused("functions.get_weather:0"), refused("functions.get_time:1"))
		turn2.Messages = append(turn2.Messages,
			chat.Message{Role: chat.Assistant, Content: chat.Of(chat.Block{Type: chat.TypeToolUse, ID: refused("functions.get_weather:2"), Name: "get_weather", Input: json.RawMessage(`{}`)})},
			chat.Message{Role: chat.User, Content: chat.Of(chat.Block{Type: chat.TypeToolResult, ToolUseID: refused("functions.get_weather:2")})},
		)
		s1, _ := wire.RewriteToolIDs(turn1, rule)
		s2, _ := wire.RewriteToolIDs(turn2, rule)
		s2again, _ := wire.RewriteToolIDs(turn2.Clone(), rule)
		u1, _ := sentIDs(s1)
		u2, r2 := sentIDs(s2)
		u2again, _ := sentIDs(s2again)
		if u1[0] != u2[0] || u1[1] != u2[1] {
			t.Errorf("%s: turn 1 sent %q, turn 2 %q", name, u1, u2[:2])
		}
		if strings.Join(u2, ",") != strings.Join(u2again, ",") {
			t.Errorf("%s: two calls sent %q and %q", name, u2, u2again)
		}
		if u2[2] != r2[2] || u2[2] == u2[0] || u2[2] == u2[1] {
			t.Errorf("%s: third call %q, its result %q, earlier %q", name, u2[2], r2[2], u2[:2])
		}
	}
}

// TestRewriteToolIDsNoCollision: a made id never equals another id of the
// request, whether the client sent it (an id equal to the one its other
// id would become) or another id was given it first.
func TestRewriteToolIDsNoCollision(t *testing.T) {
	rows := upstreams(t)
	for _, name := range []string{"anthropic", "openai", "mistral", "bedrock"} {
		rule := rows[name].Upstream.ToolIDs
		alone, _ := wire.RewriteToolIDs(conversation(refused("functions.get_weather:0")), rule)
		u, _ := sentIDs(alone)
		first := u[0]
		// The client sends, besides, the very id the first would become.
		sent, ids := wire.RewriteToolIDs(conversation(refused("functions.get_weather:0"), first), rule)
		uses, results := sentIDs(sent)
		if uses[1] != first {
			t.Fatalf("%s: the accepted id %q became %q", name, first, uses[1])
		}
		if uses[0] == first || !rule.Valid(uses[0]) || results[0] != uses[0] {
			t.Fatalf("%s: %q was made %q beside the client's %q (result %q)", name, refused("functions.get_weather:0"), uses[0], first, results[0])
		}
		if ids.Restore(uses[0]) != refused("functions.get_weather:0") || ids.Restore(first) != first {
			t.Fatalf("%s: restored %q and %q", name, ids.Restore(uses[0]), ids.Restore(first))
		}
		// Many ids: all made ids differ.
		var many []string
		for i := range 3000 {
			many = append(many, refused(fmt.Sprintf("functions.f:%d", i)))
		}
		sent, _ = wire.RewriteToolIDs(conversation(many...), rule)
		uses, _ = sentIDs(sent)
		seen := map[string]bool{}
		for _, id := range uses {
			if seen[id] {
				t.Fatalf("%s: %q made twice", name, id)
			}
			seen[id] = true
		}
	}
}

// TestToolIDMapRestores: the client gets its own id back in a streamed
// tool call and in a collected response; other ids pass unchanged, and
// with nothing rewritten the stream is passed on as it is.
func TestToolIDMapRestores(t *testing.T) {
	rule := upstreams(t)["anthropic"].Upstream.ToolIDs
	sent, ids := wire.RewriteToolIDs(conversation("functions.get_weather:0"), rule)
	uses, _ := sentIDs(sent)
	made := uses[0]
	stream := []chat.Chunk{
		{Type: chat.ChunkText, Text: "again"},
		{Type: chat.ChunkToolCallStart, Index: 0, ID: made, Name: "get_weather"},
		{Type: chat.ChunkToolCallEnd, Index: 0, Arguments: `{}`},
		{Type: chat.ChunkToolCallStart, Index: 1, ID: "toolu_new", Name: "get_weather"},
		{Type: chat.ChunkToolCallEnd, Index: 1, Arguments: `{}`},
		{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopToolUse}},
	}
	seq := func(yield func(chat.Chunk, error) bool) {
		for _, c := range stream {
			if !yield(c, nil) {
				return
			}
		}
	}
	var got []string
	for c, err := range ids.Chunks(seq) {
		if err != nil {
			t.Fatal(err)
		}
		if c.Type == chat.ChunkToolCallStart {
			got = append(got, c.ID)
		}
	}
	if strings.Join(got, ",") != "functions.get_weather:0,toolu_new" {
		t.Fatalf("stream ids %q", got)
	}
	res, err := chat.Collect(seq)
	if err != nil {
		t.Fatal(err)
	}
	ids.Response(&res)
	if res.Content[1].ID != "functions.get_weather:0" || res.Content[2].ID != "toolu_new" {
		t.Fatalf("response ids %q, %q", res.Content[1].ID, res.Content[2].ID)
	}
	// Stopping early stops the upstream's stream too.
	n := 0
	for range ids.Chunks(seq) {
		n++
		break
	}
	if n != 1 {
		t.Fatal("the loop did not stop")
	}
	var none *wire.ToolIDMap
	if none.Restore("x") != "x" {
		t.Fatal("a nil map changed an id")
	}
	none.Response(&res)
	if res.Content[1].ID != "functions.get_weather:0" {
		t.Fatal("a nil map changed the response")
	}
}

// TestRewriteToolIDsAcceptedAllocatesNothing: a request whose ids the
// upstream accepts costs a scan and no allocation.
func TestRewriteToolIDsAcceptedAllocatesNothing(t *testing.T) {
	rule := upstreams(t)["anthropic"].Upstream.ToolIDs
	req := conversation("toolu_01", "toolu_02", "toolu_03")
	allocs := testing.AllocsPerRun(100, func() {
		if _, ids := wire.RewriteToolIDs(req, rule); ids != nil {
			t.Fatal("rewrote accepted ids")
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}

// FuzzRewriteToolIDs: for any ids, under every row's rule, the ids sent
// are accepted, the accepted ones are kept, different ids stay different,
// calls and results stay paired, and the map gives every id back.
func FuzzRewriteToolIDs(f *testing.F) {
	for _, id := range clientIDs {
		f.Add(id + "|" + id + "x|call_1")
	}
	f.Add("a|a|a")
	f.Add("|||")
	rows := upstreams(f)
	f.Fuzz(func(t *testing.T, joined string) {
		client := strings.Split(joined, "|")
		if len(client) > 200 {
			client = client[:200]
		}
		for name, p := range rows {
			rule := p.Upstream.ToolIDs
			sent, ids := wire.RewriteToolIDs(conversation(client...), rule)
			uses, results := sentIDs(sent)
			to := map[string]string{}
			from := map[string]string{}
			for i, id := range client {
				got := uses[i]
				if results[i] != got {
					t.Fatalf("%s: call %q, result %q", name, got, results[i])
				}
				if !rule.Valid(got) || (accepted[name] != nil && !accepted[name](got)) {
					t.Fatalf("%s: %q sent for %q", name, got, id)
				}
				if rule.Valid(id) && got != id {
					t.Fatalf("%s: accepted %q became %q", name, id, got)
				}
				if ids.Restore(got) != id {
					t.Fatalf("%s: Restore(%q) = %q, want %q", name, got, ids.Restore(got), id)
				}
				if prev, ok := to[id]; ok && prev != got {
					t.Fatalf("%s: %q sent as %q and %q", name, id, prev, got)
				}
				if prev, ok := from[got]; ok && prev != id {
					t.Fatalf("%s: %q and %q both sent as %q", name, prev, id, got)
				}
				to[id], from[got] = got, id
			}
		}
	})
}

// BenchmarkRewriteToolIDs: a 40-call conversation whose ids the upstream
// accepts (the common case: a scan), and one whose ids it refuses.
func BenchmarkRewriteToolIDs(b *testing.B) {
	rule := upstreams(b)["anthropic"].Upstream.ToolIDs
	var good, bad []string
	for i := range 40 {
		good = append(good, fmt.Sprintf("toolu_%024d", i))
		bad = append(bad, fmt.Sprintf("functions.f:%d", i))
	}
	for _, c := range []struct {
		name string
		req  chat.Request
	}{{"accepted", conversation(good...)}, {"refused", conversation(bad...)}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				wire.RewriteToolIDs(c.req, rule)
			}
		})
	}
}

// TestToolIDsThroughTheGateway follows an OpenAI-dialect client whose
// history holds ids another provider made, through an Anthropic upstream,
// as the gateway does: the body sent holds only ids Anthropic accepts,
// and when the upstream's stream names one of them, the client reads its
// own id.
func TestToolIDsThroughTheGateway(t *testing.T) {
	const kimi = "functions.get_weather:0"
	body := `{"model":"m","stream":true,"messages":[
		{"role":"user","content":"weather?"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"` + kimi + `","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"` + kimi + `","content":"sunny"}]}`
	client := openai.Dialect()
	req, err := client.Decode([]byte(body), wire.Incoming{})
	if err != nil {
		t.Fatal(err)
	}
	up, _ := providers.Lookup("anthropic")
	sent, ids := wire.RewriteToolIDs(req, up.Upstream.ToolIDs)
	wireBody, _, _, err := up.Encode(sent, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(wireBody)
	if strings.Contains(string(data), kimi) {
		t.Fatalf("the upstream gets %q: %s", kimi, data)
	}
	uses, results := sentIDs(sent)
	if !accepted["anthropic"](uses[0]) || results[0] != uses[0] || !strings.Contains(string(data), `"id":"`+uses[0]+`"`) {
		t.Fatalf("sent %q / %q: %s", uses[0], results[0], data)
	}
	// The upstream answers with a call that carries the id it was sent.
	stream := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"stop_reason\":null,\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"" + uses[0] + "\",\"name\":\"get_weather\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":5}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	var out bytes.Buffer
	chunks := ids.Chunks(up.Upstream.Decode(strings.NewReader(stream)))
	if err := client.Stream(&out, wire.Outgoing{Request: &req, Model: "m", ID: "chatcmpl-1", Created: 1}, chunks); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"id":"`+kimi+`"`) || strings.Contains(out.String(), uses[0]) {
		t.Fatalf("the client does not read its own id:\n%s", out.String())
	}
}
