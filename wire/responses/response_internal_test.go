package responses

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
)

// FuzzResponseJSON: the response object written by hand is what
// encoding/json writes (byte for byte, but for \b and \f, which
// chat.AppendString writes as \u0008 and \u000c: the same JSON).
func FuzzResponseJSON(f *testing.F) {
	f.Add("resp_1", "You are terse.", "gpt-5", 0.7, 200, true, []byte(`{"type":"object","properties":{"a":{"type":"string"}}}`), []byte(`{"k": "v"}`), "Hi", int64(12))
	f.Add("", "\b\f\u2028<&>\x00\xff", "m", 1e-7, 0, false, []byte(` [1, 2.5e3 ,{"a b":null}] `), []byte(`null`), "", int64(0))
	f.Add("r", "", "m", 1e21, -1, true, []byte(`{}`), []byte(`"s"`), "x\"y", int64(-3))
	f.Fuzz(func(t *testing.T, id, instructions, model string, temp float64, maxTokens int, parallel bool, schema, user []byte, text string, tokens int64) {
		if math.IsNaN(temp) || math.IsInf(temp, 0) || !json.Valid(schema) || !json.Valid(user) {
			return
		}
		r := responseObject{ID: id, Object: "response", CreatedAt: tokens, Status: "completed", Model: model,
			Output: []json.RawMessage{itemJSON(newMessage("msg_"+id, "completed", text, true)),
				itemJSON(callItem{ID: "fc", Type: "function_call", Status: "completed", Arguments: text, CallID: id, Name: model})},
			ParallelToolCalls: parallel, PreviousResponseID: user, Store: !parallel, Text: schema, ToolChoice: json.RawMessage(`"auto"`),
			Tools:      []Tool{{Type: "function", Name: model, Description: instructions, Parameters: schema, Strict: parallel}, {Type: "function", Name: id, Parameters: user}},
			Truncation: "disabled", User: user, Metadata: schema}
		if maxTokens >= 0 {
			r.Instructions, r.MaxOutputTokens, r.Temperature = &instructions, &maxTokens, &temp
			r.Reasoning = reasoningEcho{Effort: &model, Summary: &id}
			r.Usage = newUsage(chat.Usage{Input: tokens, Output: tokens / 2, CacheRead: tokens / 3, CacheWrite: tokens % 5, Reasoning: 1})
			r.Error = &responseError{Code: id, Message: text}
			r.IncompleteDetails = &incomplete{Reason: instructions}
		} else {
			r.TopP, r.Tools, r.Output = &temp, nil, nil
		}
		got := responseJSON(&r)
		want := marshal(r)
		if bytes.Equal(got, want) {
			return
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("invalid JSON %s: %v", got, err)
		}
		_ = json.Unmarshal(want, &w)
		if !strings.ContainsAny(id+instructions+model+text, "\b\f") || !reflect.DeepEqual(g, w) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	})
}
