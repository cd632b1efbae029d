package storetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// testRevocations: revocations are recorded with a growing Seq, read back
// as written (times to the microsecond), and read again from a Seq on.
func testRevocations(t *testing.T, s store.Store) {
	ctx := context.Background()
	if rs, err := s.Revocations(ctx, 0); err != nil || len(rs) != 0 {
		t.Fatalf("empty store: %v %v", rs, err)
	}
	before := time.Date(2026, 3, 4, 5, 6, 7, 891234567, time.FixedZone("", 3600))
	in := []store.Revocation{
		{TokenID: "t-any", RevokedBy: "cli"},
		{OwnerID: "acme", TokenID: "t-acme", RevokedBy: "root"},
		{OwnerID: "acme", AgentID: "alice", Before: before, RevokedBy: "root"},
	}
	var got []store.Revocation
	start := time.Now().Add(-time.Second)
	for i, r := range in {
		out, err := s.Revoke(ctx, r)
		if err != nil {
			t.Fatalf("revoke %d: %v", i, err)
		}
		if i > 0 && out.Seq <= got[i-1].Seq {
			t.Fatalf("seq did not grow: %d after %d", out.Seq, got[i-1].Seq)
		}
		if out.RevokedAt.Before(start) || out.RevokedAt.After(time.Now().Add(time.Second)) {
			t.Fatalf("revoked_at %v", out.RevokedAt)
		}
		got = append(got, out)
	}
	if !got[2].Before.Equal(before.Truncate(time.Microsecond)) {
		t.Fatalf("before %v, want %v", got[2].Before, before)
	}
	all, err := s.Revocations(ctx, 0)
	if err != nil || len(all) != 3 {
		t.Fatalf("revocations: %v %v", all, err)
	}
	for i := range all {
		a, w := all[i], got[i]
		if a.Seq != w.Seq || a.OwnerID != w.OwnerID || a.TokenID != w.TokenID || a.AgentID != w.AgentID ||
			!a.Before.Equal(w.Before) || !a.RevokedAt.Equal(w.RevokedAt) || a.RevokedBy != w.RevokedBy {
			t.Fatalf("revocation %d read back as %+v, written %+v", i, a, w)
		}
	}
	if all[0].Before != (time.Time{}) {
		t.Fatalf("a token revocation has a time: %v", all[0].Before)
	}
	if rest, err := s.Revocations(ctx, got[0].Seq); err != nil || len(rest) != 2 || rest[0].Seq != got[1].Seq {
		t.Fatalf("after %d: %v %v", got[0].Seq, rest, err)
	}
	if rest, err := s.Revocations(ctx, got[2].Seq); err != nil || len(rest) != 0 {
		t.Fatalf("after the last: %v %v", rest, err)
	}

	long := strings.Repeat("x", 257)
	for _, tc := range []struct {
		r     store.Revocation
		field string
	}{
		{store.Revocation{}, "id"},
		{store.Revocation{OwnerID: "acme", TokenID: "t", AgentID: "a", Before: before}, "id"},
		{store.Revocation{OwnerID: "acme", TokenID: "t", Before: before}, "before"},
		{store.Revocation{OwnerID: "acme", AgentID: "a"}, "before"},
		{store.Revocation{TokenID: long}, "id"},
		{store.Revocation{TokenID: "t\x00"}, "id"},
		{store.Revocation{OwnerID: "ac\nme", TokenID: "t"}, "owner_id"},
		{store.Revocation{OwnerID: "acme", AgentID: "\xff", Before: before}, "agent"},
		{store.Revocation{TokenID: "t", RevokedBy: long}, "revoked_by"},
	} {
		_, err := s.Revoke(ctx, tc.r)
		var se *store.Error
		if !errors.As(err, &se) || se.Code != store.CodeInvalid || se.Path != tc.field {
			t.Errorf("%+v: %v, want invalid %s", tc.r, err, tc.field)
		}
	}
	if rs, _ := s.Revocations(ctx, 0); len(rs) != 3 {
		t.Fatalf("a refused revocation was recorded: %d", len(rs))
	}
}

// testRevocationsInOrder: a reader that polls from the last Seq it saw
// while revocations are written concurrently misses none of them.
func testRevocationsInOrder(t *testing.T, s store.Store) {
	ctx := context.Background()
	const writers, each = 4, 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				owner := []string{"acme", "evil", ""}[(w+i)%3]
				if _, err := s.Revoke(ctx, store.Revocation{OwnerID: owner, TokenID: "t", RevokedBy: "w"}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	seen, after := 0, int64(0)
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true // one more poll after the last write
		default:
		}
		rs, err := s.Revocations(ctx, after)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.Seq <= after {
				t.Fatalf("seq %d after %d", r.Seq, after)
			}
			after = r.Seq
		}
		seen += len(rs)
	}
	if seen != writers*each {
		t.Fatalf("a poller saw %d of %d revocations", seen, writers*each)
	}
}
