package relay

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/canonjson"
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
//
// A template is at most MaxTemplateBytes long, the memory's JSON at most
// MaxMemoryJSONBytes, and the text the injector writes at most
// MaxInjectedBytes: past them the relay fails (CodeTooLarge, under
// CodeTransformFailed) rather than build it.
type ContextInjector struct {
	Template            string
	IncludeConstraints  bool
	IncludeMemory       bool
	IncludeMemoryValues bool
}

// Bounds on what a ContextInjector writes.
const (
	MaxTemplateBytes   = 16 << 10
	MaxMemoryJSONBytes = 64 << 10
	MaxInjectedBytes   = 1 << 20
)

// NewContextInjector is a ContextInjector with the defaults: constraints
// and the memory count included, memory values not.
func NewContextInjector() *ContextInjector {
	return &ContextInjector{IncludeConstraints: true, IncludeMemory: true}
}

// Name is "context_injector".
func (c *ContextInjector) Name() string { return TypeContextInjector }

// Text is the text the injector writes for rc. Errors are *Error of code
// CodeTooLarge past the bounds above.
func (c *ContextInjector) Text(rc *Context) (string, error) {
	if len(c.Template) > MaxTemplateBytes {
		return "", errorf(CodeTooLarge, "template", "%d bytes; the limit is %d", len(c.Template), MaxTemplateBytes)
	}
	memory := ""
	if c.IncludeMemoryValues && c.IncludeMemory && len(rc.Memory) > 0 {
		b, err := canonjson.Marshal(rc.Memory)
		if err != nil {
			return "", fmt.Errorf("memory: %v", err)
		}
		if len(b) > MaxMemoryJSONBytes {
			return "", errorf(CodeTooLarge, "memory", "%d bytes of JSON; the injector includes at most %d (leave include_memory_values out)", len(b), MaxMemoryJSONBytes)
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
		pairs := []string{
			"{SourceAgent}", rc.SourceAgent,
			"{TargetAgent}", rc.TargetAgent,
			"{Task}", rc.Task,
			"{Constraints}", joined,
			"{MemoryCount}", strconv.Itoa(nMemory),
			"{Memory}", memory,
		}
		// The placeholders cannot overlap (each is one brace-delimited
		// word), so counting each tells the size of the result.
		size := len(c.Template)
		for i := 0; i < len(pairs); i += 2 {
			if n := strings.Count(c.Template, pairs[i]); n > 0 {
				size += n * (len(pairs[i+1]) - len(pairs[i]))
			}
		}
		if size > MaxInjectedBytes {
			return "", errorf(CodeTooLarge, "template", "the template makes %d bytes of text; the limit is %d", size, MaxInjectedBytes)
		}
		return strings.NewReplacer(pairs...).Replace(c.Template), nil
	}
	size := len(rc.SourceAgent) + len(rc.Task) + len(memory) + 64
	for _, s := range constraints {
		size += len(s) + 5
	}
	if size > MaxInjectedBytes {
		return "", errorf(CodeTooLarge, "", "the delegation text would be %d bytes; the limit is %d", size, MaxInjectedBytes)
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

// Transform prepends the delegation prompt. The prompts it gets pass
// through untouched and in order (the relay's trace counts on it).
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
	hop := 1
	for i := range prompts {
		if prompts[i].Injected() {
			hop++
		}
	}
	base := "relay:" + rc.SourceAgent + ">" + rc.TargetAgent
	id := base
	for n := 2; hasID(prompts, id); n++ {
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

// hasID reports whether a prompt has the ID id.
func hasID(prompts []Prompt, id string) bool {
	for i := range prompts {
		if prompts[i].ID == id {
			return true
		}
	}
	return false
}

// ScopeNarrower keeps only the prompts that pass every filter it has: a
// position in AllowedPositions, an ID not in ExcludeIDs, and content
// that contains at least one of KeywordFilter (case-insensitive). An empty
// list does not filter. Prompts the relay injected (see Prompt.Injected)
// pass the ID and keyword filters; only AllowedPositions can drop them.
type ScopeNarrower struct {
	AllowedPositions []Position
	ExcludeIDs       []string
	KeywordFilter    []string
}

// Name is "scope_narrower".
func (s *ScopeNarrower) Name() string { return TypeScopeNarrower }

// Transform drops the prompts out of scope. The prompts it keeps pass
// through untouched and in order (the relay's trace counts on it).
func (s *ScopeNarrower) Transform(ctx context.Context, rc *Context, prompts []Prompt) ([]Prompt, error) {
	for i, p := range s.AllowedPositions {
		if !p.Valid() || p == "" {
			return nil, fmt.Errorf("allowed_positions[%d]: unknown position %q", i, string(p))
		}
	}
	keywords := make([]keyword, 0, len(s.KeywordFilter))
	for _, k := range s.KeywordFilter {
		if k != "" {
			keywords = append(keywords, newKeyword(k))
		}
	}
	// Kept prompts move up in place: the prompts are this step's own.
	out := prompts[:0]
	for i := range prompts {
		if s.keep(&prompts[i], keywords) {
			out = append(out, prompts[i])
		}
	}
	return out, nil
}

func (s *ScopeNarrower) keep(p *Prompt, keywords []keyword) bool {
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
	for i := range keywords {
		if keywords[i].in(p.Content) {
			return true
		}
	}
	return false
}

// keyword is a keyword lower-cased, ready to look for.
type keyword struct {
	lower string
	ascii bool
	pivot int // the index of its rarest byte, when ASCII (see rarestByte)
}

func newKeyword(k string) keyword {
	kw := keyword{lower: strings.ToLower(k)}
	if kw.ascii = isASCII(kw.lower); kw.ascii {
		kw.pivot = rarestByte(kw.lower)
	}
	return kw
}

// in reports whether strings.ToLower(s) contains the keyword, without
// building the lower-cased s: the scan allocates nothing.
//
// An ASCII keyword is first looked for byte by byte, folding ASCII case: a
// match there is a match in the lower-cased text, and in ASCII text no
// match there is none at all. Text with other characters, which may
// lower-case to ASCII (the Kelvin sign to k), is scanned character by
// character: both sides are valid UTF-8 once lower-cased (ToLower writes
// U+FFFD for a byte that is not UTF-8), so a match starts where a
// character of s starts. A scan that does much more work than the length
// of s (on text built to defeat it, such as a long run of one letter
// searched for a keyword made mostly of that letter) stops, and the
// lower-cased copy is searched instead, in linear time.
func (k keyword) in(s string) bool {
	budget := 4*len(s) + 64
	if k.ascii {
		found, done := containsFoldASCII(s, k.lower, k.pivot, budget)
		if found {
			return true
		}
		if done && isASCII(s) {
			return false
		}
	}
	if found, done := containsFoldUnicode(s, k.lower, budget); done {
		return found
	}
	return strings.Contains(strings.ToLower(s), k.lower)
}

// containsFoldASCII looks for an ASCII kw in s, folding ASCII case only.
// done is false when it gave up, having compared about budget bytes.
//
// Candidates are the places where kw[j] appears in either case: any j
// will do, and the index of kw's rarest byte makes the fewest candidates.
// strings.IndexByte finds each fast. A candidate at p starts a match at
// p-j.
func containsFoldASCII(s, kw string, j, budget int) (found, done bool) {
	n := len(kw)
	lo := kw[j]
	up := lo
	if 'a' <= lo && lo <= 'z' {
		up -= 'a' - 'A'
	}
	// nextL and nextU are the next candidates of each case not yet tried.
	nextL, nextU := -1, -1
	for at := j; at+n-j <= len(s); {
		if nextL < at {
			if k := strings.IndexByte(s[at:], lo); k >= 0 {
				nextL = at + k
			} else {
				nextL = len(s)
			}
		}
		if nextU < at {
			if k := strings.IndexByte(s[at:], up); k >= 0 {
				nextU = at + k
			} else {
				nextU = len(s)
			}
		}
		p := min(nextL, nextU)
		i := p - j
		if i+n > len(s) {
			break
		}
		m := foldPrefixASCII(s[i:i+n], kw)
		if m == n {
			return true, true
		}
		if budget -= 1 + m; budget < 0 {
			return false, false
		}
		at = p + 1
	}
	return false, true
}

// letterRank orders the lower-case letters from most to least frequent in
// English text.
const letterRank = "etaoinshrdlcumwfgypbvkjxqz"

// rarestByte is the index of the byte of kw (ASCII, lower case) least
// likely in text: a letter by letterRank, a space the likeliest, any other
// byte (digits, punctuation) rarer than every letter.
func rarestByte(kw string) int {
	best, bestRank := 0, -2
	for i := 0; i < len(kw); i++ {
		rank := len(letterRank)
		switch c := kw[i]; {
		case c == ' ':
			rank = -1
		case 'a' <= c && c <= 'z':
			rank = strings.IndexByte(letterRank, c)
		}
		if rank > bestRank {
			best, bestRank = i, rank
		}
	}
	return best
}

// foldPrefixASCII is how many bytes of s, lower-cased (ASCII only), match
// kw before the first that does not (s is at least as long as kw).
func foldPrefixASCII(s, kw string) int {
	for j := 0; j < len(kw); j++ {
		c := s[j]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != kw[j] {
			return j
		}
	}
	return len(kw)
}

// containsFoldUnicode is keyword.in for any s and kw: at each character
// of s it lower-cases as many characters as kw needs, as ToLower does (a
// byte that is not UTF-8 becomes U+FFFD), and compares their UTF-8 with kw.
// done is false when it gave up, having lower-cased more than budget
// characters.
func containsFoldUnicode(s, kw string, budget int) (found, done bool) {
	for i := 0; i < len(s); {
		rest, want := s[i:], kw
		for {
			if want == "" {
				return true, true
			}
			if rest == "" {
				// s ran out before kw did; a later start has less of s
				// left, so it cannot match either.
				return false, true
			}
			if budget--; budget < 0 {
				return false, false
			}
			r, w := utf8.DecodeRuneInString(rest)
			rest = rest[w:]
			var buf [utf8.UTFMax]byte
			n := utf8.EncodeRune(buf[:], unicode.ToLower(r))
			if n > len(want) || string(buf[:n]) != want[:n] {
				break
			}
			want = want[n:]
		}
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return false, true
}

func isASCII(s string) bool {
	// Eight bytes at a time (the compiler loads each group of eight as one
	// word), four words a round.
	const high = 0x8080808080808080
	i := 0
	for ; i+32 <= len(s); i += 32 {
		if (word(s[i:])|word(s[i+8:])|word(s[i+16:])|word(s[i+24:]))&high != 0 {
			return false
		}
	}
	for ; i+8 <= len(s); i += 8 {
		if word(s[i:])&high != 0 {
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

// word is the first eight bytes of s, little-endian.
func word(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// ForTargets applies t only when the relay delegates to one of targets;
// for any other target agent the prompts pass unchanged. One pipeline can
// so fan out to specialists with different scopes. Its Name is t's name,
// "@" and the targets joined with ","; in a trace Step and an *Error the
// transformer is t's name, and the targets are a field of their own.
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
