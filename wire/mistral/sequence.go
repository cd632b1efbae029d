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
// user message, say) are left where they are: there is no call to put
// them after, and Mistral refuses them whatever ctxkit does.
func sequence(msgs []Message) []Message {
	need := false
	for i := 1; i < len(msgs); i++ {
		if prev := msgs[i-1].Role; (prev == "tool" && msgs[i].Role != "tool" && msgs[i].Role != "assistant") ||
			(msgs[i].Role == "tool" && prev != "tool" && prev != "assistant") {
			need = true
			break
		}
	}
	if !need {
		return msgs
	}
	out := make([]Message, 0, len(msgs)+4)
	for i := 0; i < len(msgs); {
		m := msgs[i]
		out = append(out, m)
		i++
		if m.Role != "assistant" || len(m.ToolCalls) == 0 {
			continue
		}
		end := i
		for end < len(msgs) && msgs[end].Role != "assistant" {
			end++
		}
		tools := false
		for _, t := range msgs[i:end] {
			if t.Role == "tool" {
				out = append(out, t)
				tools = true
			}
		}
		rest := false
		for _, r := range msgs[i:end] {
			if r.Role == "tool" {
				continue
			}
			if tools && !rest {
				out = append(out, Message{Message: openai.Message{Role: "assistant", Content: openai.Text(toolTurnEnd)}})
			}
			rest = true
			out = append(out, r)
		}
		i = end
	}
	return out
}
