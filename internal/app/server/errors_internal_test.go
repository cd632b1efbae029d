package server

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/relay"
	"github.com/ctxkit/ctxkit/store"
)

// TestErrorPath: an error names the place in the request at fault, its
// message begins with that place, and it unwraps to its cause.
func TestErrorPath(t *testing.T) {
	e := errorAt(http.StatusBadRequest, store.CodeInvalid, "ttl_config.max_reads", "a %s TTL needs a positive number of reads", "usage")
	if e.Path != "ttl_config.max_reads" || e.Code != "invalid" || e.Status != 400 ||
		e.Error() != "ttl_config.max_reads: a usage TTL needs a positive number of reads" {
		t.Errorf("%+v", e)
	}
	cause := &relay.Error{Code: relay.CodeInvalidContext, Path: "prompts[0].id", Msg: "required"}
	var ae *Error
	if err := relayError(cause, "context", time.Second); !errors.As(err, &ae) || ae.Path != "context.prompts[0].id" ||
		ae.Code != Code(relay.CodeInvalidContext) || ae.Msg != "context."+cause.Error() || !errors.Is(err, cause) {
		t.Errorf("%#v", err)
	}
	cause.Path = ""
	if err := relayError(cause, "pipeline", time.Second); !errors.As(err, &ae) || ae.Path != "pipeline" || ae.Msg != "pipeline: "+cause.Error() {
		t.Errorf("%#v", err)
	}
}
