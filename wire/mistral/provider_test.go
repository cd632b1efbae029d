package mistral_test

import (
	"net/http"
	"testing"

	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/mistral"
)

// TestParseError: Mistral's own error shape reads as its message and type.
func TestParseError(t *testing.T) {
	parse := mistral.Provider().Upstream.ParseError
	got := parse(400, http.Header{}, []byte(`{"object":"error","message":"Invalid model: x","type":"invalid_model","param":null,"code":"1500"}`))
	if want := (wire.APIError{Status: 400, Type: "invalid_model", Message: "Invalid model: x"}); got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
}
