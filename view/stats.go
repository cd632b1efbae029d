package view

import (
	"math"

	"github.com/ctxkit/ctxkit/internal/tokencount"
	"github.com/tiktoken-go/tokenizer"
)

// DefaultEncoding is the token encoding Stats uses when none is named.
const DefaultEncoding = tokencount.Default

// Stats compares the token cost of a context with that of its view.
type Stats struct {
	Encoding     string  `json:"encoding"`
	TokensBefore int     `json:"tokens_before"`
	TokensAfter  int     `json:"tokens_after"`
	SavedPercent float64 `json:"saved_percent"` // negative when the view is larger
}

// Encodings lists the encodings Stats accepts. All work offline.
func Encodings() []string { return tokencount.Encodings() }

func codec(name string) (tokenizer.Codec, error) { return tokencount.Codec(name) }

// CountTokens counts the tokens of text in the named encoding ("" for the default).
func CountTokens(encoding string, text []byte) (int, error) {
	c, err := codec(encoding)
	if err != nil {
		return 0, err
	}
	return c.Count(string(text))
}

// Measure counts the tokens of a context and of its view, both as encoded
// JSON, and the share of tokens the view saves.
func Measure(encoding string, before, after []byte) (Stats, error) {
	if encoding == "" {
		encoding = DefaultEncoding
	}
	b, err := CountTokens(encoding, before)
	if err != nil {
		return Stats{}, err
	}
	a, err := CountTokens(encoding, after)
	if err != nil {
		return Stats{}, err
	}
	s := Stats{Encoding: encoding, TokensBefore: b, TokensAfter: a}
	if b > 0 {
		s.SavedPercent = math.Round(float64(b-a)/float64(b)*1000) / 10
	}
	return s, nil
}
