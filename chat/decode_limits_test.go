package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"runtime"
	"strconv"
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

// TestDecodeLimits: a request at each limit is read; one past it is
// refused with the field at fault named, by the fast scanner and by the
// encoding/json path alike.
func TestDecodeLimits(t *testing.T) {
	tool := `{"name":"t","input_schema":{"type":"object"}}`
	userMsg := `{"role":"user","content":"a"}`
	toolResult := func(n int) string {
		return `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":` + textBlocks(n) + `}]}`
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

// TestDecodeHugeRequestCheaply: a body near the gateway's 32 MiB limit,
// made of tiny text blocks, is refused without decoding it. Before the
// limits, DecodeRequest read the body below in ~2.8 s with 1423 MiB
// allocated (a Block, a map and paths per block). Now it splits at most
// MaxBlocks+1 elements of the array at fault and decodes at most MaxBlocks
// blocks: about 2 MiB when the first array is too long, 12 MiB when it
// decodes nearly MaxBlocks blocks first (the last shape). The bound,
// 64 MiB, is that worst case with room to spare, and a twentieth of what
// the first shape cost.
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

// TestSplitObjectLarge: an object of more members than splitObject
// gathers on the stack is read whole, sorted, and its first key given
// twice found in the order of the text.
func TestSplitObjectLarge(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("{")
	for i := 40; i > 0; i-- {
		if i < 40 {
			b.WriteString(",")
		}
		b.WriteString(`"k` + strconv.Itoa(i) + `":` + strconv.Itoa(i))
	}
	b.WriteString("}")
	fields, _, hasDup, err := splitObject(b.Bytes())
	if err != nil || hasDup || len(fields) != 40 {
		t.Fatalf("%d fields, %v, %v", len(fields), hasDup, err)
	}
	for i := 1; i < len(fields); i++ {
		if fields[i-1].key >= fields[i].key {
			t.Fatalf("not sorted: %q before %q", fields[i-1].key, fields[i].key)
		}
	}
	if v, ok := fields.get("k17"); !ok || string(v) != "17" {
		t.Fatalf("k17: %s %v", v, ok)
	}
	// k30 is repeated before k5 is, though k5 sorts first.
	data := bytes.Replace(b.Bytes(), []byte(`"k2":`), []byte(`"k30":`), 1)
	data = bytes.Replace(data, []byte(`"k1":`), []byte(`"k5":`), 1)
	if _, dup, hasDup, err := splitObject(data); err != nil || !hasDup || dup != "k30" {
		t.Fatalf("dup %q %v %v", dup, hasDup, err)
	}
	if _, dup, hasDup, _ := splitObject([]byte(`{"b":1,"a":2,"b":3,"a":4}`)); !hasDup || dup != "b" {
		t.Fatalf("dup %q %v", dup, hasDup)
	}
}
