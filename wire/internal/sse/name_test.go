package sse

import "testing"

// TestKnownNamesAllocateNothing reads the event names the providers send
// on every stream as the reader does: none of them costs an allocation,
// and any other name is still read as written.
func TestKnownNamesAllocateNothing(t *testing.T) {
	known := []string{"message_start", "content_block_delta", "ping", "error",
		"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done",
		"response.output_item.done", "response.function_call_arguments.delta", "response.reasoning_summary_text.delta",
		"response.completed", "response.incomplete", "response.failed"}
	for _, n := range known {
		b := []byte(n)
		var got string
		if allocs := testing.AllocsPerRun(100, func() { got = name(b) }); allocs != 0 {
			t.Errorf("name(%q): %v allocations, want 0", n, allocs)
		}
		if got != n {
			t.Errorf("name(%q) = %q", n, got)
		}
	}
	if got := name([]byte("response.custom_event")); got != "response.custom_event" {
		t.Errorf("an unknown name read as %q", got)
	}
}
