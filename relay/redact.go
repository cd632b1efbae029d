package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/internal/canonjson"
)

// Pattern is a kind of secret and the regular expression (RE2 syntax) that
// finds it. When the expression has a group named "secret", only that
// group is replaced; otherwise the whole match is.
type Pattern struct {
	Kind  string `json:"kind"`
	Regex string `json:"regex"`
}

// BuiltinPatterns are what a Redactor finds unless told not to, in the
// order it applies them. E-mail addresses are not among them: see
// RedactorOptions.Emails.
//
// A private key runs from its BEGIN line (PKCS#1, PKCS#8, EC, OpenSSH,
// encrypted, PGP) through the END line or, when it was cut off before
// one, to the end of the text. A bearer token is what follows "Bearer"
// (capital B) and spaces or tabs, 16 characters or more with at least one
// digit or one of . _ + = (so prose such as "Bearer authentication/
// authorization" is left alone).
var BuiltinPatterns = []Pattern{
	{"private_key", `-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*)`},
	{"github_token", `\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b`},
	{"aws_access_key_id", `\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b`},
	{"api_key", `\bsk-[A-Za-z0-9_\-]{20,}|\bAIza[0-9A-Za-z_\-]{35}\b|\bxox[abposr]-[A-Za-z0-9\-]{10,}`},
	{"bearer_token", `\bBearer[ \t]+(?P<secret>[A-Za-z0-9\-._~+/]{16,}=*)`},
}

// needles are, for each built-in pattern, strings one of which every match
// holds: text without any of them is not searched with the pattern. Most
// text holds none, and a substring search is many times faster than the
// regular expression. TestBuiltinNeedles holds each list to its pattern.
var needles = map[string][]string{
	"private_key":       {"-----BEGIN "},
	"github_token":      {"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
	"aws_access_key_id": {"AKIA", "ASIA", "ABIA", "ACCA"},
	"api_key":           {"sk-", "AIza", "xox"},
	"bearer_token":      {"Bearer"},
	"email":             {"@"},
}

// checks are the tests a built-in pattern's secret must also pass.
var checks = map[string]func(string) bool{
	"bearer_token": func(tok string) bool { return strings.ContainsAny(tok, "0123456789._+=") },
}

// EmailPattern finds e-mail addresses; see RedactorOptions.Emails.
var EmailPattern = Pattern{"email", `\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b`}

// Bounds on a redactor's own patterns. A pattern's cost per byte of text
// grows with the size of its compiled program, so besides its length a
// pattern may repeat at most MaxRepeat times ({n,m} counts) and compile to
// at most MaxPatternInsts instructions, and all of a redactor's patterns
// to at most MaxRedactorInsts.
const (
	MaxPatterns      = 64
	MaxPatternBytes  = 1024
	MaxRepeat        = 100
	MaxPatternInsts  = 2000
	MaxRedactorInsts = 10000
	// MaxPatternWork bounds one run of an own pattern over one text: the
	// text's length times the pattern's compiled size. A run cannot be
	// stopped midway (a deadline is checked between runs), and the cost
	// per byte of a pattern can grow with its size, so a long text and a
	// large pattern together fail the relay (CodeTooLarge) rather than
	// run. A 1 MiB text so takes patterns of up to 64 instructions, a
	// 16 KiB one up to MaxPatternInsts. The built-in patterns are not
	// bound by it.
	MaxPatternWork = 64 << 20
)

// RedactorOptions configure a Redactor; the zero value redacts the
// built-in patterns.
type RedactorOptions struct {
	Patterns   []Pattern // applied after the built-in ones
	Emails     bool      // also redact e-mail addresses
	NoBuiltins bool      // do not apply BuiltinPatterns
}

// Redactor replaces secrets with [REDACTED:<kind>] in every prompt's
// name, content, description, examples, variable values, condition values
// (equals, not_equals: redacted like the variables, so a condition on a
// secret holds as it did, though two different secrets of one kind now
// compare equal) and metadata (keys, strings at any depth, and the strings
// inside json.RawMessage values).
//
// A secret may also be split between a prompt's text and its variables
// ("Bearer {{token}}"). When a prompt's text with its {{variables}}
// expanded still holds a secret, the redactor expands them in the prompt
// (its content and examples then hold the text Assemble would have made),
// keeps only the variables its conditions test, and redacts the result.
//
// The redactor is the one transformer that changes the relay context:
// after it runs, the relay gives every later step the context with its
// task, constraints and memory (keys and strings) redacted too, so a
// context injector placed after it writes no secret. Every other
// transformer's changes to its copy of the context stay its own. Use
// NewRedactor.
type Redactor struct {
	rules []rule
}

type rule struct {
	kind   string
	re     *regexp.Regexp
	secret int               // the index of the "secret" group, or 0 for the whole match
	check  func(string) bool // what a secret must also pass; nil for none
	insts  int               // the compiled size of an own pattern; 0 for a built-in one
	// needles: every match holds one of them; nil when nothing is known
	// (the pattern then runs on every text).
	needles []string
}

// mayMatch is false when s holds none of the rule's needles, so the
// pattern cannot match it.
func (ru *rule) mayMatch(s string) bool {
	if ru.needles == nil {
		return true
	}
	for _, n := range ru.needles {
		if strings.Contains(s, n) {
			return true
		}
	}
	return false
}

// NewRedactor compiles the options. Errors are *Error of code
// CodeInvalidPipeline naming the pattern at fault: patterns[1].regex.
func NewRedactor(opts RedactorOptions) (*Redactor, error) {
	var pats []Pattern
	if !opts.NoBuiltins {
		pats = append(pats, BuiltinPatterns...)
	}
	if opts.Emails {
		pats = append(pats, EmailPattern)
	}
	if len(opts.Patterns) > MaxPatterns {
		return nil, errorf(CodeInvalidPipeline, "patterns", "%d patterns; the limit is %d", len(opts.Patterns), MaxPatterns)
	}
	insts := 0
	own := map[int]int{} // the compiled size of each own pattern, by its index in pats
	for i, p := range opts.Patterns {
		at := fmt.Sprintf("patterns[%d]", i)
		if p.Kind == "" || !validName(p.Kind) {
			return nil, errorf(CodeInvalidPipeline, at+".kind", "%q is not a kind (a letter or _, then letters, digits, _, . or -)", p.Kind)
		}
		if p.Regex == "" {
			return nil, errorf(CodeInvalidPipeline, at+".regex", "required")
		}
		if len(p.Regex) > MaxPatternBytes {
			return nil, errorf(CodeInvalidPipeline, at+".regex", "%d bytes; the limit is %d", len(p.Regex), MaxPatternBytes)
		}
		if _, err := regexp.Compile(p.Regex); err != nil {
			return nil, errorf(CodeInvalidPipeline, at+".regex", "%s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
		n, err := patternCost(p.Regex)
		if err != nil {
			return nil, errorf(CodeInvalidPipeline, at+".regex", "%v", err)
		}
		if insts += n; insts > MaxRedactorInsts {
			return nil, errorf(CodeInvalidPipeline, at+".regex", "the patterns up to this one compile to %d instructions; a redactor's limit is %d (use fewer or simpler patterns)", insts, MaxRedactorInsts)
		}
		own[len(pats)] = n
		pats = append(pats, p)
	}
	if len(pats) == 0 {
		return nil, errorf(CodeInvalidPipeline, "builtins", "false, with no patterns and no emails: the redactor would redact nothing (add patterns, or leave builtins out)")
	}
	r := &Redactor{}
	for i, p := range pats {
		re := regexp.MustCompile(p.Regex)
		if re.MatchString("") {
			return nil, errorf(CodeInvalidPipeline, "patterns", "the %s pattern matches empty text", p.Kind)
		}
		ru := rule{kind: p.Kind, re: re, secret: re.SubexpIndex("secret"), insts: own[i]}
		if !opts.NoBuiltins && slices.ContainsFunc(BuiltinPatterns, func(b Pattern) bool { return b == p }) {
			ru.check = checks[p.Kind]
		}
		if _, mine := own[i]; !mine {
			ru.needles = needles[p.Kind] // a built-in pattern, or the e-mail one
		} else if prefix, _ := re.LiteralPrefix(); prefix != "" {
			// Every match of an own pattern starts with its literal
			// prefix.
			ru.needles = []string{prefix}
		}
		r.rules = append(r.rules, ru)
	}
	return r, nil
}

// patternCost is the number of instructions a pattern compiles to, or an
// error when it is over MaxPatternInsts or repeats more than MaxRepeat
// times.
func patternCost(expr string) (int, error) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return 0, err
	}
	if n := maxRepeat(re); n > MaxRepeat {
		return 0, fmt.Errorf("a repetition count of %d; the limit is %d (use + or * for a long run)", n, MaxRepeat)
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0, err
	}
	if n := len(prog.Inst); n > MaxPatternInsts {
		return 0, fmt.Errorf("compiles to %d instructions; the limit is %d (use fewer alternatives or smaller repetition counts)", n, MaxPatternInsts)
	}
	return len(prog.Inst), nil
}

// maxRepeat is the largest {n,m} count in re.
func maxRepeat(re *syntax.Regexp) int {
	n := 0
	if re.Op == syntax.OpRepeat {
		n = max(re.Min, re.Max)
	}
	for _, s := range re.Sub {
		n = max(n, maxRepeat(s))
	}
	return n
}

// Name is "redactor".
func (r *Redactor) Name() string { return TypeRedactor }

// Redact returns s with every secret replaced, and how many of each kind
// it found (nil when none). Unlike a relay step it runs every pattern
// whatever the length of s (see MaxPatternWork).
func (r *Redactor) Redact(s string) (string, map[string]int) {
	out, found, _ := r.redact(context.Background(), false, s)
	return out, found
}

// redact is Redact; in a relay step (step set) it checks ctx before each
// pattern and refuses to run an own pattern past MaxPatternWork.
func (r *Redactor) redact(ctx context.Context, step bool, s string) (string, map[string]int, error) {
	var found map[string]int
	for i := range r.rules {
		ru := &r.rules[i]
		if err := ru.mayRun(ctx, step, s); err != nil {
			return s, found, err
		}
		if !ru.mayMatch(s) {
			continue
		}
		ms := ru.re.FindAllStringSubmatchIndex(s, -1)
		if ms == nil {
			continue
		}
		var b strings.Builder
		last := 0
		for _, m := range ms {
			start, end, ok := ru.secretAt(s, m)
			if !ok {
				continue
			}
			b.WriteString(s[last:start])
			b.WriteString("[REDACTED:")
			b.WriteString(ru.kind)
			b.WriteString("]")
			last = end
			if found == nil {
				found = map[string]int{}
			}
			found[ru.kind]++
		}
		if last == 0 {
			continue
		}
		b.WriteString(s[last:])
		s = b.String()
	}
	return s, found, nil
}

// mayRun says why the rule must not run on s in a relay step: ctx ended,
// or s is too long for an own pattern this large. Outside a step (step
// false) it may always run.
func (ru *rule) mayRun(ctx context.Context, step bool, s string) error {
	if !step {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if ru.insts > 0 && len(s)*ru.insts > MaxPatternWork {
		return errorf(CodeTooLarge, "", "a %d-byte text is too long for the %s pattern (%d instructions): an own pattern runs on at most %d bytes of text per instruction (use a simpler pattern)",
			len(s), ru.kind, ru.insts, MaxPatternWork/ru.insts)
	}
	return nil
}

// secretAt is the part of the match m to replace, and whether it is a
// secret at all.
func (ru *rule) secretAt(s string, m []int) (start, end int, ok bool) {
	start, end = m[0], m[1]
	if ru.secret > 0 {
		start, end = m[2*ru.secret], m[2*ru.secret+1]
		if start < 0 {
			return 0, 0, false
		}
	}
	if ru.check != nil && !ru.check(s[start:end]) {
		return 0, 0, false
	}
	return start, end, true
}

// holdsSecret reports whether Redact would change s, in a relay step (see
// redact).
func (r *Redactor) holdsSecret(ctx context.Context, s string) (bool, error) {
	for i := range r.rules {
		ru := &r.rules[i]
		if err := ru.mayRun(ctx, true, s); err != nil {
			return false, err
		}
		if !ru.mayMatch(s) {
			continue
		}
		if ru.check == nil && ru.secret == 0 {
			if ru.re.MatchString(s) {
				return true, nil
			}
			continue
		}
		for _, m := range ru.re.FindAllStringSubmatchIndex(s, -1) {
			if _, _, ok := ru.secretAt(s, m); ok {
				return true, nil
			}
		}
	}
	return false, nil
}

// redaction redacts the strings of one step, counting what it finds, and
// stops redacting when ctx ends (err then says why).
type redaction struct {
	r     *Redactor
	ctx   context.Context
	found map[string]int
	n     int // secrets found, of any kind
	err   error
}

func (d *redaction) str(s string) string {
	if d.err != nil {
		return s
	}
	out, found, err := d.r.redact(d.ctx, true, s)
	if d.err = err; err != nil {
		return s
	}
	for k, n := range found {
		d.found[k] += n
		d.n += n
	}
	return out
}

// Transform redacts every prompt (see Redactor). It stops, with the
// context's error, when ctx ends.
func (r *Redactor) Transform(ctx context.Context, rc *Context, prompts []Prompt) ([]Prompt, error) {
	d := &redaction{r: r, ctx: ctx, found: map[string]int{}}
	limit := Limits{}.withDefaults().MaxRenderedBytes
	for i := range prompts {
		p := &prompts[i]
		d.prompt(p)
		if d.err == nil && len(p.Variables) > 0 && p.hasReference() {
			if n := p.renderedSize(); n > limit {
				return nil, tooLargeRender(i, p, n, limit)
			}
			found, err := r.holdsSecret(ctx, p.Render())
			if err != nil {
				return nil, err
			}
			if found {
				d.inline(p)
			}
		}
		if d.err != nil {
			return nil, d.err
		}
	}
	if len(d.found) > 0 {
		Note(ctx, "redacted %s", countList(d.found))
	}
	return prompts, nil
}

// countList is "kind×n, ..." in the order of the kinds.
func countList(found map[string]int) string {
	kinds := sortedKeys(found)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s×%d", k, found[k])
	}
	return strings.Join(parts, ", ")
}

func (d *redaction) prompt(p *Prompt) {
	p.Name = d.str(p.Name)
	p.Content = d.str(p.Content)
	p.Description = d.str(p.Description)
	for j := range p.Examples {
		p.Examples[j].Input = d.str(p.Examples[j].Input)
		p.Examples[j].Output = d.str(p.Examples[j].Output)
	}
	for k, v := range p.Variables {
		p.Variables[k] = d.str(v)
	}
	for j := range p.Conditions {
		c := &p.Conditions[j]
		if c.Equals != nil {
			v := d.str(*c.Equals)
			c.Equals = &v
		}
		if c.NotEquals != nil {
			v := d.str(*c.NotEquals)
			c.NotEquals = &v
		}
	}
	d.object(p.Metadata)
}

// inline expands p's variables in its content and examples, keeps only
// the variables its conditions test, and redacts the expanded text.
func (d *redaction) inline(p *Prompt) {
	p.Content = d.str(RenderVariables(p.Content, p.Variables))
	for j := range p.Examples {
		e := &p.Examples[j]
		e.Input = d.str(RenderVariables(e.Input, p.Variables))
		e.Output = d.str(RenderVariables(e.Output, p.Variables))
	}
	kept := map[string]string{}
	for _, c := range p.Conditions {
		if v, ok := p.Variables[c.Variable]; ok {
			kept[c.Variable] = v
		}
	}
	p.Variables = kept
	if len(kept) == 0 {
		p.Variables = nil
	}
}

// hasReference reports whether p's content or examples may hold a
// {{reference}}.
func (p *Prompt) hasReference() bool {
	if strings.Contains(p.Content, "{{") {
		return true
	}
	for _, e := range p.Examples {
		if strings.Contains(e.Input, "{{") || strings.Contains(e.Output, "{{") {
			return true
		}
	}
	return false
}

// object redacts a JSON object's keys and values in place.
func (d *redaction) object(m map[string]any) {
	var renamed []string
	for k, v := range m {
		m[k] = d.value(v)
		if nk := d.str(k); nk != k {
			renamed = append(renamed, k)
		}
	}
	if len(renamed) == 0 {
		return
	}
	slices.Sort(renamed)
	for _, k := range renamed {
		v := m[k]
		delete(m, k)
		m[freeKey(m, d.str(k))] = v
	}
}

// freeKey is k, or k with "#2", "#3", ... when m holds k already (two
// keys that redact alike).
func freeKey[V any](m map[string]V, k string) string {
	if _, ok := m[k]; !ok {
		return k
	}
	for n := 2; ; n++ {
		s := k + "#" + strconv.Itoa(n)
		if _, ok := m[s]; !ok {
			return s
		}
	}
}

func (d *redaction) value(v any) any {
	switch x := v.(type) {
	case string:
		return d.str(x)
	case map[string]any:
		d.object(x)
	case []any:
		for i, e := range x {
			x[i] = d.value(e)
		}
	case []string:
		for i, e := range x {
			x[i] = d.str(e)
		}
	case map[string]string:
		var renamed []string
		for k, e := range x {
			x[k] = d.str(e)
			if d.str(k) != k {
				renamed = append(renamed, k)
			}
		}
		slices.Sort(renamed)
		for _, k := range renamed {
			e := x[k]
			delete(x, k)
			x[freeKey(x, d.str(k))] = e
		}
	case json.RawMessage:
		return d.raw(x)
	}
	return v
}

// raw redacts the strings and keys inside a JSON text: decoded, redacted
// and encoded again when it holds a secret, as it was otherwise.
func (d *redaction) raw(x json.RawMessage) json.RawMessage {
	if d.err != nil {
		return x
	}
	found, err := d.r.holdsSecret(d.ctx, string(x))
	if d.err = err; err != nil {
		return x
	}
	if !found && !bytes.Contains(x, []byte(`\`)) {
		return x // no secret, not even behind an escape
	}
	dec := json.NewDecoder(bytes.NewReader(x))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		// Not JSON (validation refuses it): redact it as text.
		return json.RawMessage(d.str(string(x)))
	}
	before := d.n
	if v = d.value(v); d.n == before {
		return x
	}
	out, err := canonjson.Marshal(v)
	if err != nil {
		return json.RawMessage(`null`)
	}
	return out
}

// redactContext is a copy of rc with its task, constraints and memory
// redacted, and what it found.
func (r *Redactor) redactContext(rc *Context) (*Context, map[string]int) {
	d := &redaction{r: r, ctx: context.Background(), found: map[string]int{}}
	out := &Context{
		SourceAgent: rc.SourceAgent,
		TargetAgent: rc.TargetAgent,
		Task:        d.str(rc.Task),
		Memory:      cloneMap(rc.Memory),
		Constraints: slices.Clone(rc.Constraints),
	}
	for i, c := range out.Constraints {
		out.Constraints[i] = d.str(c)
	}
	d.object(out.Memory)
	return out, d.found
}

// redactorFor is t's redactor when t is a Redactor, alone or under
// ForTargets that apply to target; nil otherwise.
func redactorFor(t Transformer, target string) *Redactor {
	for {
		switch x := t.(type) {
		case *Redactor:
			return x
		case *forTargets:
			if x == nil || !slices.Contains(x.targets, target) {
				return nil
			}
			t = x.t
		default:
			return nil
		}
	}
}
