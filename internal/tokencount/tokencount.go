// Package tokencount gives ctxkit's token counts: the tiktoken encodings,
// all available offline, with one codec per encoding shared by the whole
// process (loading an encoding's table is costly; using it is not).
package tokencount

import (
	"fmt"
	"strings"
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// Default is the encoding used when none is named.
const Default = "o200k_base"

var encodings = map[string]tokenizer.Encoding{
	"o200k_base":  tokenizer.O200kBase,
	"cl100k_base": tokenizer.Cl100kBase,
	"p50k_base":   tokenizer.P50kBase,
	"r50k_base":   tokenizer.R50kBase,
}

// Encodings lists the encodings Codec accepts.
func Encodings() []string {
	return []string{"o200k_base", "cl100k_base", "p50k_base", "r50k_base"}
}

var (
	mu     sync.Mutex
	codecs = map[string]tokenizer.Codec{}
)

// Codec returns the named encoding's codec ("" for Default), loading it
// on first use.
func Codec(name string) (tokenizer.Codec, error) {
	if name == "" {
		name = Default
	}
	enc, ok := encodings[name]
	if !ok {
		return nil, fmt.Errorf("unknown encoding %q (use one of %s)", name, strings.Join(Encodings(), ", "))
	}
	mu.Lock()
	defer mu.Unlock()
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
