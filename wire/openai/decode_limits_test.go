package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/internal/reqjson"
)

// commaRepeat is n copies of elem, comma-separated.
func commaRepeat(elem string, n int) string {
	return strings.TrimSuffix(strings.Repeat(elem+",", n), ",")
}

const tinyPart = `{"type":"text","text":"a"}`

// textParts is a JSON array of n tiny text parts.
func textParts(n int) string { return "[" + commaRepeat(tinyPart, n) + "]" }

// unknownKeys is n members "<prefix>0000000":<value> ... (keys sorted as
// numbered), each after a comma: to be put after an object's own.
func unknownKeys(prefix string, n int, value string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `,"%s%07d":%s`, prefix, i, value)
	}
	return b.String()
}

// partsOfUnknown is a JSON array of tiny text parts, the ith with per[i]
// unknown fields.
func partsOfUnknown(per ...int) string {
	parts := make([]string, len(per))
	for i, n := range per {
		parts[i] = `{"type":"text","text":"a"` + unknownKeys("x", n, "0") + `}`
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// repeat is n copies of v.
func repeat(v, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// TestDecodeRequestLimits: a request at each of chat's limits is read, and
// what it decodes to is a canonical request chat.DecodeRequest reads
// back; one past a limit is refused with the field at fault named.
func TestDecodeRequestLimits(t *testing.T) {
	const max = chat.MaxBlocks
	user := func(n int) string { return `{"role":"user","content":` + textParts(n) + `}` }
	tool := `{"type":"function","function":{"name":"t","parameters":{"type":"object"}}}`
	call := `{"id":"c","type":"function","function":{"name":"t","arguments":"{}"}}`
	// unknown is a request of the unknown fields of the request (top,
	// read first), of a user message (msg, read before its parts), of 100
	// text parts of 99 each (9900 in all), of an image_url object (img)
	// and of a tool.
	unknown := func(top, msg, img, tool int) string {
		return `{"messages":[{"role":"user","content":` + strings.TrimSuffix(partsOfUnknown(repeat(99, 100)...), "]") +
			`,{"type":"image_url","image_url":{"url":"u"` + unknownKeys("i", img, "0") + `}}]` + unknownKeys("m", msg, "0") + `}],` +
			`"tools":[{"type":"function","function":{"name":"t"}` + unknownKeys("t", tool, "0") + `}]` + unknownKeys("x", top, "0") + `}`
	}
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
		{"stop sequences at the limit", `{"messages":[],"stop":[` + commaRepeat(`"s"`, chat.MaxStopSequences) + `]}`, ""},
		{"stop sequences past the limit", `{"messages":[],"stop":[` + commaRepeat(`"s"`, chat.MaxStopSequences+1) + `]}`,
			"stop: more than 1000 stop sequences"},
		{"unknown fields at the limit", unknown(25, 25, 25, 25), ""},
		{"unknown fields past the limit in the request", unknown(10001, 0, 0, 0),
			"more than 10000 unknown fields in the request"},
		{"unknown fields past the limit in a message", unknown(25, 9976, 0, 0),
			"messages[0]: more than 10000 unknown fields in the request"},
		{"unknown fields past the limit in a text part", `{"messages":[{"role":"user","content":` + partsOfUnknown(append(repeat(99, 100), 101)...) + `}]}`,
			"messages[0].content[100]: more than 10000 unknown fields in the request"},
		{"unknown fields past the limit in an image_url", unknown(0, 0, 101, 0),
			"messages[0].content[100].image_url: more than 10000 unknown fields in the request"},
		{"unknown fields past the limit in a tool", unknown(25, 25, 25, 26),
			"tools[0]: more than 10000 unknown fields in the request"},
		// Dropped fields count as well as kept ones.
		{"null fields past the limit", `{"messages":[]` + unknownKeys("x", chat.MaxExtraFields+1, "null") + `}`,
			"more than 10000 unknown fields in the request"},
		{"fields of an unknown part past the limit", `{"messages":[{"role":"user","content":[{"type":"input_audio"` + unknownKeys("x", chat.MaxExtraFields, "0") + `},{"type":"input_audio","x":1}]}]}`,
			"messages[0].content[1]: more than 10000 unknown fields in the request"},
		// An object of more members than the budget has room for is
		// refused before its members are read.
		{"one part of too many unknown fields", `{"messages":[{"role":"user","content":` + partsOfUnknown(chat.MaxExtraFields+1) + `}]}`,
			"messages[0].content[0]: more than 10000 unknown fields in the request"},
		{"a tool call of too many unknown fields after others", `{"messages":[{"role":"user","content":` + partsOfUnknown(9000) + `},` +
			`{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"t"}` + unknownKeys("x", 1100, "0") + `}]}]}`,
			"messages[1].tool_calls[0]: more than 10000 unknown fields in the request"},
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

// unknownParts is a request of about size bytes: messages of 100 tiny
// text parts of per unknown fields each.
func unknownParts(size, per int) []byte {
	msg := `{"role":"user","content":` + partsOfUnknown(repeat(per, 100)...) + `}`
	return []byte(`{"model":"m","messages":[` + commaRepeat(msg, size/len(msg)) + `]}`)
}

// TestDecodeHugeRequestCheaply: a body near the gateway's 32 MiB limit,
// made of tiny text parts, is refused without decoding it. Before the
// limits, DecodeRequest read the first body below in ~5.3 s with 3300 MiB
// allocated (a json.Decoder, a copy of each value, a map and paths per
// part, at every level). Now objects and arrays are split without copies
// and the array at fault is split only up to the element past the limit:
// about 2 MiB when the first array is too long, 26 MiB when it decodes
// nearly chat.MaxBlocks parts first (the "120 per message" shape). The
// bound, 64 MiB, is that worst case with room to spare, and a fiftieth of
// what the first shape cost.
//
// Parts of many unknown fields (dropped, in text parts) and a long stop
// array, read whole before chat.MaxExtraFields and chat.MaxStopSequences,
// took 437 MiB (the fields of each part split into a map), 609 MiB
// (those of one part) and 3499 MiB (a copy and a string per element); now
// 540 KiB, 1 KiB and 58 KiB.
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
		{"unknown fields in parts", unknownParts(size, 300),
			"messages[0].content[33]: more than 10000 unknown fields in the request"},
		{"unknown fields in one part", []byte(`{"model":"m","messages":[{"role":"user","content":` + partsOfUnknown(size/13) + `}]}`),
			"messages[0].content[0]: more than 10000 unknown fields in the request"},
		{"stop sequences", []byte(`{"model":"m","messages":[],"stop":[` + commaRepeat(`""`, size/3) + `]}`),
			"stop: more than 1000 stop sequences"},
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

// FuzzScannerAgreesWithDecoder: fieldsOf and arrayAtMost, which split JSON
// with strictjson, read any input as encoding/json's decoder does (the way
// they read it before): the same fields in the same order, or the same
// error.
func FuzzScannerAgreesWithDecoder(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":[1,{"c":"]"}],"d":"x\"y"}`, `{"b":1,"a":2,"b":3}`, ` { "\u0061" : null , "\ud800":true} `,
		"{\"k\":\"\xff\"}", `{}`, `{"a":}`, `{"a":1}x`, `[1, "a", {"b":[]}, [null]]`, `[]`, `[1,]`, `["\\",2.5e3,-0]`, `{"a":1,"a":1,"b":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		f, err := fieldsOf(data, "p")
		rm, rkeys, rerr := decoderFieldsOf(data, "p")
		if (err == nil) != (rerr == nil) || (err != nil && err.Error() != rerr.Error()) {
			t.Fatalf("fieldsOf errors differ:\nscanner: %v\ndecoder: %v", err, rerr)
		}
		var keys []string
		for _, m := range f {
			keys = append(keys, m.Key)
		}
		if err == nil && !reflect.DeepEqual(keys, rkeys) {
			t.Fatalf("keys differ: %q, %q", keys, rkeys)
		}
		for k, v := range rm {
			if got := reqjson.Get(f, k); !bytes.Equal(got, v) {
				t.Fatalf("%q: %s, decoder %s", k, got, v)
			}
		}
		a, err := arrayAtMost(data, "p", math.MaxInt)
		var ra []json.RawMessage
		rerr = nil
		if trimmed := bytes.TrimSpace(data); len(trimmed) == 0 || trimmed[0] != '[' || json.Unmarshal(trimmed, &ra) != nil {
			rerr = reqjson.Fail("p", "must be an array")
		}
		if (err == nil) != (rerr == nil) || (err != nil && err.Error() != rerr.Error()) {
			t.Fatalf("arrayAtMost errors differ:\nscanner: %v\ndecoder: %v", err, rerr)
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
		return nil, nil, reqjson.Fail(path, "must be a JSON object")
	}
	if !json.Valid(data) {
		var v any
		return nil, nil, reqjson.Fail(path, "not valid JSON: %v", json.Unmarshal(data, &v))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return nil, nil, reqjson.Fail(path, "%v", err)
	}
	m := map[string]json.RawMessage{}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, reqjson.Fail(path, "%v", err)
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, reqjson.Fail(path, "%v", err)
		}
		if _, dup := m[k]; dup {
			return nil, nil, reqjson.Fail(path+"."+k, "given twice")
		}
		m[k] = v
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return m, keys, nil
}
