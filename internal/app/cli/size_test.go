package cli

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"512MiB": 512 << 20, "1GiB": 1 << 30, "1gib": 1 << 30, "64 MiB": 64 << 20, "1048576": 1 << 20,
		"2GB": 2e9, "300kB": 300e3, "7B": 7, "1TiB": 1 << 40,
	} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"": "is not a size", "MiB": "is not a size", "1.5GiB": `unknown unit ".5GiB"`, "-1GiB": "is not a size",
		"1 parsec": `unknown unit "parsec"`, "9999999999TiB": "too large", "99999999999999999999": "too large",
	} {
		if _, err := parseSize(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("parseSize(%q): %v; want an error containing %q", in, err, msg)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"512MiB", "1GiB", "0", "18446744073709551616", "9223372036854775807B", " 1 kb "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseSize(s)
		if err == nil && n < 0 {
			t.Fatalf("parseSize(%q) = %d", s, n)
		}
	})
}
