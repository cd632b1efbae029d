package view_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/view"
)

// TestNestedRootScansAreBounded: a filter whose absolute query
// holds a filter with another absolute query reads the document once per
// candidate of each level, n×n×n visits, while the bound counts n×n per
// root query. A record of 1,400 numbers (about 7 KiB) passes the bound
// (2×1402² < 4M) and makes the uninterruptible selection run billions of
// visits. The view must be refused (TOO_COSTLY) or finish quickly.
func TestNestedRootScansAreBounded(t *testing.T) {
	const n = 1400
	nums := make([]string, n)
	for i := range nums {
		nums[i] = fmt.Sprint(i)
	}
	doc := `{"a":[` + strings.Join(nums, ",") + `]}`
	v := mustCompile(t, `{"transform":{"x":{"type":"extract","value":"$.a[?$.a[?$.a[*]]]"}}}`, view.Options{})
	done := make(chan view.Result, 1)
	start := time.Now()
	go func() {
		_, res, _ := v.ApplyJSON(context.Background(), []byte(doc), view.Record{})
		done <- res
	}()
	select {
	case res := <-done:
		t.Logf("%s %v after %v", res.Status, res.Err, time.Since(start))
		if time.Since(start) > 2*time.Second {
			t.Fatalf("took %v: the visit bound did not hold", time.Since(start))
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("still selecting after 5s: nested root queries cost n³ visits, past the %d-visit bound", 4<<20)
	}
}
