package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// commaRepeat is n copies of elem, comma-separated.
func commaRepeat(elem string, n int) string {
	return strings.TrimSuffix(strings.Repeat(elem+",", n), ",")
}

const tinyBlock = `{"type":"text","text":"a"}`

// textBlocks is a JSON array of n tiny text blocks.
func textBlocks(n int) string { return "[" + commaRepeat(tinyBlock, n) + "]" }

// unknownKeys is n members "<prefix>0000000":0 ... (keys sorted as
// numbered), each after a comma: to be put after an object's own.
func unknownKeys(prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `,"%s%07d":0`, prefix, i)
	}
	return b.String()
}

// blocksOfUnknown is a JSON array of tiny text blocks, the ith with
// per[i] unknown fields.
func blocksOfUnknown(per ...int) string {
	blocks := make([]string, len(per))
	for i, n := range per {
		blocks[i] = `{"type":"text","text":"a"` + unknownKeys("x", n) + `}`
	}
	return "[" + strings.Join(blocks, ",") + "]"
}

// repeat is n copies of v.
func repeat(v, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// TestDecodeLimits: a request at each limit is read; one past it is
// refused with the field at fault named, by the fast scanner and by the
// encoding/json path alike.
func TestDecodeLimits(t *testing.T) {
	tool := `{"name":"t","input_schema":{"type":"object"}}`
	userMsg := `{"role":"user","content":"a"}`
	toolResult := func(n int) string {
		return `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":` + textBlocks(n) + `}]}`
	}
	// unknown is a request of a message of 100 blocks of 99 unknown
	// fields each (9900 in all) and of the unknown fields of the request
	// (top), the message (msg), an image source (src) and a tool.
	unknown := func(top, msg, src, tool int) string {
		return `{"messages":[{"role":"user","content":` + strings.TrimSuffix(blocksOfUnknown(repeat(99, 100)...), "]") +
			`,{"type":"image","source":{"type":"url","url":"u"` + unknownKeys("s", src) + `}}]` + unknownKeys("m", msg) + `}],` +
			`"tools":[{"name":"t","input_schema":{}` + unknownKeys("t", tool) + `}]` + unknownKeys("x", top) + `}`
	}
	for _, c := range []struct {
		name, body, err string
	}{
		{"messages at the limit", `{"messages":[` + commaRepeat(userMsg, MaxMessages) + `]}`, ""},
		{"messages past the limit", `{"messages":[` + commaRepeat(userMsg, MaxMessages+1) + `]}`,
			"messages: more than 10000 messages"},
		{"blocks at the limit", `{"messages":[{"role":"user","content":` + textBlocks(MaxBlocks/2) + `},{"role":"user","content":` + textBlocks(MaxBlocks/2) + `}]}`, ""},
		{"blocks past the limit", `{"messages":[{"role":"user","content":` + textBlocks(MaxBlocks/2) + `},{"role":"user","content":` + textBlocks(MaxBlocks/2+1) + `}]}`,
			"messages[1].content[10000]: more than 20000 content blocks in the request"},
		{"system blocks at the limit", `{"system":` + textBlocks(1) + `,"messages":[{"role":"user","content":` + textBlocks(MaxBlocks-1) + `}]}`, ""},
		// messages are read before system (keys in order), so the system
		// prompt's second block is the one too many.
		{"system blocks past the limit", `{"system":` + textBlocks(2) + `,"messages":[{"role":"user","content":` + textBlocks(MaxBlocks-1) + `}]}`,
			"system[1]: more than 20000 content blocks in the request"},
		{"nested blocks at the limit", `{"messages":[` + toolResult(MaxBlocks-1) + `]}`, ""},
		{"nested blocks past the limit", `{"messages":[` + toolResult(MaxBlocks) + `]}`,
			"messages[0].content[0].content[19999]: more than 20000 content blocks in the request"},
		{"nested blocks after others", `{"messages":[{"role":"user","content":` + textBlocks(MaxBlocks-2) + `},` + toolResult(2) + `]}`,
			"messages[1].content[0].content[1]: more than 20000 content blocks in the request"},
		{"tools at the limit", `{"messages":[],"tools":[` + commaRepeat(tool, MaxTools) + `]}`, ""},
		{"tools past the limit", `{"messages":[],"tools":[` + commaRepeat(tool, MaxTools+1) + `]}`,
			"tools: more than 1000 tools"},
		{"stop sequences at the limit", `{"messages":[` + userMsg + `],"stop_sequences":[` + commaRepeat(`"s"`, MaxStopSequences) + `]}`, ""},
		{"stop sequences past the limit", `{"messages":[` + userMsg + `],"stop_sequences":[` + commaRepeat(`"s"`, MaxStopSequences+1) + `]}`,
			"stop_sequences: more than 1000 stop sequences"},
		// Blocks are read before the other fields of their message, and
		// messages before the tools and the request's own fields.
		{"unknown fields at the limit", unknown(25, 25, 25, 25), ""},
		{"unknown fields past the limit in the request", unknown(26, 25, 25, 25),
			"more than 10000 unknown fields in the request"},
		{"unknown fields past the limit in a tool", unknown(0, 25, 25, 51),
			"tools[0]: more than 10000 unknown fields in the request"},
		{"unknown fields past the limit in a message", unknown(0, 76, 25, 0),
			"messages[0]: more than 10000 unknown fields in the request"},
		{"unknown fields past the limit in a source", unknown(0, 0, 101, 0),
			"messages[0].content[100].source: more than 10000 unknown fields in the request"},
		{"unknown fields past the limit in a block", `{"messages":[{"role":"user","content":` + blocksOfUnknown(append(repeat(99, 100), 101)...) + `}]}`,
			"messages[0].content[100]: more than 10000 unknown fields in the request"},
		// An object of more members than the budget has room for is
		// refused before its members are read.
		{"one block of too many unknown fields", `{"messages":[{"role":"user","content":` + blocksOfUnknown(MaxExtraFields+1) + `}]}`,
			"messages[0].content[0]: more than 10000 unknown fields in the request"},
		{"a block of too many unknown fields after others", `{"messages":[{"role":"user","content":` + blocksOfUnknown(9000, 1100) + `}]}`,
			"messages[0].content[1]: more than 10000 unknown fields in the request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := []byte(c.body)
			if !json.Valid(data) {
				t.Fatal("test body is not JSON")
			}
			for _, rd := range []reader{{valid: true}, {valid: false}} {
				r, err := rd.request(data)
				if c.err == "" {
					if err != nil {
						t.Fatalf("valid %v: %v", rd.valid, err)
					}
					if len(r.Messages) == 0 && len(r.Tools) == 0 {
						t.Fatalf("valid %v: nothing read", rd.valid)
					}
					continue
				}
				var ce *Error
				if !errors.As(err, &ce) || err.Error() != c.err {
					t.Fatalf("valid %v: error %v, want %s", rd.valid, err, c.err)
				}
			}
			if _, err := DecodeRequest(data); (err == nil) != (c.err == "") {
				t.Fatalf("DecodeRequest: %v", err)
			}
		})
	}
}

// unknownBlocks is a request of about size bytes: messages of 100 tiny
// text blocks of per unknown fields each.
func unknownBlocks(size, per int) []byte {
	msg := `{"role":"user","content":` + blocksOfUnknown(repeat(per, 100)...) + `}`
	return []byte(`{"model":"m","messages":[` + commaRepeat(msg, size/len(msg)) + `]}`)
}

// TestDecodeHugeRequestCheaply: a body near the gateway's 32 MiB limit,
// made of tiny text blocks, is refused without decoding it. Before the
// limits, DecodeRequest read the body below in ~2.8 s with 1423 MiB
// allocated (a Block, a map and paths per block). Now it splits at most
// MaxBlocks+1 elements of the array at fault and decodes at most MaxBlocks
// blocks: about 2 MiB when the first array is too long, 12 MiB when it
// decodes nearly MaxBlocks blocks first (the "120 per message" shape).
// The bound, 64 MiB, is that worst case with room to spare, and a
// twentieth of what the first shape cost.
//
// Blocks of many unknown fields and a long stop_sequences array, read
// whole before MaxExtraFields and MaxStopSequences, took 582 MiB (a map
// entry and a copy per field), 594 MiB (the members of one block and the
// map) and 1050 MiB (the decoded slice growing); now 2 MiB (the fields of
// 33 blocks kept), 1 KiB and 58 KiB.
func TestDecodeHugeRequestCheaply(t *testing.T) {
	const size = 31 << 20
	n := size / (len(tinyBlock) + 1)
	// many is tiny blocks as messages of per blocks each, filling size.
	many := func(per int) []byte {
		msg := `{"role":"user","content":` + textBlocks(per) + `}`
		return []byte(`{"model":"m","messages":[` + commaRepeat(msg, size/len(msg)) + `]}`)
	}
	for _, c := range []struct {
		name string
		body []byte
		err  string
	}{
		{"one message", []byte(`{"model":"m","messages":[{"role":"user","content":` + textBlocks(n) + `}]}`),
			"messages[0].content[20000]: more than 20000 content blocks in the request"},
		{"in a tool result", []byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":` + textBlocks(n) + `}]}]}`),
			"messages[0].content[0].content[19999]: more than 20000 content blocks in the request"},
		{"in the system prompt", []byte(`{"model":"m","system":` + textBlocks(n) + `,"messages":[]}`),
			"system[20000]: more than 20000 content blocks in the request"},
		{"two per message", many(2), "messages: more than 10000 messages"},
		{"120 per message", many(120), "messages[166].content[80]: more than 20000 content blocks in the request"},
		{"unknown fields in blocks", unknownBlocks(size, 300),
			"messages[0].content[33]: more than 10000 unknown fields in the request"},
		{"unknown fields in one block", []byte(`{"model":"m","messages":[{"role":"user","content":` + blocksOfUnknown(size/13) + `}]}`),
			"messages[0].content[0]: more than 10000 unknown fields in the request"},
		{"stop sequences", []byte(`{"model":"m","messages":[],"stop_sequences":[` + commaRepeat(`""`, size/3) + `]}`),
			"stop_sequences: more than 1000 stop sequences"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if len(c.body) < 30<<20 {
				t.Fatalf("body of %d bytes", len(c.body))
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := DecodeRequest(c.body)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d MiB body: %v, %d KiB in %d allocations", len(c.body)>>20, took, alloc>>10, after.Mallocs-before.Mallocs)
			if err == nil || err.Error() != c.err {
				t.Fatalf("error %v, want %s", err, c.err)
			}
			if alloc > 64<<20 {
				t.Fatalf("%d MiB allocated, want at most 64", alloc>>20)
			}
		})
	}
}
