package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/chat"
)

// commaRepeat is n copies of elem, comma-separated.
func commaRepeat(elem string, n int) string {
	return strings.TrimSuffix(strings.Repeat(elem+",", n), ",")
}

const tinyPart = `{"type":"text","text":"a"}`

// textParts is a JSON array of n tiny text parts.
func textParts(n int) string { return "[" + commaRepeat(tinyPart, n) + "]" }

// TestDecodeRequestLimits: a request at each of chat's limits is read, and
// what it decodes to is a canonical request chat.DecodeRequest reads
// back; one past a limit is refused with the field at fault named.
func TestDecodeRequestLimits(t *testing.T) {
	const max = chat.MaxBlocks
	user := func(n int) string { return `{"role":"user","content":` + textParts(n) + `}` }
	tool := `{"type":"function","function":{"name":"t","parameters":{"type":"object"}}}`
	call := `{"id":"c","type":"function","function":{"name":"t","arguments":"{}"}}`
	for _, c := range []struct {
		name, body, err string
	}{
		{"messages at the limit", `{"messages":[` + commaRepeat(`{"role":"user","content":"a"}`, chat.MaxMessages) + `]}`, ""},
		{"messages past the limit", `{"messages":[` + commaRepeat(`{"role":"user","content":"a"}`, chat.MaxMessages+1) + `]}`,
			"messages: more than 10000 messages"},
		{"parts at the limit", `{"messages":[` + user(max/2) + `,` + user(max/2) + `]}`, ""},
		{"parts past the limit", `{"messages":[` + user(max/2) + `,` + user(max/2+1) + `]}`,
			"messages[1].content[10000]: more than 20000 content blocks in the request"},
		{"system parts at the limit", `{"messages":[` + user(max-2) + `,{"role":"system","content":` + textParts(2) + `}]}`, ""},
		{"system parts past the limit", `{"messages":[` + user(max-1) + `,{"role":"system","content":` + textParts(2) + `}]}`,
			"messages[1].content[1]: more than 20000 content blocks in the request"},
		// System text counts though it is joined into a string.
		{"system strings past the limit", `{"messages":[` + user(max-1) + `,{"role":"developer","content":"x"},{"role":"system","content":"y"}]}`,
			"messages[2].content: more than 20000 content blocks in the request"},
		// A tool message is a tool_result block holding its parts.
		{"tool result parts at the limit", `{"messages":[{"role":"tool","tool_call_id":"c","content":` + textParts(max-1) + `}]}`, ""},
		{"tool result parts past the limit", `{"messages":[{"role":"tool","tool_call_id":"c","content":` + textParts(max) + `}]}`,
			"messages[0].content[19999]: more than 20000 content blocks in the request"},
		{"tool results past the limit", `{"messages":[` + user(max-1) + `,{"role":"tool","tool_call_id":"c","content":"a"},{"role":"tool","tool_call_id":"d","content":"b"}]}`,
			"messages[2]: more than 20000 content blocks in the request"},
		// A user string joining tool results becomes a block.
		{"user string after tool results", `{"messages":[` + user(max-1) + `,{"role":"tool","tool_call_id":"c","content":"a"},{"role":"user","content":"b"}]}`,
			"messages[2].content: more than 20000 content blocks in the request"},
		{"tool calls at the limit", `{"messages":[{"role":"assistant","content":null,"tool_calls":[` + commaRepeat(call, max) + `]}]}`, ""},
		{"tool calls past the limit", `{"messages":[{"role":"assistant","content":null,"tool_calls":[` + commaRepeat(call, max+1) + `]}]}`,
			"messages[0].tool_calls[20000]: more than 20000 content blocks in the request"},
		// Reasoning and string content beside tool calls are blocks too.
		{"assistant blocks at the limit", `{"messages":[` + user(max-3) + `,{"role":"assistant","reasoning_content":"r","content":"a","tool_calls":[` + call + `]}]}`, ""},
		{"assistant blocks past the limit", `{"messages":[` + user(max-2) + `,{"role":"assistant","reasoning_content":"r","content":"a","tool_calls":[` + call + `]}]}`,
			"messages[1].content: more than 20000 content blocks in the request"},
		{"tools at the limit", `{"messages":[],"tools":[` + commaRepeat(tool, chat.MaxTools) + `]}`, ""},
		{"tools past the limit", `{"messages":[],"tools":[` + commaRepeat(tool, chat.MaxTools+1) + `]}`,
			"tools: more than 1000 tools"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := DecodeRequest([]byte(c.body))
			if c.err != "" {
				var ce *chat.Error
				if !errors.As(err, &ce) || err.Error() != c.err {
					t.Fatalf("error %v, want %s", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := chat.DecodeRequest(out); err != nil {
				t.Fatalf("the canonical request is refused: %v", err)
			}
		})
	}
}

// TestDecodeHugeRequestCheaply: a body near the gateway's 32 MiB limit,
// made of tiny text parts, is refused without decoding it. Before the
// limits, DecodeRequest read the first body below in ~5.3 s with 3300 MiB
// allocated (a json.Decoder, a copy of each value, a map and paths per
// part, at every level). Now objects and arrays are split without copies
// and the array at fault is split only up to the element past the limit:
// about 2 MiB when the first array is too long, 26 MiB when it decodes
// nearly chat.MaxBlocks parts first (the last shape). The bound, 64 MiB,
// is that worst case with room to spare, and a fiftieth of what the first
// shape cost.
func TestDecodeHugeRequestCheaply(t *testing.T) {
	const size = 31 << 20
	n := size / (len(tinyPart) + 1)
	// many is tiny parts as messages of per parts each, filling size.
	many := func(per int) []byte {
		msg := `{"role":"user","content":` + textParts(per) + `}`
		return []byte(`{"model":"m","messages":[` + commaRepeat(msg, size/len(msg)) + `]}`)
	}
	for _, c := range []struct {
		name string
		body []byte
		err  string
	}{
		{"one message", []byte(`{"model":"m","messages":[{"role":"user","content":` + textParts(n) + `}]}`),
			"messages[0].content[20000]: more than 20000 content blocks in the request"},
		{"in a tool message", []byte(`{"model":"m","messages":[{"role":"tool","tool_call_id":"c","content":` + textParts(n) + `}]}`),
			"messages[0].content[19999]: more than 20000 content blocks in the request"},
		{"in a system message", []byte(`{"model":"m","messages":[{"role":"system","content":` + textParts(n) + `}]}`),
			"messages[0].content[20000]: more than 20000 content blocks in the request"},
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

// FuzzScannerAgreesWithDecoder: fieldsOf and arrayOf, which split JSON
// with a scanner, read any input as encoding/json's decoder does (the way
// they read it before): the same fields and keys, or the same error.
func FuzzScannerAgreesWithDecoder(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":[1,{"c":"]"}],"d":"x\"y"}`, `{"b":1,"a":2,"b":3}`, ` { "\u0061" : null , "\ud800":true} `,
		"{\"k\":\"\xff\"}", `{}`, `{"a":}`, `{"a":1}x`, `[1, "a", {"b":[]}, [null]]`, `[]`, `[1,]`, `["\\",2.5e3,-0]`, `{"a":1,"a":1,"b":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, keys, err := fieldsOf(data, "p")
		rm, rkeys, rerr := decoderFieldsOf(data, "p")
		if (err == nil) != (rerr == nil) || (err != nil && err.Error() != rerr.Error()) {
			t.Fatalf("fieldsOf errors differ:\nscanner: %v\ndecoder: %v", err, rerr)
		}
		if err == nil && (!reflect.DeepEqual(keys, rkeys) || len(m) != len(rm)) {
			t.Fatalf("keys differ: %q, %q", keys, rkeys)
		}
		for k, v := range rm {
			if !bytes.Equal(m[k], v) {
				t.Fatalf("%q: %s, decoder %s", k, m[k], v)
			}
		}
		a, err := arrayOf(data, "p")
		var ra []json.RawMessage
		rerr = nil
		if trimmed := bytes.TrimSpace(data); len(trimmed) == 0 || trimmed[0] != '[' || json.Unmarshal(trimmed, &ra) != nil {
			rerr = fail("p", "must be an array")
		}
		if (err == nil) != (rerr == nil) || (err != nil && err.Error() != rerr.Error()) {
			t.Fatalf("arrayOf errors differ:\nscanner: %v\ndecoder: %v", err, rerr)
		}
		if err == nil && (len(a) != len(ra)) {
			t.Fatalf("%d elements, decoder %d", len(a), len(ra))
		}
		for i := range ra {
			if !bytes.Equal(a[i], ra[i]) {
				t.Fatalf("element %d: %s, decoder %s", i, a[i], ra[i])
			}
		}
	})
}

// decoderFieldsOf is fieldsOf as it was, on encoding/json's decoder.
func decoderFieldsOf(data []byte, path string) (map[string]json.RawMessage, []string, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, nil, fail(path, "must be a JSON object")
	}
	if !json.Valid(data) {
		var v any
		return nil, nil, fail(path, "not valid JSON: %v", json.Unmarshal(data, &v))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return nil, nil, fail(path, "%v", err)
	}
	m := map[string]json.RawMessage{}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fail(path, "%v", err)
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, fail(path, "%v", err)
		}
		if _, dup := m[k]; dup {
			return nil, nil, fail(path+"."+k, "given twice")
		}
		m[k] = v
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return m, keys, nil
}
