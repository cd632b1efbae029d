package cli

import (
	"strings"
	"testing"
	"time"
)

// TestCheckWebhookFlags: --webhook-per-owner takes 0 (a quarter of
// --webhook-in-flight) up to --webhook-in-flight, and a bad value names
// the flag.
func TestCheckWebhookFlags(t *testing.T) {
	for _, c := range []struct {
		perOwner int
		wantErr  string
	}{
		{0, ""}, {1, ""}, {256, ""},
		{-1, "--webhook-per-owner -1"},
		{257, "--webhook-per-owner 257"},
	} {
		err := checkWebhookFlags(10*time.Second, 24*time.Hour, 256, 4, c.perOwner, 10_000)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("per-owner %d: %v", c.perOwner, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("per-owner %d: %v, want %q", c.perOwner, err, c.wantErr)
		}
	}
}
