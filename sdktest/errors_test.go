package sdktest_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
)

// TestUnknownPathsInDialectShape: a /v1 path the gateway does not serve
// answers 404 in the calling SDK's own error shape, so the SDK reads a
// type and a message rather than showing raw JSON.
func TestUnknownPathsInDialectShape(t *testing.T) {
	e := newEnv(t, false)
	oc := e.openai()
	_, err := oc.Batches.Get(ctx(t), "batch_1")
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != http.StatusNotFound || oe.Type == "" || oe.Message == "" {
		t.Fatalf("openai: %v", err)
	}
	ac := e.anthropic()
	_, err = ac.Messages.Batches.Get(ctx(t), "msgbatch_1", anthropic.MessageBatchGetParams{})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusNotFound || ae.Type() != "not_found_error" {
		t.Fatalf("anthropic: %v", err)
	}
}
