package server

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/wire"
)

// TestReviewRecordBedrockEnvelopes: Bedrock envelopes now carry the
// thinking they sign, as Anthropic's do. In a Chat Completions answer
// (reasoning.text detail, unary and streamed) the record must redact a
// secret in that thinking; and an envelope of Bedrock's kind that does
// not open (a damaged or forged one: the same bytes a lenient decoder
// reads) must be replaced by the marker, as one of Anthropic's kind is.
func TestReviewRecordBedrockEnvelopes(t *testing.T) {
	rc := testRecorder(t)
	env := wire.SealSignature(wire.HomeBedrock, "EqoBsig", "The tool showed the key "+sealedSecret+".")
	// "ctxk" 0x01 'b', an empty signature, a 0 byte and the text: the
	// form of a Bedrock envelope, which OpenSignature refuses.
	forged := base64.StdEncoding.EncodeToString([]byte("ctxk\x01b\x00The key " + sealedSecret))
	forgedA := base64.StdEncoding.EncodeToString([]byte("ctxk\x01a\x00The key " + sealedSecret))
	for _, c := range []struct {
		name, body string
		size       int
	}{
		{"unary detail", `{"choices":[{"message":{"role":"assistant","content":"ok","reasoning_details":[{"type":"reasoning.text","text":"","signature":"` + env + `","format":"anthropic-claude-v1","index":0}]}}]}`, 0},
		{"stream detail", "data: {\"choices\":[{\"delta\":{\"reasoning_details\":[{\"type\":\"reasoning.text\",\"text\":\"\",\"signature\":\"" + env + "\",\"format\":\"anthropic-claude-v1\",\"index\":0}]}}]}\n\n", 0},
		{"request detail", `{"messages":[{"role":"assistant","content":"ok","reasoning_details":[{"type":"reasoning.encrypted","data":"` + env + `"}]}]}`, 0},
		{"forged anthropic kind (control)", `{"messages":[{"role":"assistant","content":"ok","reasoning_details":[{"type":"reasoning.encrypted","data":"` + forgedA + `"}]}]}`, 0},
		{"forged bedrock kind", `{"messages":[{"role":"assistant","content":"ok","reasoning_details":[{"type":"reasoning.encrypted","data":"` + forged + `"}]}]}`, 0},
		{"forged bedrock kind, stream", "data: {\"s\":\"" + forged + "\"}\n\n", 0},
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
