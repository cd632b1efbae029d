package anthropic

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ctxkit/ctxkit/wire/internal/sse"
)

// fastCases are payloads for parseFast: those it reads and those it leaves
// to encoding/json.
var fastCases = []struct {
	data string
	fast bool
}{
	{`{"type":"content_block_delta","index":12,"delta":{"type":"text_delta","text":"Hi"}}`, true},
	{` { "type" : "content_block_delta" , "index" : 0 , "delta" : { "type" : "text_delta" , "text" : "a\"b\\c\/d\n\t\r\b\f" } }  `, true},
	{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Ça va? 👋"}        }`, true},
	{`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}`, true},
	{`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"x"},"delta":{"type":"signature_delta","signature":"s"}}`, true},
	{`{"type":"content_block_stop","index":3}`, true},
	{`{"type":"message_stop"}`, true},
	{`{"delta":{"stop_reason":"end_turn"}}`, true},
	{`{"delta":{"stop_reason":"end_turn","stop_reason":null}}`, true},
	{`{}`, true},
	{`{"type":"sparkle"}`, true},
	{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\u00e9 \u2192"}}`, true},
	{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\ud83d\ude00"}}`, false},
	{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + "\xff" + `"}}`, false},
	{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + "\x01" + `"}}`, false},
	{`{"Type":"content_block_delta","index":0}`, false},
	{`{"type":"content_block_delta","index":01}`, false},
	{`{"type":"content_block_delta","index":1.0}`, false},
	{`{"type":"content_block_delta","index":1e1}`, false},
	{`{"type":"content_block_delta","index":-1}`, false},
	{`{"type":"content_block_delta","index":null}`, false},
	{`{"type":"content_block_delta","index":1234567890}`, false},
	{`{"type":"content_block_delta","delta":{"type":"text_delta","text":null}}`, false},
	{`{"type":"content_block_delta","delta":{"type":"citations_delta","citation":{}}}`, false},
	{`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":1}}`, true},
	{`{"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"END"},"usage":{"input_tokens":null,"output_tokens":15,"cache_read_input_tokens":0,"server_tool_use":{"web_search_requests":1}}}`, true},
	{`{"type":"message_delta","usage":{"output_tokens":1},"usage":{"input_tokens":2}}`, true},
	{`{"type":"message_delta","usage":{"output_tokens":1},"usage":{"output_tokens":null}}`, true},
	{`{"type":"message_delta","usage":{"output_tokens":1},"usage":null}`, true},
	{`{"type":"message_delta","usage":{"output_tokens":1.5}}`, false},
	{`{"type":"message_delta","usage":{"output_tokens":"1"}}`, false},
	{`{"type":"message_delta","usage":{"output_tokens":99999999999999999999}}`, false},
	{`{"type":"message_delta","usage":{"iterations":[]}}`, false},
	{`{"type":"message_delta","usage":{"cache_creation":{"ephemeral_5m_input_tokens":1.0}}}`, false},
	{`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":24,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`, true},
	{`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":2,"service_tier":"standard"}}}`, true},
	{`{"type":"message_start","message":null}`, true},
	{`{"type":"message_start","message":{"usage":null},"message":{"model":"m"}}`, true},
	{`{"type":"message_start","message":{"content":[{"type":"text","text":"x"}]}}`, false},
	{`{"type":"message_start","message":{"container":null}}`, false},
	{`{"type":"message_start","message":{"model":"cl\u0061ude"}}`, false},
	{`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`, true},
	{`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}`, true},
	{`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input": { } }}`, false},
	{`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input": {} }}`, true},
	{`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":null}}`, true},
	{`{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"abc"}}`, true},
	{`{"type":"content_block_start","index":0,"content_block":{"type":"text"},"content_block":{"text":"t"}}`, true},
	{`{"type":"content_block_start","index":0,"content_block":{"type":"text"},"content_block":null}`, true},
	{`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","input":{"a":1}}}`, false},
	{`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","input":null}}`, false},
	{`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"","citations":[]}}`, false},
	{`{"type":"content_block_stop","index":0,}`, false},
	{`{"type":"content_block_stop","index":0} x`, false},
	{`{"type":"content_block_stop" "index":0}`, false},
	{`{"typ\u0065":"content_block_stop"}`, false},
	{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"abc}}`, false},
	{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ab\`, false},
	{``, false},
	{`[]`, false},
}

func TestParseFast(t *testing.T) {
	for _, c := range fastCases {
		var e event
		if got := parseFast([]byte(c.data), &e); got != c.fast {
			t.Errorf("%s: fast %v, want %v", c.data, got, c.fast)
		}
		checkFast(t, []byte(c.data))
	}
}

// checkFast: when parseFast reads data, it gets what encoding/json gets.
func checkFast(t *testing.T, data []byte) {
	t.Helper()
	var fast, slow event
	if !parseFast(data, &fast) {
		return
	}
	if err := json.Unmarshal(data, &slow); err != nil {
		t.Fatalf("%q: parseFast read what encoding/json rejects: %v", data, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q:\nfast %+v\njson %+v", data, fast, slow)
	}
}

func FuzzParseFast(f *testing.F) {
	for _, c := range fastCases {
		f.Add([]byte(c.data))
	}
	files, _ := filepath.Glob("testdata/stream/*.sse")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for ev, err := range sse.Read(bytes.NewReader(data), 0) {
			if err != nil {
				break
			}
			f.Add(ev.Data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkFast(t, data) })
}

// messageCases are response bodies for parseMessageFast: those it reads
// and those it leaves to encoding/json.
var messageCases = []struct {
	data string
	fast bool
}{
	{`{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Hello there"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":24,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":20}}`, true},
	{`{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"text","text":"a\nb \u00e9"}],"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":2,"service_tier":"standard"}}`, true},
	{`{"type":"message","content":[],"stop_reason":null}`, true},
	{`{"type":"message","content":null}`, true},
	{`{"type":"message","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]}`, true},
	{`{"type":"message","content":[{"type":"tool_use","id":"t","name":"f","input":{"city":"Paris"}}]}`, false},
	{`{"type":"message","content":[],"content":[]}`, false},
	{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, false},
	{`{"type":"message","content":[{"type":"text","text":"x","citations":null}]}`, false},
	{`{"type":"message","stop_reason":"\ud83d\ude00"}`, false},
	{`{"type":"message","container":null}`, false},
	{`{"type":"message"} x`, false},
	{`[]`, false},
}

func TestParseMessageFast(t *testing.T) {
	for _, c := range messageCases {
		var m unaryMessage
		if got := parseMessageFast([]byte(c.data), &m); got != c.fast {
			t.Errorf("%s: fast %v, want %v", c.data, got, c.fast)
		}
		checkMessageFast(t, []byte(c.data))
	}
}

// checkMessageFast: when parseMessageFast reads data, it gets what
// encoding/json gets.
func checkMessageFast(t *testing.T, data []byte) {
	t.Helper()
	var fast, slow unaryMessage
	if !parseMessageFast(data, &fast) {
		return
	}
	if err := json.Unmarshal(data, &slow); err != nil {
		t.Fatalf("%q: parseMessageFast read what encoding/json rejects: %v", data, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q:\nfast %+v\njson %+v", data, fast, slow)
	}
}

func FuzzParseMessageFast(f *testing.F) {
	for _, c := range messageCases {
		f.Add([]byte(c.data))
	}
	files, _ := filepath.Glob("testdata/response/*.json")
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkMessageFast(t, data) })
}
