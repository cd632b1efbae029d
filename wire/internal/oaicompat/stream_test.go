package oaicompat_test

import (
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/internal/oaicompat"
)

func TestStreamError(t *testing.T) {
	cases := []struct {
		in   string
		want chat.StreamError
	}{
		{`{"message":"boom","type":"server_error"}`, chat.StreamError{Type: "server_error", Message: "boom", Retryable: true}},
		{`{"message":"bad","type":"invalid_request_error","code":"context_length_exceeded"}`, chat.StreamError{Type: "invalid_request_error", Message: "bad"}},
		{`{"message":"slow","type":"invalid_request_error","code":429}`, chat.StreamError{Type: "invalid_request_error", Message: "slow", Retryable: true}},
		{`{"message":"x","code":"rate_limit_exceeded"}`, chat.StreamError{Type: "rate_limit_exceeded", Message: "x", Retryable: true}},
		{`{"message":"gw","code":503}`, chat.StreamError{Type: "503", Message: "gw", Retryable: true}},
		{`{"message":"no","code":400}`, chat.StreamError{Type: "400", Message: "no"}},
		{`{"type":"overloaded_error","message":"Overloaded"}`, chat.StreamError{Type: "overloaded_error", Message: "Overloaded", Retryable: true}},
		{`"plain text"`, chat.StreamError{Type: "error", Message: "plain text"}},
		{`42`, chat.StreamError{Type: "error", Message: "42"}},
	}
	for _, c := range cases {
		if got := oaicompat.StreamError([]byte(c.in)); *got != c.want {
			t.Errorf("%s: %+v, want %+v", c.in, *got, c.want)
		}
	}
}

// TestAssemblerBoundsNameAndID: the ids and names the assembler keeps
// count against MaxToolCallBytes too, and once a bound is passed it
// takes nothing more.
func TestAssemblerBoundsNameAndID(t *testing.T) {
	var a oaicompat.ToolCallAssembler
	emit := func(chat.Chunk) bool { return true }
	name := strings.Repeat("n", 1<<20)
	for i := range oaicompat.MaxToolCallBytes >> 20 {
		if !a.Fragment(i, "", name, "", emit) {
			t.Fatalf("call %d: %v", i, a.Err())
		}
	}
	if a.Fragment(oaicompat.MaxToolCallBytes>>20, "", "f", "", emit) || a.Err() == nil {
		t.Fatal("a name past MaxToolCallBytes was taken")
	}
	err := a.Err()
	if a.Fragment(0, "", "", "{}", emit) || a.Err() != err {
		t.Fatal("a fragment after the error was taken")
	}
}
