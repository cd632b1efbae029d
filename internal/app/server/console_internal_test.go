package server

import (
	"crypto/ed25519"
	"strings"
	"testing"
	"time"
)

// FuzzLoginCode: whatever a login link's fragment holds, opening it is
// bounded and either refuses with the one login error or yields claims a
// token can be minted for; and only codes minted with the key open.
func FuzzLoginCode(f *testing.F) {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	now := time.Unix(1_800_000_000, 0)
	good, err := MintLoginCode(key, Principal{OwnerID: "acme", AgentID: "alice", Roles: []string{RoleCurator, RoleSubscriber}}, LoginCodeTTL, now)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{good, "", "lc1.", "lc1..", "lc1.e30.", good + "A", strings.Replace(good, "lc1.", "lc2.", 1),
		"lc1." + strings.Repeat("A", 3000), "eyJhbGciOiJFZERTQSJ9.e30.sig"} {
		f.Add(s)
	}
	mk, err := loginKey(key)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, code string) {
		c, err := openLoginCode(mk, code, now)
		if err != nil {
			if err != errLoginCode {
				t.Fatalf("refused with %v, not the login error", err)
			}
			return
		}
		if code != good && !strings.HasPrefix(code, "lc1.") {
			t.Fatalf("opened %q", code)
		}
		if _, err := Mint(key, Principal{OwnerID: c.OwnerID, AgentID: c.AgentID, Roles: c.Roles}, time.Minute, now); err != nil {
			t.Fatalf("opened claims a token cannot be minted for: %+v: %v", c, err)
		}
	})
}
