package chat_test

import (
	"encoding/json"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

func BenchmarkDecodeRequest(b *testing.B) {
	conversation, err := json.Marshal(wiretest.Conversation(200))
	if err != nil {
		b.Fatal(err)
	}
	wiretest.BenchDecodeRequest(b, chat.DecodeRequest, conversation)
}
