package access_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/internal/access"
)

func TestReadRules(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	past, future := now.Add(-time.Second), now.Add(time.Second)
	for _, c := range []struct {
		b    store.Breadcrumb
		want bool
	}{
		{store.Breadcrumb{}, false},
		{store.Breadcrumb{ExpiresAt: &future}, false},
		{store.Breadcrumb{ExpiresAt: &now}, true},
		{store.Breadcrumb{ExpiresAt: &past}, true},
		{store.Breadcrumb{MaxReads: 2, Reads: 1}, false},
		{store.Breadcrumb{MaxReads: 2, Reads: 2}, true},
	} {
		if got := access.Expired(&c.b, now); got != c.want {
			t.Errorf("Expired(%+v) = %v", c.b, got)
		}
	}
	b := store.Breadcrumb{OwnerID: "acme", MaxReads: 3}
	if !access.SpendsBudget(store.Actor{OwnerID: "acme"}, &b) || access.SpendsBudget(store.Actor{OwnerID: "other"}, &b) {
		t.Error("only the owner's reads spend a read budget")
	}
	if access.SpendsBudget(store.Actor{OwnerID: "acme"}, &store.Breadcrumb{OwnerID: "acme"}) {
		t.Error("a read without a budget spent one")
	}
}

func TestValidateRevocation(t *testing.T) {
	before := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		r    store.Revocation
		path string
	}{
		{store.Revocation{TokenID: "t1"}, ""},
		{store.Revocation{AgentID: "a", Before: before}, ""},
		{store.Revocation{TokenID: "t1", AgentID: "a"}, "id"},
		{store.Revocation{}, "id"},
		{store.Revocation{TokenID: "t1", Before: before}, "before"},
		{store.Revocation{AgentID: "a"}, "before"},
		{store.Revocation{TokenID: "t\n1"}, "id"},
	} {
		err := access.ValidateRevocation(&c.r)
		var se *store.Error
		switch {
		case c.path == "" && err != nil:
			t.Errorf("%+v: %v", c.r, err)
		case c.path != "" && (!errors.As(err, &se) || se.Code != store.CodeInvalid || se.Path != c.path):
			t.Errorf("%+v: %v, want an invalid %s", c.r, err, c.path)
		}
	}
}
