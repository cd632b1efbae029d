package server

import (
	"encoding/base64"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/canonjson"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/view"
	"github.com/ctxkit/ctxkit/wire"
)

const sealedSecret = "sk-live0123456789abcdefghijklmnopqrstuv" // one the redactor finds

// envelopeRun finds the envelopes a record holds, as text.
var envelopeRun = regexp.MustCompile(`Y3R4awF[A-Za-z0-9+/=_-]*`)

// sealedSecrets are the envelopes in b that open to a text holding
// sealedSecret, at any depth.
func sealedSecrets(b string) []string {
	var bad []string
	var look func(s string, depth int)
	look = func(s string, depth int) {
		if depth > 8 {
			return
		}
		for _, m := range envelopeRun.FindAllString(strings.ReplaceAll(s, `\/`, "/"), -1) {
			e, ok := wire.OpenSignature(m)
			if !ok {
				continue
			}
			if strings.Contains(e.Thinking, sealedSecret) || strings.Contains(e.Signature, sealedSecret) {
				bad = append(bad, m)
			}
			look(e.Thinking, depth+1)
			look(e.Signature, depth+1)
		}
	}
	look(b, 0)
	return bad
}

// sealedUnredacted are the envelopes in s that open, at any depth, to a
// thinking or signature the redactor would change.
func sealedUnredacted(rc *exchangeRecorder, s string) []string {
	var bad []string
	var look func(s string, depth int)
	look = func(s string, depth int) {
		if depth > 8 {
			return
		}
		for _, m := range envelopeRun.FindAllString(strings.ReplaceAll(s, `\/`, "/"), -1) {
			e, ok := wire.OpenSignature(m)
			if !ok {
				continue
			}
			for _, p := range []string{e.Thinking, e.Signature} {
				if r, _ := rc.redact.Redact(p); r != p {
					bad = append(bad, m)
				}
				look(p, depth+1)
			}
		}
	}
	look(s, 0)
	return bad
}

// TestSealedPrefix: the prefix envelopes are looked for by is one every
// envelope wire makes begins with, and long enough to be rare in other
// text.
func TestSealedPrefix(t *testing.T) {
	if len(sealedPrefix) < 6 {
		t.Fatalf("prefix %q", sealedPrefix)
	}
	for _, e := range []string{
		wire.SealSignature(wire.HomeAnthropic, "sig", "thinking"), wire.SealSignature(wire.HomeGemini, "sig", ""),
		wire.SealSignature(wire.HomeResponses, "sig", ""), wire.SealSignature(wire.HomeBedrock, "sig", "thinking"),
		wire.SealRedacted("data"), wire.SealRedactedFor(wire.HomeBedrock, "ZGF0YQ=="),
	} {
		if !strings.HasPrefix(e, sealedPrefix) || !strings.HasPrefix(strings.NewReplacer("+", "-", "/", "_").Replace(e), sealedPrefix) {
			t.Errorf("%s does not begin with %s", e, sealedPrefix)
		}
	}
	// Every kind wire opens is one the record knows: an envelope of a
	// kind it did not know would be kept as it came, secrets and all.
	for k := 0; k < 256; k++ {
		for _, payload := range []string{"sig", "sig\x00thinking"} {
			e := base64.StdEncoding.EncodeToString(append([]byte("ctxk\x01"), append([]byte{byte(k)}, payload...)...))
			if _, ok := wire.OpenSignature(e); ok && !slices.Contains(kindPrefixes[:], e[:8]) {
				t.Errorf("wire opens envelopes of kind %q, which the record does not know", rune(k))
			}
		}
	}
}

// TestRecordRedactsBedrockEnvelopes: Bedrock envelopes carry the
// thinking they sign, as Anthropic's do. In a Chat Completions answer
// (a reasoning.text detail, unary and streamed) and a request handing
// one back, the record redacts a secret in that thinking; an envelope of
// Bedrock's kind that does not open (damaged or forged) is replaced by
// the marker, as one of Anthropic's kind is.
func TestRecordRedactsBedrockEnvelopes(t *testing.T) {
	rc := testRecorder(t)
	env := wire.SealSignature(wire.HomeBedrock, "EqoBsig", "The tool showed the key "+sealedSecret+".")
	// "ctxk" 0x01 'b', an empty signature, a 0 byte and the text: the
	// form of a Bedrock envelope, which OpenSignature refuses.
	forged := base64.StdEncoding.EncodeToString([]byte("ctxk\x01b\x00The key " + sealedSecret))
	forgedA := base64.StdEncoding.EncodeToString([]byte("ctxk\x01a\x00The key " + sealedSecret))
	for _, c := range []struct{ name, body string }{
		{"unary detail", `{"choices":[{"message":{"role":"assistant","content":"ok","reasoning_details":[{"type":"reasoning.text","text":"","signature":"` + env + `","format":"anthropic-claude-v1","index":0}]}}]}`},
		{"stream detail", "data: {\"choices\":[{\"delta\":{\"reasoning_details\":[{\"type\":\"reasoning.text\",\"text\":\"\",\"signature\":\"" + env + "\",\"format\":\"anthropic-claude-v1\",\"index\":0}]}}]}\n\n"},
		{"request detail", `{"messages":[{"role":"assistant","content":"ok","reasoning_details":[{"type":"reasoning.encrypted","data":"` + env + `"}]}]}`},
		{"damaged anthropic kind", `{"messages":[{"role":"assistant","content":"ok","reasoning_details":[{"type":"reasoning.encrypted","data":"` + forgedA + `"}]}]}`},
		{"damaged bedrock kind", `{"messages":[{"role":"assistant","content":"ok","reasoning_details":[{"type":"reasoning.encrypted","data":"` + forged + `"}]}]}`},
		{"damaged bedrock kind, stream", "data: {\"s\":\"" + forged + "\"}\n\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _ := rc.body([]byte(c.body), int64(len(c.body)), gateway.RecordedBodyBytes)
			text := strings.ReplaceAll(string(got), `\/`, "/")
			if bad := sealedSecrets(text); len(bad) > 0 {
				t.Fatalf("the secret is sealed in %q", bad)
			}
			for _, run := range envelopeRun.FindAllString(text, -1) {
				raw, _ := base64.RawStdEncoding.DecodeString(strings.TrimRight(run, "="))
				if strings.Contains(string(raw), sealedSecret) {
					t.Fatalf("the record keeps the secret in base64: %s (%q)", run, raw)
				}
			}
		})
	}
}

// TestRecordRedactsSealedThinking: wherever an envelope sits in a
// recorded body — a Gemini thoughtSignature, an Anthropic signature, a
// Responses encrypted_content, a Chat reasoning_details entry, a
// streamed answer's events, a request that hands one back — a secret in
// its thinking (or its signature, or redacted data) is redacted and the
// envelope sealed again: it still opens, to the same signature and the
// redacted thinking.
func TestRecordRedactsSealedThinking(t *testing.T) {
	rc := testRecorder(t)
	thought := wire.SealSignature(wire.HomeAnthropic, "EqQBCkgIsig", "The tool showed the key "+sealedSecret+".")
	urlSafe := base64.URLEncoding.EncodeToString(mustDecode(t, thought))
	rawURL := strings.TrimRight(urlSafe, "=")
	redacted := wire.SealRedacted("data " + sealedSecret)
	gemini := wire.SealSignature(wire.HomeGemini, "sig "+sealedSecret, "")
	responses := wire.SealSignature(wire.HomeResponses, "enc "+sealedSecret, "")
	nested := wire.SealSignature(wire.HomeGemini, thought, "")
	broken := thought[:20] + "\n" + thought[20:]
	for _, c := range []struct {
		name, body string
		json       bool // kept as a JSON value (else as text)
		sig        string
	}{
		{"gemini answer", `{"candidates":[{"content":{"role":"model","parts":[{"text":"thinking","thought":true,"thoughtSignature":"` + thought + `"},{"text":"ok"}]}}]}`, true, "EqQBCkgIsig"},
		{"gemini request", `{"contents":[{"role":"model","parts":[{"text":"ok","thoughtSignature":"` + thought + `"}]},{"role":"user","parts":[{"text":"and?"}]}]}`, true, "EqQBCkgIsig"},
		{"url-safe", `{"contents":[{"role":"model","parts":[{"text":"ok","thoughtSignature":"` + urlSafe + `"}]}]}`, true, "EqQBCkgIsig"},
		{"url-safe unpadded", `{"contents":[{"role":"model","parts":[{"text":"ok","thoughtSignature":"` + rawURL + `"}]}]}`, true, "EqQBCkgIsig"},
		{"line broken", `{"contents":[{"role":"model","parts":[{"text":"ok","thoughtSignature":` + jsonString(t, broken) + `}]}]}`, true, "EqQBCkgIsig"},
		{"anthropic request", `{"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"x","signature":"` + thought + `"}]}]}`, true, "EqQBCkgIsig"},
		{"anthropic redacted", `{"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"x","signature":"` + redacted + `"}]}]}`, true, ""},
		{"gemini signature", `{"content":[{"type":"thinking","signature":"` + gemini + `"}]}`, true, ""},
		{"responses", `{"output":[{"type":"reasoning","encrypted_content":"` + responses + `","summary":[]}]}`, true, ""},
		{"responses item", `{"input":[{"type":"reasoning","encrypted_content":"` + thought + `","summary":[]}]}`, true, "EqQBCkgIsig"},
		{"chat reasoning_details", `{"choices":[{"message":{"role":"assistant","content":"ok","reasoning_details":[{"type":"reasoning.encrypted","data":"` + thought + `"}]}}]}`, true, "EqQBCkgIsig"},
		{"inside other text", `{"a":"before ` + thought + ` after"}`, true, "EqQBCkgIsig"},
		{"nested", `{"a":"` + nested + `"}`, true, ""},
		{"gemini stream", "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"t\",\"thought\":true,\"thoughtSignature\":\"" + thought + "\"}]}}]}\r\n\r\n" +
			"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"ok\"}]}}]}\r\n\r\n", false, "EqQBCkgIsig"},
		{"anthropic stream", "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"" + thought + "\"}}\n\n", false, "EqQBCkgIsig"},
		{"responses stream", "event: response.output_item.done\ndata: {\"item\":{\"type\":\"reasoning\",\"encrypted_content\":\"" + responses + "\"}}\n\n", false, ""},
		{"escaped slash", "data: {\"s\":\"" + strings.ReplaceAll(thought, "/", `\/`) + "\"}\n\n", false, "EqQBCkgIsig"},
		{"at the end", thought, false, "EqQBCkgIsig"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(strings.ReplaceAll(c.body, `\/`, "/"), sealedPrefix) && !strings.Contains(c.body, sealedPrefix) {
				t.Fatalf("no envelope in the case")
			}
			got, truncated := rc.body([]byte(c.body), int64(len(c.body)), gateway.RecordedBodyBytes)
			if truncated {
				t.Fatal("marked truncated")
			}
			text := string(got)
			if c.json {
				if strings.HasPrefix(text, `"`) {
					t.Fatalf("kept as text: %s", got)
				}
			} else if !strings.HasPrefix(text, `"`) {
				t.Fatalf("not kept as text: %s", got)
			}
			if strings.Contains(text, sealedSecret) {
				t.Fatalf("the secret is in the body as text: %s", got)
			}
			if bad := sealedSecrets(text); len(bad) > 0 {
				t.Fatalf("the secret is sealed in %q", bad)
			}
			if strings.Contains(text, sealedMarker) {
				t.Fatalf("an envelope was dropped rather than sealed again: %s", got)
			}
			if c.sig == "" {
				return
			}
			// The envelope opens again: the signature as it was, the
			// thinking with the secret redacted and the rest kept.
			var opened bool
			for _, m := range envelopeRun.FindAllString(text, -1) {
				e, ok := wire.OpenSignature(m)
				if ok && e.Signature == c.sig && e.Thinking == "The tool showed the key [REDACTED:api_key]." {
					opened = true
				}
			}
			if !opened {
				t.Fatalf("no envelope opens to the signature and the redacted thinking: %s", got)
			}
		})
	}
}

// TestRecordRedactsBedrockRedacted: Bedrock's redacted content has an
// envelope kind of its own; a secret in it is redacted and the envelope
// sealed again of the same kind (not as Anthropic's redacted thinking,
// which would send it to another provider on replay), and an envelope
// carrying the digest of a long thinking keeps the digest.
func TestRecordRedactsBedrockRedacted(t *testing.T) {
	rc := testRecorder(t)
	digest := strings.Repeat("\x07", 32)
	for _, c := range []struct {
		name string
		env  string
		want func(wire.Sealed) bool
	}{
		{"redacted content", wire.SealRedactedFor(wire.HomeBedrock, "ZGF0YQ== "+sealedSecret), func(s wire.Sealed) bool {
			return s.Home == wire.HomeBedrock && s.Redacted && s.Signature == "ZGF0YQ== [REDACTED:api_key]"
		}},
		{"digest", wire.Sealed{Home: wire.HomeBedrock, Signature: "EqoB " + sealedSecret, Digest: digest}.Seal(), func(s wire.Sealed) bool {
			return s.Home == wire.HomeBedrock && !s.Redacted && s.Signature == "EqoB [REDACTED:api_key]" && s.Digest == digest
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := `{"choices":[{"message":{"role":"assistant","content":"ok","reasoning_details":[{"type":"reasoning.encrypted","data":"` + c.env + `","format":"anthropic-claude-v1","index":0}]}}]}`
			got, _ := rc.body([]byte(body), int64(len(body)), gateway.RecordedBodyBytes)
			text := strings.ReplaceAll(string(got), `\/`, "/")
			if bad := sealedSecrets(text); len(bad) > 0 || strings.Contains(text, sealedSecret) {
				t.Fatalf("the secret is kept: %s", got)
			}
			opened := false
			for _, m := range envelopeRun.FindAllString(text, -1) {
				if e, ok := wire.OpenSignature(m); ok && c.want(e) {
					opened = true
				}
			}
			if !opened {
				t.Fatalf("no envelope opens as it was, redacted: %s", got)
			}
		})
	}
}

// TestRecordSealedCut: an envelope the body was cut in, whose rest is
// not in the record, is replaced by the marker: what is left of it could
// hold part of a secret the redactor no longer sees. One deeper inside
// envelopes than any ctxkit makes, one longer than an envelope may be,
// and one of a known kind that does not open are too.
func TestRecordSealedCut(t *testing.T) {
	rc := testRecorder(t)
	thought := wire.SealSignature(wire.HomeAnthropic, "sig", "x "+sealedSecret)
	body := "data: {\"s\":\"" + thought[:len(thought)-9]
	got, truncated := rc.body([]byte(body), int64(len(body)+100), gateway.RecordedBodyBytes)
	if !truncated || !strings.HasSuffix(string(got), `\"s\":\"`+sealedMarker+`"`) {
		t.Fatalf("cut envelope kept as %s", got)
	}
	// The same envelope not at the cut is sealed again.
	whole := "data: {\"s\":\"" + thought + "\"}"
	got, _ = rc.body([]byte(whole), int64(len(whole)+100), gateway.RecordedBodyBytes)
	if strings.Contains(string(got), sealedMarker) || len(sealedSecrets(string(got))) > 0 || !strings.Contains(string(got), sealedPrefix) {
		t.Fatalf("whole envelope kept as %s", got)
	}

	deep := thought
	for range maxSealedDepth {
		deep = wire.SealSignature(wire.HomeGemini, deep, "")
	}
	got, _ = rc.body([]byte(`{"a":"`+deep+`"}`), int64(len(deep)+8), gateway.RecordedBodyBytes)
	inner := strings.TrimSuffix(strings.TrimPrefix(string(got), `{"a":"`), `"}`)
	for range maxSealedDepth - 1 {
		e, ok := wire.OpenSignature(inner)
		if !ok {
			t.Fatalf("deep envelope kept as %s", got)
		}
		inner = e.Signature
	}
	if inner != sealedMarker {
		t.Fatalf("the envelope %d deep kept as %s", maxSealedDepth, inner)
	}
	shallow := wire.SealSignature(wire.HomeGemini, wire.SealSignature(wire.HomeGemini, thought, ""), "")
	got, _ = rc.body([]byte(`{"a":"`+shallow+`"}`), int64(len(shallow)+8), gateway.RecordedBodyBytes)
	if strings.Contains(string(got), sealedMarker) || len(sealedSecrets(string(got))) > 0 {
		t.Fatalf("envelope three deep kept as %s", got)
	}

	// Base64 run on after an envelope, or an envelope damaged: the
	// padding ends it, and one that still does not open is dropped.
	padded := wire.SealSignature(wire.HomeAnthropic, "sig", "k "+sealedSecret+"x")
	unpadded := strings.TrimRight(padded, "=")
	if padded == unpadded {
		t.Fatal("want a padded envelope")
	}
	dangling := unpadded + "A" // a character past the last whole byte
	for len(dangling)%4 != 1 {
		dangling += "A"
	}
	for in, want := range map[string]string{
		`{"a":"` + padded + `AAAA"}`:            "AAAA",
		`{"a":"` + dangling + `"}`:              sealedMarker,
		`{"a":"` + dangling + `BCD"}`:           "", // opens, with bytes more
		`{"a":"` + kindPrefixes[3] + `!!!"}`:    sealedMarker + "!!!",
		`{"a":"` + unpadded[:13] + "\\n" + `"}`: sealedMarker + `\n`,
	} {
		got, _ := rc.body([]byte(in), int64(len(in)), gateway.RecordedBodyBytes)
		if !strings.HasSuffix(string(got), want+`"}`) || strings.Contains(string(got), sealedSecret) || len(sealedSecrets(string(got))) > 0 {
			t.Errorf("%s kept as %s", in, got)
		}
	}

	long := sealedPrefix + strings.Repeat("A", wire.MaxSealedSignature)
	if out := rc.redactSealed("x "+long+" y", true, false, 0); out != "x "+sealedMarker+" y" {
		t.Fatalf("an overlong envelope kept (%d bytes)", len(out))
	}
}

// TestRecordSealedUnchanged: a record whose envelopes hold nothing to
// redact keeps them, and the whole body, byte for byte; so do text that
// only looks like the start of an envelope and base64 of other bytes.
func TestRecordSealedUnchanged(t *testing.T) {
	rc := testRecorder(t)
	thought := wire.SealSignature(wire.HomeAnthropic, "EqQBCkgIsig", "I should greet them back.")
	urlSafe := strings.TrimRight(base64.URLEncoding.EncodeToString(mustDecode(t, thought)), "=")
	for _, body := range []string{
		`{"candidates":[{"content":{"parts":[{"text":"t","thought":true,"thoughtSignature":"` + thought + `"},{"text":"ok"}]}}]}`,
		`{"contents":[{"role":"model","parts":[{"text":"ok","thoughtSignature":"` + urlSafe + `"}]}]}`,
		`{"a":"` + wire.SealRedacted("opaque") + `","b":"` + wire.SealSignature(wire.HomeResponses, "enc", "") + `","c":"Y3R4awFhnot base64 at all!"}`,
		`{"a":"` + thought[:20] + "\\n" + thought[20:] + `"}`,
		`{"a":"` + base64.StdEncoding.EncodeToString([]byte("ctxk\x01zwhat "+sealedSecret)) + `"}`,
	} {
		got, _ := rc.body([]byte(body), int64(len(body)), gateway.RecordedBodyBytes)
		doc, err := view.DecodeJSON([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		want, err := canonjson.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("changed:\n got %s\nwant %s", got, want)
		}
		// As text (a stream, or a body cut short), the same.
		text := "data: " + body + "\n\n"
		got, _ = rc.body([]byte(text), int64(len(text)), gateway.RecordedBodyBytes)
		if string(got) != string(canonjson.AppendString(nil, text)) {
			t.Errorf("changed as text:\n got %s\nwant %q", got, text)
		}
	}
}

// TestRecordSealedSearchText: an envelope holding a secret in an
// excerpt is sealed again with it redacted before the excerpt is cut, so
// neither the record nor the text search matches holds the secret.
func TestRecordSealedSearchText(t *testing.T) {
	rc := testRecorder(t)
	thought := wire.SealSignature(wire.HomeAnthropic, "sig", "key "+sealedSecret)
	x := &gateway.Exchange{
		Caller: gateway.Caller{Owner: "o", Agent: "a"}, Dialect: "gemini", Route: "m", Started: time.Now(), Status: 200,
		Request: []byte(`{"contents":[{"role":"model","parts":[{"thoughtSignature":"` + thought + `"}]}]}`), Response: []byte(`{}`),
		FirstMessage: "sig " + thought, LastMessage: thought,
	}
	x.RequestSize, x.ResponseSize = int64(len(x.Request)), int64(len(x.Response))
	b, err := rc.breadcrumb(x)
	if err != nil {
		t.Fatal(err)
	}
	for what, s := range map[string]string{"search text": b.SearchText, "context": string(b.Context)} {
		if strings.Contains(s, sealedSecret) || len(sealedSecrets(s)) > 0 {
			t.Errorf("the secret is in the record's %s: %s", what, s)
		}
		if !strings.Contains(s, sealedPrefix) {
			t.Errorf("no envelope in the record's %s: %s", what, s)
		}
	}
	derived := b
	derived.SearchText = ""
	if got, want := store.Document(&b).Body, store.Document(&derived).Body; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("search words %q; the store's own: %q", got, want)
	}
}

func mustDecode(t *testing.T, s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jsonString(t *testing.T, s string) string {
	b, err := canonjson.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// FuzzRedactSealed: whatever text an envelope sits in, whatever the
// thinking around a secret in it, and however the envelope is spelled
// (either alphabet, padded or not, its slashes escaped), no envelope the
// record keeps opens to the secret, or to anything else the redactor
// changes, at any depth.
func FuzzRedactSealed(f *testing.F) {
	f.Add("data: {\"s\":\"", "The tool showed the key ", "\"}\n\n", uint8(0), false, false)
	f.Add("", "", "", uint8(1), true, false)
	f.Add("x ", "a\x00b", "", uint8(2), false, true)
	f.Add(sealedPrefix, "é\xff", "==", uint8(3), true, true)
	f.Add("\\/", "", "\n", uint8(7), true, false)
	rc := testRecorder(f)
	f.Fuzz(func(t *testing.T, before, thinking, after string, form uint8, decoded, cut bool) {
		if len(before)+len(thinking)+len(after) > 8<<10 {
			return
		}
		// The secret as the redactor finds it: a word of its own.
		env := wire.SealSignature(wire.HomeAnthropic, "sig", thinking+" "+sealedSecret+" ")
		if form&4 != 0 {
			env = wire.SealSignature(wire.HomeGemini, env, "") // nested
		}
		switch form & 3 {
		case 1:
			env = strings.NewReplacer("+", "-", "/", "_").Replace(env)
		case 2:
			env = strings.TrimRight(env, "=")
		case 3:
			env = strings.ReplaceAll(env, "/", `\/`)
		}
		in := before + env + after
		out := rc.redactSealed(in, decoded, cut, 0)
		if bad := sealedSecrets(out); len(bad) > 0 {
			t.Fatalf("the secret is sealed in %q (from %q)", bad, in)
		}
		if bad := sealedUnredacted(rc, out); len(bad) > 0 {
			t.Fatalf("%q is sealed with text the redactor changes (from %q)", bad, in)
		}
		if again := rc.redactSealed(out, decoded, cut, 0); len(sealedSecrets(again)) > 0 {
			t.Fatalf("the secret is sealed in %q", again)
		}
	})
}
