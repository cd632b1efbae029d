package relay

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Transformer names, as Name returns them and pipeline files spell them.
const (
	TypeContextInjector = "context_injector"
	TypeScopeNarrower   = "scope_narrower"
	TypeTokenBudget     = "token_budget"
	TypeRedactor        = "redactor"
)

// ContextInjector prepends a system_prefix prompt (priority 1, metadata
// relay: true, source, target and hop) that tells the sub-agent about the
// delegation. Its default text is
//
//	Delegated by: <SourceAgent>
//	Task: <Task>
//	Constraints:
//	  - <constraint 1>
//	  - <constraint 2>
//
//	Shared Context: <N> items available
//
// with no trailing newline; the constraints block is there only when there
// are constraints and IncludeConstraints is set, the blank line and the
// memory line only when the memory is not empty and IncludeMemory is set.
// With IncludeMemoryValues the memory itself follows on the next line, as
// compact JSON with sorted keys.
//
// A Template replaces the default text: {SourceAgent}, {TargetAgent} and
// {Task} become the context's; {Constraints} the constraints joined with
// ", " ("None" when there are none or IncludeConstraints is not set);
// {MemoryCount} the number of memory items (0 without IncludeMemory);
// {Memory} the memory as compact JSON with sorted keys, only with
// IncludeMemoryValues (empty otherwise). Other text is kept as written.
//
// The injected prompt's ID is "relay:<source>><target>", with "#2", "#3",
// ... appended when the prompts hold it already, so every hop of a chain
// (A to B to A) keeps its own context. Being prepended, the newest
// delegation (the sub-agent's own delegator) comes first. The relay
// context needs a source agent and a task.
type ContextInjector struct {
	Template            string
	IncludeConstraints  bool
	IncludeMemory       bool
	IncludeMemoryValues bool
}

// NewContextInjector is a ContextInjector with the defaults: constraints
// and the memory count included, memory values not.
func NewContextInjector() *ContextInjector {
	return &ContextInjector{IncludeConstraints: true, IncludeMemory: true}
}

// Name is "context_injector".
func (c *ContextInjector) Name() string { return TypeContextInjector }

// Text is the text the injector writes for rc.
func (c *ContextInjector) Text(rc *Context) (string, error) {
	memory := ""
	if c.IncludeMemoryValues && c.IncludeMemory && len(rc.Memory) > 0 {
		b, err := EncodeJSON(rc.Memory)
		if err != nil {
			return "", fmt.Errorf("memory: %v", err)
		}
		memory = string(b)
	}
	nMemory := 0
	if c.IncludeMemory {
		nMemory = len(rc.Memory)
	}
	constraints := rc.Constraints
	if !c.IncludeConstraints {
		constraints = nil
	}
	if c.Template != "" {
		joined := "None"
		if len(constraints) > 0 {
			joined = strings.Join(constraints, ", ")
		}
		return strings.NewReplacer(
			"{SourceAgent}", rc.SourceAgent,
			"{TargetAgent}", rc.TargetAgent,
			"{Task}", rc.Task,
			"{Constraints}", joined,
			"{MemoryCount}", strconv.Itoa(nMemory),
			"{Memory}", memory,
		).Replace(c.Template), nil
	}
	var b strings.Builder
	b.WriteString("Delegated by: ")
	b.WriteString(rc.SourceAgent)
	b.WriteString("\nTask: ")
	b.WriteString(rc.Task)
	if len(constraints) > 0 {
		b.WriteString("\nConstraints:")
		for _, s := range constraints {
			b.WriteString("\n  - ")
			b.WriteString(s)
		}
	}
	if nMemory > 0 {
		fmt.Fprintf(&b, "\n\nShared Context: %d items available", nMemory)
		if memory != "" {
			b.WriteString("\n")
			b.WriteString(memory)
		}
	}
	return b.String(), nil
}

// Transform prepends the delegation prompt.
func (c *ContextInjector) Transform(ctx context.Context, rc *Context, prompts []Prompt) ([]Prompt, error) {
	if rc.SourceAgent == "" {
		return nil, fmt.Errorf("the relay context has no source_agent")
	}
	if rc.Task == "" {
		return nil, fmt.Errorf("the relay context has no task")
	}
	text, err := c.Text(rc)
	if err != nil {
		return nil, err
	}
	if text == "" {
		return nil, fmt.Errorf("the template makes an empty prompt")
	}
	ids := make(map[string]bool, len(prompts))
	hop := 1
	for i := range prompts {
		ids[prompts[i].ID] = true
		if prompts[i].Injected() {
			hop++
		}
	}
	base := "relay:" + rc.SourceAgent + ">" + rc.TargetAgent
	id := base
	for n := 2; ids[id]; n++ {
		id = base + "#" + strconv.Itoa(n)
	}
	p := Prompt{
		ID:       id,
		Name:     "delegation context",
		Position: SystemPrefix,
		Content:  text,
		Priority: 1,
		Metadata: map[string]any{"relay": true, "source": rc.SourceAgent, "target": rc.TargetAgent, "hop": int64(hop)},
	}
	return append([]Prompt{p}, prompts...), nil
}

// ScopeNarrower keeps only the prompts that pass every filter it has: a
// position in AllowedPositions, an ID not in ExcludeIDs, and content
// that contains at least one of KeywordFilter (case-insensitive). An empty
// list does not filter. Prompts the relay injected (metadata relay: true)
// pass the ID and keyword filters; only AllowedPositions can drop them.
type ScopeNarrower struct {
	AllowedPositions []Position
	ExcludeIDs       []string
	KeywordFilter    []string
}

// Name is "scope_narrower".
func (s *ScopeNarrower) Name() string { return TypeScopeNarrower }

// Transform drops the prompts out of scope.
func (s *ScopeNarrower) Transform(ctx context.Context, rc *Context, prompts []Prompt) ([]Prompt, error) {
	for i, p := range s.AllowedPositions {
		if !p.Valid() || p == "" {
			return nil, fmt.Errorf("allowed_positions[%d]: unknown position %q", i, string(p))
		}
	}
	keywords := make([]string, 0, len(s.KeywordFilter))
	for _, k := range s.KeywordFilter {
		if k != "" {
			keywords = append(keywords, strings.ToLower(k))
		}
	}
	out := prompts[:0]
	for _, p := range prompts {
		if s.keep(&p, keywords) {
			out = append(out, p)
		}
	}
	return out, nil
}

func (s *ScopeNarrower) keep(p *Prompt, keywords []string) bool {
	if len(s.AllowedPositions) > 0 {
		pos := p.Position
		if pos == "" {
			pos = DefaultPosition
		}
		if !slices.Contains(s.AllowedPositions, pos) {
			return false
		}
	}
	if p.Injected() {
		return true
	}
	if slices.Contains(s.ExcludeIDs, p.ID) {
		return false
	}
	if len(keywords) == 0 {
		return true
	}
	// Fast path: ASCII case folding on the raw bytes finds every match
	// lower-casing would find in ASCII text; only text with other
	// characters (which may fold to ASCII, like the Kelvin sign) needs the
	// full lower-casing.
	ascii := true
	for _, k := range keywords {
		found, nonASCII := containsFoldASCII(p.Content, k)
		if found {
			return true
		}
		if nonASCII {
			ascii = false
			break
		}
	}
	if ascii {
		return false
	}
	content := strings.ToLower(p.Content)
	for _, k := range keywords {
		if strings.Contains(content, k) {
			return true
		}
	}
	return false
}

// containsFoldASCII reports whether s contains kw, ignoring ASCII case (kw
// is lower case), and whether s or kw holds a byte that is not ASCII (the
// answer is then only good when found).
func containsFoldASCII(s, kw string) (found, nonASCII bool) {
	if !isASCII(kw) {
		return false, true
	}
	n := len(kw)
	c0 := kw[0]
	u0 := c0
	if 'a' <= c0 && c0 <= 'z' {
		u0 -= 'a' - 'A'
	}
	// Candidates start with c0 or u0; strings.IndexByte finds each fast.
	// nextL and nextU are the next candidates of each case not yet tried.
	nextL, nextU := -1, -1
	for at := 0; at+n <= len(s); {
		if nextL < at {
			if k := strings.IndexByte(s[at:], c0); k >= 0 {
				nextL = at + k
			} else {
				nextL = len(s)
			}
		}
		if nextU < at {
			if k := strings.IndexByte(s[at:], u0); k >= 0 {
				nextU = at + k
			} else {
				nextU = len(s)
			}
		}
		i := min(nextL, nextU)
		if i+n > len(s) {
			break
		}
		if equalFoldASCII(s[i+1:i+n], kw[1:]) {
			return true, false
		}
		at = i + 1
	}
	return false, !isASCII(s)
}

// equalFoldASCII reports whether s lower-cased (ASCII only) is kw.
func equalFoldASCII(s, kw string) bool {
	for j := 0; j < len(kw); j++ {
		c := s[j]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != kw[j] {
			return false
		}
	}
	return true
}

func isASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if (uint64(s[i])|uint64(s[i+1])<<8|uint64(s[i+2])<<16|uint64(s[i+3])<<24|
			uint64(s[i+4])<<32|uint64(s[i+5])<<40|uint64(s[i+6])<<48|uint64(s[i+7])<<56)&0x8080808080808080 != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// ForTargets applies t only when the relay delegates to one of targets;
// for any other target agent the prompts pass unchanged. One pipeline can
// so fan out to specialists with different scopes. Its name is t's name,
// "@" and the targets joined with ",".
func ForTargets(t Transformer, targets ...string) Transformer {
	return &forTargets{t: t, targets: slices.Clone(targets)}
}

type forTargets struct {
	t       Transformer
	targets []string
}

func (f *forTargets) Name() string { return f.t.Name() + "@" + strings.Join(f.targets, ",") }

func (f *forTargets) Transform(ctx context.Context, rc *Context, prompts []Prompt) ([]Prompt, error) {
	if !slices.Contains(f.targets, rc.TargetAgent) {
		return prompts, nil
	}
	return f.t.Transform(ctx, rc, prompts)
}
