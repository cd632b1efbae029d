package webhook_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/internal/webhook"
)

// A receiver checks each request before acting on it: read the body
// (bounded), verify it against the secret ctxkit returned when the
// webhook was created, and de-duplicate by webhook-id (delivery is at
// least once).
func ExampleVerify() {
	secret, _ := webhook.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		if err := webhook.Verify(r.Header, body, time.Now(), webhook.DefaultTolerance, secret); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		fmt.Println("accepted", r.Header.Get(webhook.HeaderID), string(body))
		w.WriteHeader(http.StatusNoContent)
	})

	body := `{"kind":"created","seq":42}`
	req := httptest.NewRequest(http.MethodPost, "/hooks/ctxkit", strings.NewReader(body))
	webhook.SetHeaders(req.Header, "msg_42", time.Now(), []byte(body), secret)
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	fmt.Println(rec.Code)
	// Output:
	// accepted msg_42 {"kind":"created","seq":42}
	// 204
}
