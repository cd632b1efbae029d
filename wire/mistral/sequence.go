package mistral

import "github.com/ctxkit/ctxkit/wire/openai"

// toolTurnEnd is the text of the assistant message placed between tool
// messages and the user message that follows them (see sequence).
const toolTurnEnd = "(tool results received)"

// sequence puts msgs in an order Mistral accepts. Mistral checks which
// role may follow which (its validator, in mistral-common): after a tool
// message only an assistant or another tool message may come, and a user
// message there is refused with 400 "Unexpected role 'user' after role
// 'tool'". The conversion makes exactly that whenever a user message
// holds tool results and more (text, images, or images taken out of the
// tool results, which a tool message cannot carry): the tool messages,
// then a user message with the rest.
//
// So, in the messages that answer an assistant message with tool calls
// (those up to the next assistant message), the tool messages come first,
// in their order, and the other messages follow after an assistant
// message with the short text toolTurnEnd, which Mistral requires to be
// non-empty. Nothing is dropped: the user's text and images are all sent,
// only after that assistant message, and after every tool result of the
// turn when the client sent some of them later (a user message between
// two runs of tool results). Tool messages that answer no call (after a
// user message, say) stay where they are, with the assistant message
// after them too: there is no call to put them after, and Mistral
// refuses them whatever ctxkit does.
func sequence(msgs []Message) []Message {
	need := false
	for i := 1; i < len(msgs) && !need; i++ {
		prev, role := msgs[i-1].Role, msgs[i].Role
		need = prev == "tool" && role != "tool" && role != "assistant" ||
			role == "tool" && prev != "tool" && prev != "assistant"
	}
	if !need {
		return msgs
	}
	// The tool messages of each turn that answers calls first.
	ordered := make([]Message, 0, len(msgs))
	for i := 0; i < len(msgs); {
		m := msgs[i]
		ordered = append(ordered, m)
		i++
		if m.Role != "assistant" || len(m.ToolCalls) == 0 {
			continue
		}
		end := i
		for end < len(msgs) && msgs[end].Role != "assistant" {
			end++
		}
		for _, t := range msgs[i:end] {
			if t.Role == "tool" {
				ordered = append(ordered, t)
			}
		}
		for _, r := range msgs[i:end] {
			if r.Role != "tool" {
				ordered = append(ordered, r)
			}
		}
		i = end
	}
	// An assistant message wherever tool messages are followed by
	// anything but an assistant or a tool message.
	out := make([]Message, 0, len(ordered)+4)
	for i, m := range ordered {
		if i > 0 && ordered[i-1].Role == "tool" && m.Role != "tool" && m.Role != "assistant" {
			out = append(out, Message{Message: openai.Message{Role: "assistant", Content: openai.Text(toolTurnEnd)}})
		}
		out = append(out, m)
	}
	return out
}
