package responses_test

import (
	"encoding/json"
	"fmt"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/responses"
)

// A Responses client hands back the reasoning item and the call of the
// previous turn with the call's output: they become one assistant turn
// (the encrypted reasoning as a signed thinking block) and the tool
// result.
func ExampleDecodeRequest() {
	req, err := responses.DecodeRequest([]byte(`{"model":"o3","instructions":"Be brief.","input":[
		{"role":"user","content":"Weather in Oslo?"},
		{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Call the tool."}],"encrypted_content":"gAAAAB-1"},
		{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Oslo\"}"},
		{"type":"function_call_output","call_id":"call_1","output":"-3C"}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.Marshal(req.Messages)
	fmt.Println(req.System.Text)
	fmt.Println(string(out))
	// Output:
	// Be brief.
	// [{"role":"user","content":"Weather in Oslo?"},{"role":"assistant","content":[{"type":"thinking","thinking":"Call the tool.","signature":"gAAAAB-1"},{"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Oslo"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"-3C"}]}]
}

// The gateway continues a stored conversation: the earlier request, the
// answer it got, and the new input.
func ExampleContinue() {
	prev := chat.Request{Model: "o3", Messages: []chat.Message{{Role: chat.User, Content: chat.Str("Hi")}}}
	answer := chat.Response{Content: []chat.Block{{Type: chat.TypeText, Text: "Hello!"}}}
	next, _ := responses.DecodeRequest([]byte(`{"model":"o3","input":"How are you?","previous_response_id":"resp_1"}`))
	for _, m := range responses.Continue(prev, answer, next).Messages {
		fmt.Println(m.Role, m.Content.PlainText(""))
	}
	// Output:
	// user Hi
	// assistant Hello!
	// user How are you?
}
