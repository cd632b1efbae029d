// Package sdktest runs the official provider SDKs (openai-go, the
// Anthropic Go SDK, Google's genai) against ctxkit's gateway, started in
// the test process on loopback, in front of the strict fake upstreams of
// package fakeup: each SDK call must work through every upstream type, and
// every request the gateway sends must be one the real API would accept.
//
// It is a module of its own so that the SDKs stay out of ctxkit's go.mod;
// it builds ctxkit from the directory above (replace directive).
package sdktest
