package server

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/canonjson"
	"github.com/ctxkit/ctxkit/relay"
	"github.com/ctxkit/ctxkit/view"
)

// redactedEverywhere is a JSON body as a record keeps it when every
// string and key is redacted one by one (the envelopes in it first):
// what body must write, however it gets there.
func redactedEverywhere(t testing.TB, rc *exchangeRecorder, b []byte) []byte {
	doc, err := view.DecodeJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	var each func(v any) any
	each = func(v any) any {
		switch t := v.(type) {
		case string:
			s, _ := rc.redact.Redact(rc.redactSealed(t, true, false, 0))
			return strings.ReplaceAll(s, "\x00", "\uFFFD")
		case []any:
			out := make([]any, len(t))
			for i := range t {
				out[i] = each(t[i])
			}
			return out
		case map[string]any:
			out := make(map[string]any, len(t))
			for k, e := range t {
				out[each(k).(string)] = each(e)
			}
			return out
		}
		return v
	}
	out, err := canonjson.Marshal(each(doc))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestShortestSecret: the fewest bytes the record redactor's patterns
// match, below which text is not searched, is what the patterns say: a
// ctxkit token "eyJ?.eyJ?.?" is the shortest secret.
func TestShortestSecret(t *testing.T) {
	if n := testRecorder(t).shortestSecret; n != len("eyJa.eyJb.c") {
		t.Fatalf("shortest secret %d bytes", n)
	}
	for _, c := range []struct {
		re   string
		want int
	}{{`abc`, 3}, {`\ba{3,}\b`, 3}, {`(?:x|yz)+q?`, 1}, {`é{2}`, 4}, {`[\s\S]*`, 0}, {`(?P<s>ab)|c`, 1}} {
		if got := shortestMatch([]relay.Pattern{{Kind: "k", Regex: c.re}}); got != c.want {
			t.Errorf("%s: %d, want %d", c.re, got, c.want)
		}
	}
}

// TestRecordBodyRedaction: a record's body is redacted wherever a secret
// is — a value, a key, the edge of a string, behind a JSON escape, a
// Bearer token, a ctxkit token — exactly as when each string is redacted
// on its own; a body with nothing to redact is kept as it was, in
// canonical form.
func TestRecordBodyRedaction(t *testing.T) {
	rc := testRecorder(t)
	const key = "sk-live0123456789abcdefghijklmnopqrstuv"
	for _, body := range []string{
		`{"model":"m","messages":[{"role":"user","content":"key ` + key + ` here"}]}`,
		`{"` + key + `":1}`,
		`["` + key + `"]`,
		`{"a":"sk-live0123456789\u0061bcdefghijklmnopqrstuv"}`,
		`{"a":"sk\u002dlive0123456789abcdefghijklmnopqrstuv"}`,
		`{"h":"Authorization: Bearer abc.def0123456789xyz"}`,
		`{"t":"eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJhIn0.c2lnbmF0dXJl"}`,
		`{"k":"AKIAABCDEFGHIJKLMNOP","l":"-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----"}`,
		`{"a":"Bearer","b":"0123456789abcdefghij"}`,
		`{"a":"sk-","b":"live9876543210abcdefghijklmnopqrstuv"}`, // no secret in either string
		`{"z":1,"a":[true,null,1.50,"plain text, nothing secret"],"m":{"y":"é","x":"<&>"}}`,
		`{"a":"\u0000 nul"}`,
	} {
		got, truncated := rc.body([]byte(body), int64(len(body)), gateway.RecordedBodyBytes)
		want := redactedEverywhere(t, rc, []byte(body))
		if truncated || !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", body, got, want)
		}
		if bytes.Contains(got, []byte("0123456789abcdefghijklmnopqrstuv")) || bytes.Contains(got, []byte("AKIAABCD")) || bytes.Contains(got, []byte("c2lnbmF0dXJl")) {
			t.Errorf("a secret is left in %s", got)
		}
	}
}

// FuzzRecordBody: whatever JSON document a body is, the record keeps it
// as redacting each of its strings and keys on its own would, and the
// seal written into a record's canonical form is the form the record
// with its seal encodes to.
func FuzzRecordBody(f *testing.F) {
	for _, s := range []string{
		`{"a":"sk-live0123456789abcdefghijklmnopqrstuv"}`, `{"a":"sk\u002dlive0123456789abcdefghijklmnopqrstuv"}`,
		`{"started":"x","seal":"y"}`, `[",\"started\":"]`, `"Bearer 0123456789abcdef.gh"`, `{"a":"Bearer","b":"0123456789abcdef.gh"}`,
		`{"b":"eyJa.eyJb.c","a":"x"}`, `1`, `null`, `{"":""}`,
	} {
		f.Add([]byte(s))
	}
	rc := testRecorder(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 4096 {
			return
		}
		if _, err := view.DecodeJSON(b); err != nil {
			return
		}
		got, _ := rc.body(b, int64(len(b)), gateway.RecordedBodyBytes)
		if want := redactedEverywhere(t, rc, b); !bytes.Equal(got, want) {
			t.Fatalf("%s:\n got %s\nwant %s", b, got, want)
		}
		rec := exchangeRecord{Attempts: []attemptRecord{}, Request: got, Response: got, Route: string(b)}
		sealed, err := rc.seal(gateway.Caller{Owner: "o", Agent: "a"}, &rec)
		if err != nil {
			t.Fatal(err)
		}
		if whole, _ := canonjson.Marshal(&rec); !bytes.Equal(sealed, whole) {
			t.Fatalf("the seal went in at the wrong place:\n got %s\nwant %s", sealed, whole)
		}
	})
}

// BenchmarkRecordBody is the cost of a record's body: "kept" as body
// writes it, "each-string" redacting every string and key on its own.
func BenchmarkRecordBody(b *testing.B) {
	rc := testRecorder(b)
	x := benchExchange()
	b.Run("kept", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rc.body(x.Request, x.RequestSize, gateway.RecordedBodyBytes)
			rc.body(x.Response, x.ResponseSize, gateway.RecordedBodyBytes)
		}
	})
	b.Run("each-string", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			redactedEverywhere(b, rc, x.Request)
			redactedEverywhere(b, rc, x.Response)
		}
	})
}
