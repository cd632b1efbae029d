package responses

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/jsonscan"
	"github.com/ctxkit/ctxkit/wire/internal/oaicompat"
)

// eventSeeds are events of every shape the API sends, and near misses.
var eventSeeds = []string{
	`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","logprobs":[],"obfuscation":"AbC"}`,
	`{"type":"response.reasoning_summary_text.delta","sequence_number":3,"item_id":"rs_3","output_index":0,"summary_index":1,"delta":"\u00e9\n"}`,
	`{"type":"response.function_call_arguments.delta","item_id":"fc","output_index":1,"delta":"{\"a\":1}"}`,
	`{"type":"response.output_text.delta","delta":"x","logprobs":[{"token":"x","logprob":-0.5e-3,"bytes":[120],"top_logprobs":[]}]}`,
	`{"type":"response.completed","response":{"status":"completed"}}`,
	`{"type":"x","output_index":-1}`,
	`{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","created_at":1740855869,"status":"in_progress","error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":"gpt-4.1","output":[],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"store":true,"temperature":1.0,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":null,"user":null,"metadata":{}}}`,
	`{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","content":[],"role":"assistant"}}`,
	`{"type":"response.content_part.added","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}}`,
	`{"type":"response.output_text.done","sequence_number":6,"item_id":"msg_1","output_index":0,"content_index":0,"text":"Hi there!","logprobs":[]}`,
	`{"type":"response.output_item.done","sequence_number":8,"output_index":0,"item":{"id":"msg_1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Hi there!"},{"type":"refusal","refusal":"no"}],"role":"assistant"}}`,
	`{"type":"response.output_item.done","output_index":1,"item":{"id":"rs_2","type":"reasoning","summary":[{"type":"summary_text","text":"a"}],"encrypted_content":"gAAA"}}`,
	`{"type":"response.output_item.added","output_index":4,"item":{"id":"fc_2a","type":"function_call","status":"in_progress","arguments":"","call_id":"call_2a","name":"get_weather"}}`,
	`{"type":"response.function_call_arguments.done","item_id":"fc_2b","output_index":2,"arguments":"{}","name":"get_time"}`,
	`{"type":"response.completed","sequence_number":9,"response":{"id":"resp_1","status":"completed","error":null,"incomplete_details":null,"output":[{"id":"msg_1","type":"message","content":[{"type":"output_text","text":"Hi"}]}],"usage":{"input_tokens":36,"input_tokens_details":{"cached_tokens":4,"cache_write_tokens":2},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":39}}}`,
	`{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":1,"output_tokens":2}}}`,
	`{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"boom"},"usage":null}}`,
	`{"type":"error","code":"rate_limit_exceeded","message":"slow down","param":null}`,
	`{"type":"error","error":{"type":"invalid_request_error","code":null,"message":"bad"}}`,
	`{"type":"response.output_text.delta","Delta":"case"}`,
	`{"type":"response.output_text.delta","delta":"a","delta":"b"}`,
	`{"type":"response.output_text.delta","delta":null,"item_id":null,"output_index":null,"item":null,"response":null}`,
	`{"type":"response.output_text.delta","delta":"\ud83d\ude00 \u00e9"}`,
	`{"type":"response.output_text.delta","delta":"bad \x"}`,
	`{"type":"response.output_text.delta","output_index":1.5}`,
	`{"type":"response.completed","response":{"usage":{"input_tokens":1e3}}}`,
	`{"type":"response.completed","response":{"usage":{"input_tokens":"3"}}}`,
	`{"type":"x","skip":[1,-0,0.5,2E+3,true,false,null,{"a":[[]]},"\"\\\/\b\f\n\r\t\u0041"]}`,
	`{"type":"x","skip":[01]}`,
	`{"type":"x","skip":tru}`,
	`{"type":"x","skip":{"a" 1}}`,
	` { "type" : "response.output_text.delta" , "delta" : "sp" } `,
	`{"type":"response.output_text.delta","delta":"x"} trailing`,
	`{"type":"response.output_text.delta","delta":"x"`,
	`null`,
	`[]`,
	`{"typ\u0065":"x"}`,
	`{"type":"response.output_item.done","item":{"summary":[null]}}`,
	`{"type":"response.output_item.done","item":{"summary":"no"}}`,
	`{"type":"response.output_item.done","item":{"ſummary":[]}}`,
}

// FuzzScanEvent: whenever the fast path reads an event, it reads what
// encoding/json reads.
func FuzzScanEvent(f *testing.F) {
	for _, s := range eventSeeds {
		f.Add([]byte(s))
	}
	files, _ := filepath.Glob("testdata/stream/*.sse")
	for _, file := range files {
		in, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for line := range strings.Lines(string(in)) {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				f.Add([]byte(strings.TrimSpace(data)))
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast, slow wireEvent
		var index int
		if !scanEvent(data, &fast, &index, nil, nil, nil) {
			return
		}
		if err := json.Unmarshal(data, &slow); err != nil {
			t.Fatalf("the fast path read %q, which encoding/json refuses: %v", data, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q:\nfast %+v\nslow %+v", data, fast, slow)
		}
		// Read into a decoder's room, left as another event filled it,
		// the event is the same.
		room := eventRoom{
			item:  wireItem{Type: "message", ID: "stale", Content: []wireText{{Text: "stale"}}},
			resp:  wireResponse{Status: "stale", Error: json.RawMessage(`"stale"`)},
			usage: wireUsage{InputTokens: 99, OutputTokens: 99},
		}
		var roomed wireEvent
		if !scanEvent(data, &roomed, &index, &room, nil, nil) {
			t.Fatalf("%q: read without a room, not with one", data)
		}
		if !reflect.DeepEqual(roomed, slow) {
			t.Fatalf("%q read into a room:\nroom %+v\nslow %+v", data, roomed, slow)
		}
	})
}

// FuzzScanBody: whenever the fast path reads a Response object, it reads
// what encoding/json reads.
func FuzzScanBody(f *testing.F) {
	for _, s := range eventSeeds {
		if i := strings.Index(s, `"response":{`); i >= 0 {
			f.Add([]byte(s[i+len(`"response":`) : len(s)-1]))
		}
	}
	f.Add([]byte(`{"status":"completed","output":[{"id":"fc_1","type":"function_call","arguments":"{}","call_id":"c","name":"f"},{"id":"rs","type":"reasoning","summary":[],"encrypted_content":"x"}],"usage":null}`))
	f.Add([]byte(`{"status":"completed","output":null,"Output":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var fast, slow wireBody
		s := jsonscan.New(body)
		if !scanResponse(s, &fast.wireResponse, &fast.Output, nil) || !s.End() {
			return
		}
		if err := json.Unmarshal(body, &slow); err != nil {
			t.Fatalf("the fast path read %q, which encoding/json refuses: %v", body, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q:\nfast %+v\nslow %+v", body, fast, slow)
		}
	})
}

// TestScanReadsTheAPIsEvents: the events of the fixtures, which are the
// API's, are read by the fast path, not left to encoding/json.
func TestScanReadsTheAPIsEvents(t *testing.T) {
	files, _ := filepath.Glob("testdata/stream/*.sse")
	n := 0
	for _, file := range files {
		in, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for line := range bytes.Lines(in) {
			data, ok := bytes.CutPrefix(line, []byte("data: "))
			data = bytes.TrimSpace(data)
			if !ok || string(data) == "[DONE]" || !json.Valid(data) {
				continue
			}
			var ev wireEvent
			var index int
			if !scanEvent(data, &ev, &index, nil, nil, nil) {
				t.Errorf("%s: the fast path leaves %s to encoding/json", file, data)
			}
			n++
		}
	}
	if n < 50 {
		t.Fatalf("only %d events read", n)
	}
}

// TestScanReadsResponseObjects: the Response objects the API answers
// with (as EncodeResponse writes them, the API's shape) are read by the
// fast path, not left to encoding/json.
func TestScanReadsResponseObjects(t *testing.T) {
	res := chat.Response{Content: []chat.Block{
		{Type: chat.TypeThinking, Thinking: "Plan.", Signature: "gAAA"},
		{Type: chat.TypeText, Text: "Hi \"there\"\n"},
		{Type: chat.TypeToolUse, ID: "call_1", Name: "f", Input: json.RawMessage(`{"a": 1}`)}},
		Stop:  chat.Stop{Reason: chat.StopToolUse},
		Usage: chat.Usage{Input: 10, Output: 5, CacheRead: 2, Reasoning: 1}}
	temp := 0.5
	req := &chat.Request{Model: "m", MaxTokens: 9, Temperature: &temp, System: &chat.Content{IsString: true, Text: "Be brief."},
		Tools: []chat.Tool{{Name: "f", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
	body, err := EncodeResponse(res, req, "m", "resp_1", 1)
	if err != nil {
		t.Fatal(err)
	}
	var r wireBody
	s := jsonscan.New(body)
	if !scanResponse(s, &r.wireResponse, &r.Output, nil) || !s.End() {
		t.Fatalf("the fast path leaves %s to encoding/json", body)
	}
	if len(r.Output) != 3 || r.Status != "completed" || r.Usage == nil || r.Usage.InputTokens != 10 {
		t.Fatalf("read %+v from %s", r, body)
	}
}

// decodeAll decodes a stream, the repeated texts skipped (as
// DecodeStream does) or all read.
func decodeAll(in []byte, skip bool) ([]chat.Chunk, error) {
	var chunks []chat.Chunk
	for c, err := range chat.Stream(bytes.NewReader(in), func(yield func(chat.Chunk) bool) error {
		d := newStreamDecoder(yield)
		if !skip {
			d.streamed = nil
		}
		return oaicompat.ReadEvents(bytes.NewReader(in), MaxEvent, "responses stream", d.event, d.end, func() bool { return d.ok })
	}) {
		if err != nil {
			return chunks, err
		}
		chunks = append(chunks, c)
	}
	return chunks, nil
}

// FuzzTextStreamed: skipping the texts that done events repeat changes
// nothing the decoder yields.
func FuzzTextStreamed(f *testing.F) {
	files, _ := filepath.Glob("testdata/stream/*.sse")
	for _, file := range files {
		in, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(in)
	}
	f.Add([]byte("data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"id\":\"m\",\"type\":\"message\"}}\n\n" +
		"data: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"delta\":\"a\"}\n\n" +
		"data: {\"type\":\"response.output_text.done\",\"output_index\":0,\"text\":\"abc\"}\n\n" +
		"data: {\"type\":\"response.output_text.done\",\"text\":\"x\",\"output_index\":0}\n\n" +
		"data: {\"output_index\":0,\"text\":\"y\",\"type\":\"response.output_text.done\"}\n\n" +
		"data: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"id\":\"m\",\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":\"abc\"}]}}\n\n" +
		"data: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"content\":[{\"text\":bad}]}}\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		fast, errFast := decodeAll(in, true)
		slow, errSlow := decodeAll(in, false)
		if fmt.Sprint(errFast) != fmt.Sprint(errSlow) || !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q:\nskipping %v %+v\nreading  %v %+v", in, errFast, fast, errSlow, slow)
		}
	})
}

// TestDoneTextSkipped: once an item's deltas came, the text its done
// events repeat is checked but not decoded; without deltas it is read.
func TestDoneTextSkipped(t *testing.T) {
	var chunks []chat.Chunk
	d := newStreamDecoder(func(c chat.Chunk) bool { chunks = append(chunks, c); return true })
	for _, ev := range []string{
		`{"type":"response.output_item.added","output_index":0,"item":{"id":"m","type":"message","content":[]}}`,
		`{"type":"response.output_item.added","output_index":1,"item":{"id":"n","type":"message","content":[]}}`,
		`{"type":"response.output_text.delta","output_index":0,"delta":"Hi"}`,
	} {
		if err := d.event("", []byte(ev)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		ev   string
		text string
	}{
		{`{"type":"response.output_text.done","output_index":0,"text":"Hi"}`, ""},
		{`{"type":"response.output_text.done","output_index":1,"text":"Yo"}`, "Yo"},
		{`{"type":"response.output_text.done","text":"Hi","output_index":0}`, "Hi"}, // the item is not named yet
	} {
		if err := d.event("", []byte(c.ev)); err != nil {
			t.Fatal(err)
		}
		if d.ev.Text != c.text {
			t.Errorf("%s: text %q, want %q", c.ev, d.ev.Text, c.text)
		}
	}
	if err := d.event("", []byte(`{"type":"response.output_item.done","output_index":0,"item":{"id":"m","type":"message","content":[{"type":"output_text","text":"Hi"}]}}`)); err != nil {
		t.Fatal(err)
	}
	if d.ev.Item == nil || d.ev.Item.Content != nil {
		t.Errorf("the done item's content was read: %+v", d.ev.Item)
	}
	if err := d.event("", []byte(`{"type":"response.output_text.done","output_index":0,"text":"bad \x"}`)); err == nil {
		t.Error("a skipped text that is not valid JSON passed")
	}
	if len(chunks) != 2 || chunks[0].Text != "Hi" || chunks[1].Text != "Yo" {
		t.Errorf("chunks %+v", chunks)
	}
}
