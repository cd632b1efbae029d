package bedrock

import (
	"testing"

	"github.com/ctxkit/ctxkit/chat"
)

// TestDocumentTokensFollowsTheEncoder: documentTokens, which estimates a
// document before the request is encoded, takes the encoder's view of
// every kind of document source: carried (media, or text), replaced by
// its stub, or omitted.
func TestDocumentTokensFollowsTheEncoder(t *testing.T) {
	for _, s := range []*chat.Source{
		nil,
		{Type: "base64", MediaType: "application/pdf", Data: "JVBERi0="},
		{Type: "base64", MediaType: "application/pdf"},
		{Type: "base64", MediaType: "application/zip", Data: "UEs="},
		{Type: "base64", MediaType: "text/plain", Data: "aGk="},
		{Type: "text", MediaType: "text/plain", Data: "some text of a document"},
		{Type: "text"},
		{Type: "url", URL: "s3://bucket/a.pdf"},
		{Type: "url", URL: "s3://bucket/a.bin"},
		{Type: "url", URL: "s3://bucket/a", MediaType: "text/csv"},
		{Type: "url", URL: "https://example.com/a.pdf"},
		{Type: "file"},
	} {
		b := chat.Block{Type: chat.TypeDocument, Title: "Doc", Source: s}
		e := &encoder{}
		doc, stub := e.document(&b, func() string { return "messages[0].content[0]" })
		var want int
		switch {
		case doc != nil && doc.Source.Text != "":
			want = estimate(len(doc.Source.Text))
		case doc != nil:
			want = mediaTokens
		case stub != "":
			want = textTokens(stub)
		}
		if got := documentTokens(&b); got != want {
			t.Errorf("source %+v: %d tokens, the encoder sends %d", s, got, want)
		}
	}
}
