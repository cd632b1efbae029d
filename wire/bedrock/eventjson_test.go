package bedrock

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
)

// eventSeeds are payloads for TestParseEvent and FuzzParseEvent: the
// shapes Bedrock sends and the odd ones the fast path must hand to
// encoding/json.
var eventSeeds = []string{
	`{"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU","role":"assistant"}`,
	`{"contentBlockIndex":0,"delta":{"text":"Hello"},"p":"abcdefghijklmnopqrstuvwxyz"}`,
	`{"contentBlockIndex":1,"p":"abc","start":{"toolUse":{"name":"read_file","toolUseId":"tooluse_kZJ"}}}`,
	`{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"path\": \"a.go\"}"}}}`,
	`{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"hm","signature":"c2ln","redactedContent":"cmVk"}}}`,
	`{"contentBlockIndex":0,"p":"abcdefghijklmn"}`,
	`{"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ","stopReason":"end_turn","additionalModelResponseFields":{"a":[1,2.5e3,-0,true,false,null,{"b":"\u00e9\n"}]}}`,
	`{"metrics":{"latencyMs":1342},"usage":{"cacheReadInputTokens":2048,"cacheWriteInputTokens":512,"inputTokens":37,"outputTokens":19,"totalTokens":2616}}`,
	`{"message":"Too many tokens, please wait before trying again."}`,
	` { "contentBlockIndex" : 2 , "delta" : { "text" : "a\tb" } } `,
	`{"delta":{"text":"caf\u00e9 \ud83d\ude00 \"q\" \\"}}`,
	`{"delta":{"text":"grüße, 世界"}}`,
	"{\"delta\":{\"text\":\"bad \xff utf8\"}}",
	"{\"p\":\"bad \xfe\",\"k\xff\":1}",
	`{"Delta":{"Text":"folded"}}`,
	`{"contentBlockIndex":1.0}`,
	`{"contentBlockIndex":1e2}`,
	`{"contentBlockIndex":-0}`,
	`{"contentBlockIndex":01}`,
	`{"contentBlockIndex":99999999999999999999}`,
	`{"contentBlockIndex":"1"}`,
	`{"usage":null,"start":{"toolUse":null},"delta":null,"stopReason":null}`,
	`{"usage":{"inputTokens":1},"usage":{"outputTokens":2}}`,
	`{"usage":{"inputTokens":1},"usage":null}`,
	`{"delta":{"text":5}}`,
	`{"delta":"x"}`,
	`{"delta":{"text":"x"}`,
	`{"delta":{"text":"x"}}}`,
	`{"p":[1,2,]}`,
	`{"p":"\x"}`,
	`{"p":tru}`,
	`{"p":nul,"delta":{"text":"x"}}`,
	`{"p":"` + "\x01" + `"}`,
	`{"p":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
	`{"stop\u0052eason":"max_tokens"}`,
	`{"ſtopReason":"max_tokens"}`,
	`null`,
	`[]`,
	``,
	`{}`,
	`{"a":1}x`,
	`{"contentBlockIndex":1,"contentBlockIndex":null}`,
	`{"usage":{"inputTokens":-9223372036854775808,"outputTokens":9223372036854775807}}`,
	`{"usage":{"inputTokens":9223372036854775808}}`,
	`{"Usage":{"inputTokens":1}}`,
	`{"delta":{"toolUse":{"input":"x","Input":"y"}}}`,
	`{"delta":{"text":"\ud83d"}}`,
	`{"p":{"q":[1,{"r":null}]},"p":"\u00e9"}`,
}

// TestParseEventFast: the payloads Bedrock sends are read in one pass
// (an event allocates only its strings), not handed to encoding/json.
func TestParseEventFast(t *testing.T) {
	for _, p := range eventSeeds[:10] {
		var ev streamEvent
		if !event(jsonscan.New([]byte(p)), &ev) {
			t.Errorf("%s: left to encoding/json", p)
		}
	}
	delta := []byte(`{"contentBlockIndex":0,"delta":{"text":"Hello"},"p":"abcdefghijklmnopqrstuvwxyz"}`)
	var ev streamEvent
	if n := testing.AllocsPerRun(100, func() { _ = parseEvent(delta, &ev) }); n > 1 {
		t.Errorf("a text delta costs %v allocations, want 1 (its text)", n)
	}
}

func TestParseEvent(t *testing.T) {
	for _, p := range eventSeeds {
		checkParseEvent(t, []byte(p))
	}
}

func FuzzParseEvent(f *testing.F) {
	for _, p := range eventSeeds {
		f.Add([]byte(p))
	}
	f.Fuzz(checkParseEvent)
}

// checkParseEvent checks that parseEvent agrees with json.Unmarshal.
func checkParseEvent(t *testing.T, p []byte) {
	var got, want streamEvent
	gotErr := parseEvent(p, &got)
	wantErr := json.Unmarshal(p, &want)
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("%q: error %v, json.Unmarshal's %v", p, gotErr, wantErr)
	}
	if gotErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %+v\nwant %+v", p, got, want)
	}
}
