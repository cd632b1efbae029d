package relay

import (
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
)

// Assemble turns prompts into a canonical request: the system-side
// positions (system_prefix through examples) make the system prompt, the
// user-side ones (user_prefix, user, user_suffix) one user message. See the
// package documentation for the order, conditions and {{variables}}.
// prompts are not changed.
func Assemble(prompts []Prompt) chat.Request {
	order := Order(prompts)
	var sys, user []string
	for _, i := range order {
		p := &prompts[i]
		if !p.Holds() {
			continue
		}
		text := p.Render()
		if p.Position.userSide() {
			user = append(user, text)
		} else {
			sys = append(sys, text)
		}
	}
	req := chat.Request{Messages: []chat.Message{}}
	if len(sys) > 0 {
		c := chat.Str(strings.Join(sys, "\n\n"))
		req.System = &c
	}
	if len(user) > 0 {
		req.Messages = append(req.Messages, chat.Message{Role: chat.User, Content: chat.Str(strings.Join(user, "\n\n"))})
	}
	return req
}

// Order is the assembly order of prompts, as indexes: by position, then
// priority (higher first), then place in the list. Unknown positions come
// last.
func Order(prompts []Prompt) []int {
	order := make([]int, len(prompts))
	for i := range order {
		order[i] = i
	}
	rank := func(i int) int {
		r := prompts[i].Position.index()
		if r < 0 {
			r = len(positions)
		}
		return r
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return cmpInt(ra, rb)
		}
		if pa, pb := prompts[a].Priority, prompts[b].Priority; pa != pb {
			return cmpInt(pb, pa)
		}
		return cmpInt(a, b)
	})
	return order
}

// Holds reports whether every condition of p holds on its variables.
func (p *Prompt) Holds() bool {
	for _, c := range p.Conditions {
		v, ok := p.Variables[c.Variable]
		switch {
		case c.Equals != nil:
			if !ok || v != *c.Equals {
				return false
			}
		case c.NotEquals != nil:
			if ok && v == *c.NotEquals {
				return false
			}
		case c.Exists != nil:
			if ok != *c.Exists {
				return false
			}
		}
	}
	return true
}

// Render is p's text for the model: its content, then each example as
// "Example input: …" and "Example output: …" lines, paragraphs apart,
// with {{variables}} replaced.
func (p *Prompt) Render() string {
	if len(p.Examples) == 0 {
		return RenderVariables(p.Content, p.Variables)
	}
	var b strings.Builder
	b.WriteString(p.Content)
	for _, e := range p.Examples {
		b.WriteString("\n\nExample input: ")
		b.WriteString(e.Input)
		b.WriteString("\nExample output: ")
		b.WriteString(e.Output)
	}
	return RenderVariables(b.String(), p.Variables)
}

// RenderVariables replaces each {{name}} in s (spaces inside the braces
// allowed) with vars[name]. A name vars does not hold, and anything
// between braces that is not a name, is kept as written. Replaced text is
// not looked at again.
func RenderVariables(s string, vars map[string]string) string {
	if len(vars) == 0 || !strings.Contains(s, "{{") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "{{")
		if i < 0 {
			break
		}
		j := strings.Index(s[i+2:], "}}")
		if j < 0 {
			break
		}
		name := strings.TrimSpace(s[i+2 : i+2+j])
		v, ok := vars[name]
		if !ok || !validName(name) {
			// Keep "{{" and look again from the next byte, so "{{{x}}" still
			// finds "{{x}}".
			b.WriteString(s[:i+1])
			s = s[i+1:]
			continue
		}
		b.WriteString(s[:i])
		b.WriteString(v)
		s = s[i+2+j+2:]
	}
	b.WriteString(s)
	return b.String()
}
