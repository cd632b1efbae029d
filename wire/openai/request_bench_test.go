package openai_test

import (
	"encoding/json"
	"testing"

	"github.com/ctxkit/ctxkit/wire/openai"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

func BenchmarkDecodeRequest(b *testing.B) {
	req, _, err := openai.EncodeRequest(wiretest.Conversation(200), openai.Options{})
	if err != nil {
		b.Fatal(err)
	}
	conversation, err := json.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	wiretest.BenchDecodeRequest(b, openai.DecodeRequest, conversation)
}
