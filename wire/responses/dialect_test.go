package responses_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/responses"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

// echoed is the client request the dialect tests answer.
func echoed(t *testing.T) *chat.Request {
	t.Helper()
	req, err := responses.DecodeRequest([]byte(`{"model":"gpt-5","input":"hi","instructions":"Be brief.",
		"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"},"strict":true}],
		"reasoning":{"effort":"high","summary":"detailed"},"store":false,"metadata":{"k":"v"},"max_output_tokens":500}`))
	if err != nil {
		t.Fatal(err)
	}
	return &req
}

// sseEvent is one event of a Responses stream as a client reads it.
type sseEvent struct {
	name string
	data map[string]any
}

// readEvents splits a Responses stream and checks its framing as the
// SDKs read it: every event has an event line naming its data's type,
// sequence numbers count from 0, a terminal event comes last, and
// "data: [DONE]" ends the stream.
func readEvents(t *testing.T, stream []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	sc := bufio.NewScanner(bytes.NewReader(stream))
	sc.Buffer(nil, 1<<26)
	var name string
	done := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case strings.HasPrefix(line, "event: "):
			name = line[len("event: "):]
		case line == "data: [DONE]":
			done = true
		case strings.HasPrefix(line, "data: "):
			var data map[string]any
			if err := json.Unmarshal([]byte(line[len("data: "):]), &data); err != nil {
				t.Fatalf("event %d: %v", len(out), err)
			}
			if data["type"] != name {
				t.Errorf("event %d: event line %q, type %v", len(out), name, data["type"])
			}
			if n, _ := data["sequence_number"].(float64); int(n) != len(out) {
				t.Errorf("event %d: sequence_number %v", len(out), data["sequence_number"])
			}
			out = append(out, sseEvent{name, data})
			name = ""
		default:
			t.Errorf("unexpected line %q", line)
		}
	}
	if !done {
		t.Errorf("the stream does not end with data: [DONE]")
	}
	if len(out) < 3 || out[0].name != "response.created" || out[1].name != "response.in_progress" {
		t.Fatalf("the stream does not begin with response.created and response.in_progress")
	}
	switch out[len(out)-1].name {
	case "response.completed", "response.incomplete", "response.failed":
	default:
		t.Errorf("the last event is %s", out[len(out)-1].name)
	}
	accumulate(t, out)
	return out
}

// accumulate builds the response from the events as the openai SDK's
// ResponseStream does, with its checks: an item, a content part or a
// summary part is added at the index after the last one, and every other
// event names an item, part and summary that exist and are of its kind.
func accumulate(t *testing.T, events []sseEvent) {
	t.Helper()
	type item struct {
		typ            string
		parts, summary int
	}
	var items []*item
	num := func(ev sseEvent, k string) int {
		n, ok := ev.data[k].(float64)
		if !ok {
			t.Fatalf("%s: no %s", ev.name, k)
		}
		return int(n)
	}
	get := func(ev sseEvent, typ string) *item {
		i := num(ev, "output_index")
		if i >= len(items) {
			t.Fatalf("%s: missing output at index %d", ev.name, i)
		}
		if items[i].typ != typ {
			t.Fatalf("%s: output %d is a %s", ev.name, i, items[i].typ)
		}
		return items[i]
	}
	for _, ev := range events {
		switch ev.name {
		case "response.output_item.added":
			if i := num(ev, "output_index"); i != len(items) {
				t.Fatalf("item added at %d, after %d items", i, len(items))
			}
			items = append(items, &item{typ: ev.data["item"].(map[string]any)["type"].(string)})
		case "response.output_item.done":
			it := items[num(ev, "output_index")]
			if typ := ev.data["item"].(map[string]any)["type"]; typ != it.typ {
				t.Fatalf("item %s done as a %s", it.typ, typ)
			}
		case "response.content_part.added":
			it := get(ev, "message")
			if num(ev, "content_index") != it.parts {
				t.Fatalf("part added at %d after %d", num(ev, "content_index"), it.parts)
			}
			it.parts++
		case "response.content_part.done", "response.output_text.delta", "response.output_text.done":
			if it := get(ev, "message"); num(ev, "content_index") >= it.parts {
				t.Fatalf("%s: missing content at index %d", ev.name, num(ev, "content_index"))
			}
		case "response.reasoning_summary_part.added":
			it := get(ev, "reasoning")
			if num(ev, "summary_index") != it.summary {
				t.Fatalf("summary part added at %d after %d", num(ev, "summary_index"), it.summary)
			}
			it.summary++
		case "response.reasoning_summary_part.done", "response.reasoning_summary_text.delta", "response.reasoning_summary_text.done":
			if it := get(ev, "reasoning"); num(ev, "summary_index") >= it.summary {
				t.Fatalf("%s: missing summary at index %d", ev.name, num(ev, "summary_index"))
			}
		case "response.function_call_arguments.delta", "response.function_call_arguments.done":
			get(ev, "function_call")
		}
	}
}

// TestDialectFixtures answers every upstream stream fixture in the
// Responses dialect, streamed and not: the output is compared with the
// golden files of testdata/dialect, the stream's framing is checked, and
// the stream decodes (with DecodeStream, as a client of ctxkit would
// read it) back to the chunks it was made of, the reasoning's encrypted
// content included.
func TestDialectFixtures(t *testing.T) {
	d := responses.Dialect()
	files, _ := filepath.Glob("testdata/stream/*.sse")
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".sse")
		in, _ := os.ReadFile(f)
		chunks, err := wiretest.DecodeAll(responses.DecodeStream, bytes.NewReader(in))
		if err != nil {
			continue // a fixture of a stream that does not decode: nothing to answer with
		}
		t.Run(name, func(t *testing.T) {
			out := wire.Outgoing{Request: echoed(t), Model: "gpt-5", ID: "resp_" + name, Created: 1700000000}
			var buf bytes.Buffer
			if err := d.Stream(&buf, out, replay(chunks)); err != nil {
				t.Fatal(err)
			}
			golden(t, "testdata/dialect/"+name+".sse", buf.Bytes())
			events := readEvents(t, buf.Bytes())

			back, err := wiretest.DecodeAll(responses.DecodeStream, bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			want := chunks
			if !hasStop(chunks) && !hasError(chunks) {
				// A cut stream is answered with response.failed.
				want = append(append([]chat.Chunk(nil), chunks...), chat.Chunk{Type: chat.ChunkError,
					Error: &chat.StreamError{Type: "server_error", Message: "the upstream's response ended before it was complete", Retryable: true}})
			}
			if !has(chunks, chat.ChunkUsage) {
				// The API always ends with a usage: a zero one.
				want = append(append([]chat.Chunk(nil), want...), chat.Chunk{Type: chat.ChunkUsage, Usage: &chat.Usage{}})
			}
			if !reflect.DeepEqual(normal(back), normal(want)) {
				g, _ := json.Marshal(back)
				w, _ := json.Marshal(want)
				t.Errorf("the stream decodes to other chunks:\n got: %s\nwant: %s", g, w)
			}

			res, err := chat.Collect(replay(chunks))
			if err != nil {
				t.Fatal(err)
			}
			body, err := d.Response(res, out)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "testdata/dialect/"+name+".json", append(body, '\n'))
			// The streamed response's last event holds the same Response.
			var whole, last map[string]any
			_ = json.Unmarshal(body, &whole)
			last = events[len(events)-1].data["response"].(map[string]any)
			if !hasStop(chunks) {
				// Collect keeps a cut call's arguments as {"_raw": text};
				// the stream had sent them as they came.
				whole, last = map[string]any{"status": whole["status"], "error": whole["error"]},
					map[string]any{"status": last["status"], "error": last["error"]}
			}
			if !reflect.DeepEqual(whole, last) {
				t.Errorf("the terminal event's response differs from the non-streamed one:\n%v\n%v", last, whole)
			}
		})
	}
}

func replay(chunks []chat.Chunk) func(func(chat.Chunk, error) bool) {
	return func(yield func(chat.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
	}
}

func has(chunks []chat.Chunk, typ chat.ChunkType) bool {
	for _, c := range chunks {
		if c.Type == typ {
			return true
		}
	}
	return false
}

func hasStop(chunks []chat.Chunk) bool  { return has(chunks, chat.ChunkStop) }
func hasError(chunks []chat.Chunk) bool { return has(chunks, chat.ChunkError) }

// normal joins consecutive text and reasoning text chunks, which a
// stream may split differently.
func normal(chunks []chat.Chunk) []chat.Chunk {
	var out []chat.Chunk
	for _, c := range chunks {
		if n := len(out); n > 0 && c.Type == out[n-1].Type && (c.Type == chat.ChunkText || c.Type == chat.ChunkReasoning) &&
			c.Signature == "" && c.Redacted == "" && out[n-1].Signature == "" && out[n-1].Redacted == "" {
			out[n-1].Text += c.Text
			continue
		}
		out = append(out, c)
	}
	return out
}
