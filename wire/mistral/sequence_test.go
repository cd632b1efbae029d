package mistral_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/mistral"
)

// successors are the roles Mistral lets follow each role (its request
// validator, mistral-common's MistralRequestValidator).
var successors = map[string][]string{
	"system":    {"user", "assistant", "system"},
	"user":      {"assistant", "system", "user"},
	"assistant": {"assistant", "user", "tool"},
	"tool":      {"assistant", "tool"},
}

// accept checks a request body the way Mistral's validator does: the
// role order, as many tool messages after an assistant's calls as it
// made, assistant messages with content or calls, tool-call ids of nine
// alphanumerics, and a last message that is the user's, a tool's or a
// prefix.
func accept(body []byte) error {
	var req struct {
		Messages []struct {
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			ToolCalls []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
			ToolCallID string `json:"tool_call_id"`
			Prefix     bool   `json:"prefix"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return err
	}
	msgs := req.Messages
	for i, m := range msgs {
		if i > 0 {
			prev := msgs[i-1].Role
			ok := false
			for _, r := range successors[prev] {
				ok = ok || r == m.Role
			}
			if !ok {
				return fmt.Errorf("messages[%d]: Unexpected role '%s' after role '%s'", i, m.Role, prev)
			}
		}
		if m.Role == "assistant" {
			if len(m.ToolCalls) == 0 && (len(m.Content) == 0 || string(m.Content) == `""` || string(m.Content) == "null") {
				return fmt.Errorf("messages[%d]: an assistant message with neither content nor tool calls", i)
			}
			n := 0
			for j := i + 1; j < len(msgs) && msgs[j].Role == "tool"; j++ {
				n++
			}
			if len(m.ToolCalls) > 0 && n != len(m.ToolCalls) {
				return fmt.Errorf("messages[%d]: Not the same number of function calls and responses (%d, %d)", i, len(m.ToolCalls), n)
			}
		}
	}
	if n := len(msgs); n > 0 {
		if last := msgs[n-1]; last.Role != "user" && last.Role != "tool" && !(last.Role == "assistant" && last.Prefix) {
			return fmt.Errorf("the last message is the %s's", last.Role)
		}
	}
	return nil
}

func text(s string) chat.Block { return chat.Block{Type: chat.TypeText, Text: s} }

func img(data string) chat.Block {
	return chat.Block{Type: chat.TypeImage, Source: &chat.Source{Type: "base64", MediaType: "image/png", Data: data}}
}

func call(id string) chat.Block {
	return chat.Block{Type: chat.TypeToolUse, ID: id, Name: "look", Input: json.RawMessage(`{}`)}
}

func result(id string, content ...chat.Block) chat.Block {
	return chat.Block{Type: chat.TypeToolResult, ToolUseID: id, Content: &chat.Content{Blocks: content}}
}

// TestToolResultsThenUserContent: wherever a user's text or images come
// with tool results — beside them, inside them, split over messages —
// Mistral gets an order its validator accepts, with every text and every
// image.
func TestToolResultsThenUserContent(t *testing.T) {
	user := func(b ...chat.Block) chat.Message { return chat.Message{Role: chat.User, Content: chat.Of(b...)} }
	asst := func(b ...chat.Block) chat.Message { return chat.Message{Role: chat.Assistant, Content: chat.Of(b...)} }
	cases := []struct {
		name  string
		msgs  []chat.Message
		merge bool
		keep  []string // what must reach Mistral
	}{
		{"text after a tool result", []chat.Message{
			user(text("look")), asst(call("a1")), user(result("a1", text("found it")), text("now compare")),
		}, false, []string{"look", "found it", "now compare"}},
		{"image after tool results", []chat.Message{
			user(text("look")), asst(text("looking"), call("a1"), call("a2")),
			user(result("a1", text("one")), result("a2", text("two")), img("SU1HMQ==")),
		}, false, []string{"one", "two", "SU1HMQ=="}},
		{"image inside a tool result", []chat.Message{
			user(text("shot")), asst(call("a1")), user(result("a1", img("SU1HMg=="), text("the page"))),
		}, false, []string{"SU1HMg==", "the page"}},
		{"merged text, image inside a result", []chat.Message{
			user(text("shot")), asst(call("a1")), user(result("a1", img("SU1HMw==")), text("and this")),
		}, true, []string{"SU1HMw==", "and this"}},
		{"user text between two runs of results", []chat.Message{
			user(text("go")), asst(call("a1"), call("a2")),
			user(result("a1", text("r1")), text("wait")), user(result("a2", text("r2"))),
		}, false, []string{"r1", "wait", "r2"}},
		{"two tool turns and a reply", []chat.Message{
			user(text("go")), asst(call("a1")), user(result("a1", text("r1")), text("more")),
			asst(call("a2")), user(result("a2", text("r2"))), asst(text("done")), user(text("thanks")),
		}, false, []string{"r1", "more", "r2", "done", "thanks"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := chat.Request{Model: "mistral-large-latest", Messages: c.msgs}
			out, _, err := mistral.EncodeRequest(req, mistral.Options{MergeToolResultText: c.merge})
			if err != nil {
				t.Fatal(err)
			}
			body, err := json.Marshal(out)
			if err != nil {
				t.Fatal(err)
			}
			if err := accept(body); err != nil {
				t.Fatalf("Mistral refuses it: %v\n%s", err, body)
			}
			for _, k := range c.keep {
				if !strings.Contains(string(body), k) {
					t.Errorf("%q was lost:\n%s", k, body)
				}
			}
		})
	}
}

// TestSequenceLeavesValidOrder: a conversation Mistral already accepts is
// sent as it was, with no message added.
func TestSequenceLeavesValidOrder(t *testing.T) {
	req := chat.Request{Model: "m", Messages: []chat.Message{
		{Role: chat.User, Content: chat.Str("go")},
		{Role: chat.Assistant, Content: chat.Of(call("a1"))},
		{Role: chat.User, Content: chat.Of(result("a1", text("r1")))},
		{Role: chat.Assistant, Content: chat.Str("ok")},
		{Role: chat.User, Content: chat.Str("next")},
	}}
	out, _, err := mistral.EncodeRequest(req, mistral.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 5 {
		t.Fatalf("%d messages, want 5", len(out.Messages))
	}
	body, _ := json.Marshal(out)
	if err := accept(body); err != nil {
		t.Fatal(err)
	}
}

// FuzzSequence: whatever the order of user text, calls and tool results,
// no message but an assistant's or a tool's follows a tool message, and
// every text is sent.
func FuzzSequence(f *testing.F) {
	f.Add([]byte{0, 1, 2, 0})
	f.Add([]byte{0, 1, 3, 2, 1, 2})
	f.Add([]byte{3, 0, 2})
	f.Add([]byte{0, 1, 2, 3, 0, 1, 1, 3, 2})
	f.Fuzz(func(t *testing.T, plan []byte) {
		if len(plan) > 64 {
			plan = plan[:64]
		}
		var msgs []chat.Message
		var keep []string
		last := "none"
		for i, op := range plan {
			mark := fmt.Sprintf("m%02d", i)
			switch op % 5 {
			case 0:
				msgs = append(msgs, chat.Message{Role: chat.User, Content: chat.Of(text(mark))})
			case 1:
				last = fmt.Sprintf("c%02d", i)
				msgs = append(msgs, chat.Message{Role: chat.Assistant, Content: chat.Of(text(mark), call(last))})
			case 2:
				msgs = append(msgs, chat.Message{Role: chat.User, Content: chat.Of(result(last, text(mark+"r")), text(mark))})
				keep = append(keep, mark+"r")
			case 3:
				msgs = append(msgs, chat.Message{Role: chat.User, Content: chat.Of(result(last, img("SU1H"+mark)))})
				keep = append(keep, "SU1H"+mark)
				continue
			case 4:
				msgs = append(msgs, chat.Message{Role: chat.Assistant, Content: chat.Str(mark)})
			}
			keep = append(keep, mark)
		}
		out, _, err := mistral.EncodeRequest(chat.Request{Model: "m", Messages: msgs}, mistral.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(out.Messages); i++ {
			if prev, role := out.Messages[i-1].Role, out.Messages[i].Role; prev == "tool" && role != "tool" && role != "assistant" {
				t.Fatalf("messages[%d]: %s after tool", i, role)
			}
		}
		body, _ := json.Marshal(out)
		for _, k := range keep {
			if !strings.Contains(string(body), k) {
				t.Fatalf("%q lost: %s", k, body)
			}
		}
	})
}
