package vscodelm_test

import (
	"encoding/json"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/vscodelm"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

// encode is EncodeRequest with its options read strictly from JSON.
var encode = wiretest.Adapt(vscodelm.EncodeRequest)

func TestConformance(t *testing.T) { wiretest.Run(t, encode) }

// TestConformanceFirstUser runs the corpus with the other system placement.
func TestConformanceFirstUser(t *testing.T) {
	wiretest.Run(t, func(req chat.Request, _ json.RawMessage) (any, []chat.Warning, error) {
		return encode(req, json.RawMessage(`{"system":"first_user"}`))
	})
}

func TestCases(t *testing.T) { wiretest.RunCases(t, "testdata/cases.json", encode) }

func BenchmarkEncode(b *testing.B) { wiretest.Bench(b, encode) }
