package wiretest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
)

// Conversation is a canonical request of n messages as an agent builds
// them: a system prompt, tools, user turns with text and (every fifth) an
// image, assistant turns with text, thinking and tool calls, and tool
// results (some with an image).
func Conversation(n int) chat.Request {
	img := b64(strings.Repeat("\x89PNG image bytes ", 2048)) // ~45 KB of base64
	var b strings.Builder
	b.WriteString(`{"model":"m","max_tokens":8192,"system":"You are a careful coding agent. Follow the repository's conventions.",
		"tools":[{"name":"read_file","description":"Read a file","input_schema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}},
		{"name":"run","description":"Run a command","input_schema":{"type":"object","properties":{"cmd":{"type":"string"},"args":{"type":"array","items":{"type":"string"}}}}}],
		"messages":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		switch {
		case i%2 == 0 && i > 0 && (i/2)%2 == 1:
			// a user turn answering the previous tool call
			fmt.Fprintf(&b, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":[{"type":"text","text":"package main\n\nfunc main() { println(%d) }\n"}`, i-1, i)
			if i%10 == 2 {
				fmt.Fprintf(&b, `,{"type":"image","source":{"type":"base64","media_type":"image/png","data":"%s"}}`, img)
			}
			b.WriteString(`]},{"type":"text","text":"Carry on."}]}`)
		case i%2 == 0:
			fmt.Fprintf(&b, `{"role":"user","content":[{"type":"text","text":"Step %d: look at the failing test and explain the cause in a few sentences, then fix it."}`, i)
			if i%5 == 0 {
				fmt.Fprintf(&b, `,{"type":"image","source":{"type":"base64","media_type":"image/png","data":"%s"}}`, img)
			}
			b.WriteString(`]}`)
		case (i/2)%2 == 0:
			fmt.Fprintf(&b, `{"role":"assistant","content":[{"type":"thinking","thinking":"The test fails because the handler returns early. Check %d.","signature":"sig%d"},
				{"type":"text","text":"I will read the file first."},
				{"type":"tool_use","id":"toolu_%d","name":"read_file","input":{"path":"cmd/main_%d.go"}}]}`, i, i, i, i)
		default:
			fmt.Fprintf(&b, `{"role":"assistant","content":"Done with step %d: the handler no longer returns before writing the response."}`, i)
		}
	}
	b.WriteString(`]}`)
	req, err := chat.DecodeRequest([]byte(b.String()))
	if err != nil {
		panic(err)
	}
	return req
}

// Bench measures converting Conversation(200) with enc and encoding the
// result to JSON, against json.Marshal of the canonical request in the
// same run, and reports the ratio as "x-canonical" (target: at most 1.5).
func Bench(b *testing.B, enc Encoder) {
	req := Conversation(200)
	if _, err := json.Marshal(req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var convert, canonical int64
	for b.Loop() {
		t0 := nanotime()
		if _, err := json.Marshal(req); err != nil {
			b.Fatal(err)
		}
		t1 := nanotime()
		out, _, err := enc(req, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(out); err != nil {
			b.Fatal(err)
		}
		t2 := nanotime()
		canonical += t1 - t0
		convert += t2 - t1
	}
	b.ReportMetric(float64(convert)/float64(b.N)/1e6, "convert-ms")
	b.ReportMetric(float64(canonical)/float64(b.N)/1e6, "canonical-ms")
	b.ReportMetric(float64(convert)/float64(canonical), "x-canonical")
}

// BenchDecodeRequest measures decode, a request decoder, on conversation
// (an agent's conversation in its dialect: long strings, images, tool
// calls) and on a request of 1000 user messages of 5 short text blocks
// each, and a name, which the canonical and the OpenAI shape read alike:
// there the cost per object and per key shows.
func BenchDecodeRequest(b *testing.B, decode func([]byte) (chat.Request, error), conversation []byte) {
	var small strings.Builder
	small.WriteString(`{"model":"m","max_tokens":1024,"messages":[`)
	for i := range 1000 {
		if i > 0 {
			small.WriteString(",")
		}
		small.WriteString(`{"role":"user","name":"u` + strconv.Itoa(i) + `","content":[`)
		for j := range 5 {
			if j > 0 {
				small.WriteString(",")
			}
			small.WriteString(`{"type":"text","text":"part ` + strconv.Itoa(j) + ` of turn ` + strconv.Itoa(i) + `"}`)
		}
		small.WriteString(`]}`)
	}
	small.WriteString(`]}`)
	for _, c := range []struct {
		name string
		body []byte
	}{{"conversation", conversation}, {"small-blocks", []byte(small.String())}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decode(c.body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
