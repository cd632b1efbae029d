package relay

import (
	"context"
	"fmt"
	"regexp"
	"strings"
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
var BuiltinPatterns = []Pattern{
	{"private_key", `-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----`},
	{"github_token", `\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b`},
	{"aws_access_key_id", `\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b`},
	{"api_key", `\bsk-[A-Za-z0-9_\-]{20,}|\bAIza[0-9A-Za-z_\-]{35}\b|\bxox[abposr]-[A-Za-z0-9\-]{10,}`},
	{"bearer_token", `\b(?:Bearer|bearer|BEARER)\s+(?P<secret>[A-Za-z0-9\-._~+/]{16,}=*)`},
}

// EmailPattern finds e-mail addresses; see RedactorOptions.Emails.
var EmailPattern = Pattern{"email", `\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b`}

// Bounds on a redactor's own patterns.
const (
	MaxPatterns     = 64
	MaxPatternBytes = 1024
)

// RedactorOptions configure a Redactor; the zero value redacts the
// built-in patterns.
type RedactorOptions struct {
	Patterns   []Pattern // applied after the built-in ones
	Emails     bool      // also redact e-mail addresses
	NoBuiltins bool      // do not apply BuiltinPatterns
}

// Redactor replaces secrets with [REDACTED:<kind>] in every prompt's
// content, description, examples, variable values and metadata strings.
// Use NewRedactor.
type Redactor struct {
	rules []rule
}

type rule struct {
	kind   string
	re     *regexp.Regexp
	secret int // the index of the "secret" group, or 0 for the whole match
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
		pats = append(pats, p)
	}
	r := &Redactor{}
	for _, p := range pats {
		re := regexp.MustCompile(p.Regex)
		if re.MatchString("") {
			return nil, errorf(CodeInvalidPipeline, "patterns", "the %s pattern matches empty text", p.Kind)
		}
		r.rules = append(r.rules, rule{kind: p.Kind, re: re, secret: re.SubexpIndex("secret")})
	}
	return r, nil
}

// Name is "redactor".
func (r *Redactor) Name() string { return TypeRedactor }

// Redact returns s with every secret replaced, and how many of each kind
// it found (nil when none).
func (r *Redactor) Redact(s string) (string, map[string]int) {
	var found map[string]int
	for _, ru := range r.rules {
		ms := ru.re.FindAllStringSubmatchIndex(s, -1)
		if ms == nil {
			continue
		}
		var b strings.Builder
		last := 0
		for _, m := range ms {
			start, end := m[0], m[1]
			if ru.secret > 0 {
				start, end = m[2*ru.secret], m[2*ru.secret+1]
				if start < 0 {
					continue
				}
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
		b.WriteString(s[last:])
		s = b.String()
	}
	return s, found
}

// Transform redacts every prompt.
func (r *Redactor) Transform(ctx context.Context, rc *Context, prompts []Prompt) ([]Prompt, error) {
	total := map[string]int{}
	red := func(s string) string {
		out, found := r.Redact(s)
		for k, n := range found {
			total[k] += n
		}
		return out
	}
	for i := range prompts {
		p := &prompts[i]
		p.Content = red(p.Content)
		p.Description = red(p.Description)
		for j := range p.Examples {
			p.Examples[j].Input = red(p.Examples[j].Input)
			p.Examples[j].Output = red(p.Examples[j].Output)
		}
		for k, v := range p.Variables {
			p.Variables[k] = red(v)
		}
		for k, v := range p.Metadata {
			p.Metadata[k] = redactValue(v, red)
		}
	}
	if len(total) > 0 {
		kinds := sortedKeys(total)
		parts := make([]string, len(kinds))
		for i, k := range kinds {
			parts[i] = fmt.Sprintf("%s×%d", k, total[k])
		}
		Note(ctx, "redacted %s", strings.Join(parts, ", "))
	}
	return prompts, nil
}

func redactValue(v any, red func(string) string) any {
	switch x := v.(type) {
	case string:
		return red(x)
	case map[string]any:
		for k, e := range x {
			x[k] = redactValue(e, red)
		}
	case []any:
		for i, e := range x {
			x[i] = redactValue(e, red)
		}
	case []string:
		for i, e := range x {
			x[i] = red(e)
		}
	case map[string]string:
		for k, e := range x {
			x[k] = red(e)
		}
	}
	return v
}
