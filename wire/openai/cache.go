package openai

import "github.com/ctxkit/ctxkit/wire/internal/oaicompat"

// placeholder is the text of the part a caching strategy appends to a user
// message that has no text part to carry its marker.
const placeholder = "..."

// markLastUsers applies the openrouter strategy to msgs (which
// oaicompat.Convert made and which are changed in place): the system
// message and the last n user messages are marked, and every user
// message's content becomes parts.
func markLastUsers(msgs []Message, n int) {
	prepare(msgs)
	for i := len(msgs) - 1; i >= 0 && n > 0; i-- {
		if msgs[i].Role == "user" {
			mark(&msgs[i])
			n--
		}
	}
}

// markEveryNthUser applies the gemini-every-n strategy to msgs (changed
// in place): the system message and every nth user message (the nth, the
// 2nth, ...; none when n is 0) are marked, and every user message's content
// becomes parts.
func markEveryNthUser(msgs []Message, n int) {
	prepare(msgs)
	count := 0
	for i := range msgs {
		if msgs[i].Role != "user" {
			continue
		}
		count++
		if n > 0 && count%n == 0 {
			mark(&msgs[i])
		}
	}
}

// prepare marks the system message and turns user strings into parts.
func prepare(msgs []Message) {
	for i := range msgs {
		switch msgs[i].Role {
		case "system":
			msgs[i].Content = asParts(msgs[i].Content)
			mark(&msgs[i])
		case "user":
			msgs[i].Content = asParts(msgs[i].Content)
		}
	}
}

func asParts(c Content) Parts {
	switch c := c.(type) {
	case Parts:
		return c
	case Text:
		return Parts{oaicompat.NewTextPart(string(c))}
	}
	return nil
}

// mark puts the ephemeral marker on the last text part of m, appending a
// placeholder text part when there is none.
func mark(m *Message) {
	parts := m.Content.(Parts)
	for k := len(parts) - 1; k >= 0; k-- {
		if t, ok := parts[k].(TextPart); ok {
			t.CacheControl = &CacheControl{Type: "ephemeral"}
			parts[k] = t
			return
		}
	}
	t := oaicompat.NewTextPart(placeholder)
	t.CacheControl = &CacheControl{Type: "ephemeral"}
	m.Content = append(parts, t)
}
