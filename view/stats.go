package view

import (
	"fmt"
	"math"
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// DefaultEncoding is the token encoding Stats uses when none is named.
const DefaultEncoding = "o200k_base"

// Stats compares the token cost of a context with that of its view.
type Stats struct {
	Encoding     string  `json:"encoding"`
	TokensBefore int     `json:"tokens_before"`
	TokensAfter  int     `json:"tokens_after"`
	SavedPercent float64 `json:"saved_percent"` // negative when the view is larger
}

var encodings = map[string]tokenizer.Encoding{
	"o200k_base":  tokenizer.O200kBase,
	"cl100k_base": tokenizer.Cl100kBase,
	"p50k_base":   tokenizer.P50kBase,
	"r50k_base":   tokenizer.R50kBase,
}

// Encodings lists the encodings Stats accepts. All work offline.
func Encodings() []string {
	return []string{"o200k_base", "cl100k_base", "p50k_base", "r50k_base"}
}

var (
	codecMu sync.Mutex
	codecs  = map[string]tokenizer.Codec{}
)

func codec(name string) (tokenizer.Codec, error) {
	if name == "" {
		name = DefaultEncoding
	}
	enc, ok := encodings[name]
	if !ok {
		return nil, fmt.Errorf("unknown encoding %q: use one of %v", name, Encodings())
	}
	codecMu.Lock()
	defer codecMu.Unlock()
	if c, ok := codecs[name]; ok {
		return c, nil
	}
	c, err := tokenizer.Get(enc)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", name, err)
	}
	codecs[name] = c
	return c, nil
}

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
