package openai_test

import (
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/wire/openai"
)

// TestToolArgumentsBounded: a tool call whose arguments grow past
// MaxArguments ends the stream with an error instead of growing memory.
func TestToolArgumentsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":""}}]}}]}` + "\n\n")
	frag := strings.Repeat("x", 1<<20)
	for i := 0; i <= openai.MaxArguments>>20; i++ {
		b.WriteString(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"` + frag + `"}}]}}]}` + "\n\n")
	}
	var last error
	for _, err := range openai.DecodeStream(strings.NewReader(b.String())) {
		if err != nil {
			last = err
		}
	}
	if last == nil || !strings.Contains(last.Error(), "arguments larger than") {
		t.Fatalf("got %v", last)
	}
}
