package wiretest_test

import (
	"encoding/json"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

// identity is the canonical request itself: every marker survives.
func identity(req chat.Request, _ json.RawMessage) (any, []chat.Warning, error) { return req, nil, nil }

func TestIdentityPasses(t *testing.T) { wiretest.Run(t, identity) }

func TestConversation(t *testing.T) {
	req := wiretest.Conversation(200)
	if len(req.Messages) != 200 {
		t.Fatalf("%d messages", len(req.Messages))
	}
	for i := 1; i < len(req.Messages); i++ {
		if req.Messages[i].Role == req.Messages[i-1].Role {
			t.Fatalf("messages %d and %d share a role", i-1, i)
		}
	}
}

func TestDiff(t *testing.T) {
	for _, c := range []struct{ a, b, want string }{
		{`{"a":[1,{"b":2}]}`, `{ "a" : [1, {"b": 2}] }`, ""},
		{`{"a":1}`, `{"a":1.0}`, "$.a: got 1.0, want 1"},
		{`{"a":1}`, `{"a":1,"b":2}`, "$.b: unexpected 2"},
		{`{"a":[1]}`, `{"a":[]}`, "$.a: 0 elements, want 1"},
	} {
		if got := wiretest.Diff([]byte(c.a), []byte(c.b)); got != c.want {
			t.Errorf("Diff(%s, %s) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
}

func BenchmarkIdentity(b *testing.B) { wiretest.Bench(b, identity) }
