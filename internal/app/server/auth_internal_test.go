package server

import (
	"encoding/json"
	"testing"
	"time"
)

// FuzzIssuedAt: any iat a token carries parses without panic, and every
// issue time written to the microsecond reads back exactly.
func FuzzIssuedAt(f *testing.F) {
	for _, s := range []string{"1772625600", "1772625600.5", "1772625600.000001", "-1.5", "1e9", "NaN", `"x"`, "1e400", "9223372036854775807"} {
		f.Add([]byte(s), int64(1772625600_500001))
	}
	f.Fuzz(func(t *testing.T, raw []byte, us int64) {
		var got issuedAt
		_ = json.Unmarshal(raw, &got)
		us %= 1 << 52 // within a few centuries of the epoch
		want := time.UnixMicro(us)
		b, err := json.Marshal(issuedAt{want})
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &got); err != nil || !got.Equal(want) {
			t.Fatalf("%s read back as %v (%v); want %v", b, got.Time, err, want)
		}
	})
}
