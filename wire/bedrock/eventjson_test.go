package bedrock

import (
	"encoding/json"
	"reflect"
	"testing"
)

// eventSeeds are payloads for TestParseEvent and FuzzParseEvent: the
// shapes Bedrock sends and the odd ones the scanner must hand to
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
