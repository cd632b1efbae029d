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
//
// Assemble has no error to return: use AssembleChecked for input from
// outside. A prompt with an unknown position goes last in the system
// prompt. Variables are expanded only while the text stays within the
// default render limit (see Limits.MaxRenderedBytes): a prompt whose
// expansion would take the request past it is written with its {{name}}
// references as they are.
func Assemble(prompts []Prompt) chat.Request {
	req, _ := assemble(prompts, Limits{}.withDefaults().MaxRenderedBytes, false)
	return req
}

// AssembleChecked is Assemble for input from outside: it refuses a prompt
// with an unknown position (CodeInvalidPrompt) and prompts whose rendered
// text would come to more than lim.MaxRenderedBytes (CodeTooLarge, naming
// the prompt that takes it over), rather than render them. A zero Limits
// is the defaults.
func AssembleChecked(prompts []Prompt, lim Limits) (chat.Request, error) {
	return assemble(prompts, lim.withDefaults().MaxRenderedBytes, true)
}

func assemble(prompts []Prompt, limit int, strict bool) (chat.Request, error) {
	order := Order(prompts)
	var sys, user []string
	total := 0
	for _, i := range order {
		p := &prompts[i]
		if strict && !p.Position.Valid() {
			return chat.Request{}, errorf(CodeInvalidPrompt, promptPath(i)+".position", "unknown position %q (use one of %s)", string(p.Position), positionList())
		}
		if !p.Holds() {
			continue
		}
		var text string
		size := p.renderedSize()
		if total+size > limit {
			if strict {
				return chat.Request{}, tooLargeRender(i, p, total+size, limit)
			}
			text = p.raw()
		} else {
			text = p.Render()
		}
		total += len(text) + 2
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
	return req, nil
}

func tooLargeRender(i int, p *Prompt, size, limit int) *Error {
	return errorf(CodeTooLarge, promptPath(i), "prompt %q: with their {{variables}} expanded the prompts come to %d bytes of text by this one; the limit is %d", p.ID, size, limit)
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
// with {{variables}} replaced. For input from outside use
// AssembleChecked, which checks the size against Limits.MaxRenderedBytes
// before any text is built.
func (p *Prompt) Render() string {
	return RenderVariables(p.raw(), p.Variables)
}

// raw is p's text with the {{variables}} as written.
func (p *Prompt) raw() string {
	if len(p.Examples) == 0 {
		return p.Content
	}
	var b strings.Builder
	b.WriteString(p.Content)
	for _, e := range p.Examples {
		b.WriteString("\n\nExample input: ")
		b.WriteString(e.Input)
		b.WriteString("\nExample output: ")
		b.WriteString(e.Output)
	}
	return b.String()
}

// renderedSize is len(p.Render()), without building it.
func (p *Prompt) renderedSize() int {
	n, _ := renderedSize(p.Content, p.Variables)
	for _, e := range p.Examples {
		a, _ := renderedSize(e.Input, p.Variables)
		b, _ := renderedSize(e.Output, p.Variables)
		n += len("\n\nExample input: \nExample output: ") + a + b
	}
	return n
}

// RenderVariables replaces each {{name}} in s (spaces inside the braces
// allowed) with vars[name]. A name vars does not hold, and anything
// between braces that is not a name, is kept as written. Replaced text is
// not looked at again. It takes time linear in the length of s and of
// the result.
func RenderVariables(s string, vars map[string]string) string {
	if len(vars) == 0 || !strings.Contains(s, "{{") {
		return s
	}
	size, _ := renderedSize(s, vars)
	var b strings.Builder
	b.Grow(size)
	scanVariables(s, vars, func(lit, val string) {
		b.WriteString(lit)
		b.WriteString(val)
	})
	return b.String()
}

// renderedSize is len(RenderVariables(s, vars)), and the number of bytes
// the scan looked at (for tests: it is linear in len(s)).
func renderedSize(s string, vars map[string]string) (size, work int) {
	if len(vars) == 0 || !strings.Contains(s, "{{") {
		return len(s), 0
	}
	return scanVariables(s, vars, nil)
}

// scanVariables walks s once, calling emit (when not nil) with each stretch
// of literal text and the value of the reference that follows it ("" at
// the end). It returns the length of the rendered text and the bytes it
// looked at.
//
// A reference is "{{", optional spaces, a name, optional spaces, "}}".
// Name characters are never "{", so in a run of "{" only the last two can
// start a reference: the scan jumps to them. When what follows is not a
// reference, the scan goes on after the characters it looked at, none of
// which is a "{": no byte is looked at twice.
func scanVariables(s string, vars map[string]string, emit func(lit, val string)) (size, work int) {
	start := 0 // of the literal text not yet emitted
	at := 0    // where to look for the next "{{"
	for {
		k := strings.Index(s[at:], "{{")
		if k < 0 {
			break
		}
		i := at + k
		j := i + 2
		for j < len(s) && s[j] == '{' {
			j++
		}
		work += j - at
		i = j - 2 // the last "{{" of the run
		end, name := scanReference(s, j)
		work += end - j
		v, ok := vars[name]
		if name == "" || !ok || end+2 > len(s) || s[end] != '}' || s[end+1] != '}' {
			at = max(end, j)
			continue
		}
		size += i - start + len(v)
		if emit != nil {
			emit(s[start:i], v)
		}
		start = end + 2
		at = start
	}
	size += len(s) - start
	if emit != nil {
		emit(s[start:], "")
	}
	return size, work + len(s) - at
}

// scanReference reads what follows "{{" at j: spaces, a name, spaces. It
// returns where that ends and the name, or "" when there is no valid name.
func scanReference(s string, j int) (end int, name string) {
	for j < len(s) && isSpace(s[j]) {
		j++
	}
	n := j
	for n < len(s) && isNameByte(s[n]) {
		n++
	}
	name = s[j:n]
	for n < len(s) && isSpace(s[n]) {
		n++
	}
	if !validName(name) {
		name = ""
	}
	return n, name
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
}
