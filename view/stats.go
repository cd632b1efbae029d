package view

import (
	"math"

	"github.com/ctxkit/ctxkit/internal/tokencount"
)

// Stats compares the token cost of a context with that of its view.
type Stats struct {
	Encoding     string  `json:"encoding"`
	TokensBefore int     `json:"tokens_before"`
	TokensAfter  int     `json:"tokens_after"`
	SavedPercent float64 `json:"saved_percent"` // negative when the view is larger
}

// Measure counts the tokens of a context and of its view, both as encoded
// JSON, and the share of tokens the view saves. encoding names a tiktoken
// encoding (o200k_base, cl100k_base, p50k_base or r50k_base, all offline);
// "" is o200k_base. Stats.Encoding reports the one used.
func Measure(encoding string, before, after []byte) (Stats, error) {
	if encoding == "" {
		encoding = tokencount.Default
	}
	c, err := tokencount.Codec(encoding)
	if err != nil {
		return Stats{}, err
	}
	b, err := c.Count(string(before))
	if err != nil {
		return Stats{}, err
	}
	a, err := c.Count(string(after))
	if err != nil {
		return Stats{}, err
	}
	s := Stats{Encoding: encoding, TokensBefore: b, TokensAfter: a}
	if b > 0 {
		s.SavedPercent = math.Round(float64(b-a)/float64(b)*1000) / 10
	}
	return s, nil
}
