// Package relay hands a task from a parent agent to a sub-agent. The
// sub-agent gets the delegation context (who asked, the task, the
// constraints, how much shared memory it may use) and only the prompts that
// matter for the task, and the parent's prompts never change underneath it.
//
// Relay runs the parent's prompts through a pipeline of transformers. It
// gives each transformer its own typed deep copy of the prompts (strings
// are shared, maps and slices are not; integers stay integers) and of the
// context, and records in a Trace which prompt IDs each transformer added,
// removed or changed. A transformer that fails stops the relay with an
// *Error of code RELAY_TRANSFORM_FAILED naming it; so does one that
// returns prompts without an ID or content, with an unknown position or
// with duplicate IDs.
//
// # Built-in transformers
//
//   - ContextInjector prepends a system_prefix prompt saying who delegated
//     which task under which constraints (see its documentation for the
//     exact text).
//   - ScopeNarrower keeps only the prompts in the allowed positions, not
//     excluded by ID, and mentioning one of the keywords; prompts the relay
//     injected are kept unless their position is not allowed.
//   - TokenBudget drops the lowest-priority prompts until the rest fit a
//     token budget.
//   - Redactor replaces secrets (API keys, AWS key ids, GitHub tokens,
//     bearer tokens, PEM and PGP private keys; e-mail addresses on request;
//     and patterns of one's own) with [REDACTED:<kind>], in the prompts as
//     Assemble will render them and in the relay context: it is the one
//     transformer whose changes to the context reach the steps after it.
//   - ForTargets applies a transformer only when delegating to one of the named agents, so
//     one pipeline can fan out to specialists with different scopes.
//
// ParsePipeline reads a declarative pipeline (JSON or YAML) and compiles it
// once; the Pipeline then runs any number of relays, concurrently.
//
// # Assembly
//
// Assemble turns prompts into a chat.Request. Prompts are ordered by
// position (the order of Positions), then by priority (higher first), then
// by their order in the list (stable: equal priorities never shuffle).
// Prompts whose conditions fail are left out. Each prompt's text is its
// content followed by its examples, with {{name}} (spaces inside the braces
// allowed) replaced by the prompt's variable of that name. A name the
// prompt has no variable for is left exactly as written, so text that
// shows template syntax to a model survives. The size of the expanded text
// is known before it is built and bounded (Limits.MaxRenderedBytes):
// AssembleChecked refuses prompts past it, Assemble leaves their
// references unexpanded.
//
// The positions system_prefix through examples (system_prefix, system,
// system_suffix, context, tools, plugins, agents, constraints, examples)
// make the system prompt; user_prefix, user and user_suffix make the single
// user message. Within each, prompt texts are joined by a blank line. A
// side with no text is left out (no system prompt, or no message).
//
// # Conditions
//
// A prompt's conditions are checked against its own variables and must all
// hold. Each condition names a variable and exactly one test: equals (the
// variable is set to that value), not_equals (the variable is unset or set
// to another value) or exists (true: the variable is set; false: it is
// not).
package relay

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// Position is where a prompt goes in the assembled request.
type Position string

// Positions, in assembly order.
const (
	SystemPrefix Position = "system_prefix"
	System       Position = "system"
	SystemSuffix Position = "system_suffix"
	ContextPos   Position = "context"
	Tools        Position = "tools"
	Plugins      Position = "plugins"
	Agents       Position = "agents"
	Constraints  Position = "constraints"
	Examples     Position = "examples"
	UserPrefix   Position = "user_prefix"
	User         Position = "user"
	UserSuffix   Position = "user_suffix"
)

// DefaultPosition is the position of a prompt that names none.
const DefaultPosition = ContextPos

var positions = []Position{SystemPrefix, System, SystemSuffix, ContextPos, Tools, Plugins, Agents,
	Constraints, Examples, UserPrefix, User, UserSuffix}

// Positions lists every position in assembly order.
func Positions() []Position { return slices.Clone(positions) }

// index is the position's place in assembly order, or -1 when unknown. The
// empty position is DefaultPosition.
func (p Position) index() int {
	if p == "" {
		p = DefaultPosition
	}
	for i, q := range positions {
		if p == q {
			return i
		}
	}
	return -1
}

// Valid reports whether p is a known position (or empty, DefaultPosition).
func (p Position) Valid() bool {
	switch p {
	case "", SystemPrefix, System, SystemSuffix, ContextPos, Tools, Plugins, Agents,
		Constraints, Examples, UserPrefix, User, UserSuffix:
		return true
	}
	return false
}

// userSide reports whether p goes into the user message.
func (p Position) userSide() bool { return p.index() >= UserPrefix.index() }

// Prompt is one prompt of a parent agent.
type Prompt struct {
	ID          string            `json:"id"`
	Name        string            `json:"name,omitempty"`
	Description string            `json:"description,omitempty"`
	Position    Position          `json:"position,omitempty"`
	Content     string            `json:"content"`
	Variables   map[string]string `json:"variables,omitempty"`
	Conditions  []Condition       `json:"conditions,omitempty"`
	Examples    []Example         `json:"examples,omitempty"`
	// Priority orders prompts within a position: higher comes earlier.
	Priority int `json:"priority,omitempty"`
	// Metadata holds JSON-compatible values: nil, bool, string, numbers
	// (Go integer and float types, json.Number), []any and map[string]any.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Condition is one test on a prompt's variables; exactly one of Equals,
// NotEquals and Exists is set.
type Condition struct {
	Variable  string  `json:"variable"`
	Equals    *string `json:"equals,omitempty"`
	NotEquals *string `json:"not_equals,omitempty"`
	Exists    *bool   `json:"exists,omitempty"`
}

// Example is an input and the output expected for it.
type Example struct {
	Input  string `json:"input"`
	Output string `json:"output"`
}

// Injected reports whether the relay injected p: it is what a
// ContextInjector writes, a system_prefix prompt whose metadata has relay:
// true, a source and a target, and whose ID is "relay:<source>><target>",
// maybe followed by "#<n>" (n ≥ 2). Metadata relay: true alone is not
// enough: DecodeContext and Validate refuse it on any other prompt, and
// the scope narrower and the token budget treat such a prompt like any
// other.
func (p *Prompt) Injected() bool {
	if p.Position != SystemPrefix || !strings.HasPrefix(p.ID, "relay:") {
		return false
	}
	if v, ok := p.Metadata["relay"].(bool); !ok || !v {
		return false
	}
	src, ok1 := p.Metadata["source"].(string)
	dst, ok2 := p.Metadata["target"].(string)
	if !ok1 || !ok2 {
		return false
	}
	rest, ok := strings.CutPrefix(p.ID[len("relay:"):], src+">"+dst)
	if !ok {
		return false
	}
	if rest == "" {
		return true
	}
	n, ok := strings.CutPrefix(rest, "#")
	if !ok || n == "" || n[0] == '0' || len(n) > 9 {
		return false
	}
	for i := 0; i < len(n); i++ {
		if n[i] < '0' || n[i] > '9' {
			return false
		}
	}
	return n != "1"
}

// Context is one delegation: who hands which task to whom, the parent's
// prompts, the shared memory the sub-agent may use and the constraints it
// works under.
type Context struct {
	SourceAgent string         `json:"source_agent"`
	TargetAgent string         `json:"target_agent"`
	Task        string         `json:"task"`
	Prompts     []Prompt       `json:"prompts"`
	Memory      map[string]any `json:"memory,omitempty"`
	Constraints []string       `json:"constraints,omitempty"`
}

// Transformer is one step of a relay. Transform gets its own copy of the
// prompts and of the context, and may change them freely; it returns the
// prompts for the next step. The context a transformer gets has no Prompts:
// the prompts it works on are its argument.
type Transformer interface {
	Name() string
	Transform(ctx context.Context, rc *Context, prompts []Prompt) ([]Prompt, error)
}

// Trace says what each transformer of a relay did.
type Trace struct {
	Steps []Step `json:"steps"`
}

// Step is what one transformer did, by prompt ID.
type Step struct {
	Transformer string `json:"transformer"`
	// Targets are the target agents the transformer applies to, when it
	// runs under ForTargets (its Name then has them after an "@").
	Targets []string `json:"targets,omitempty"`
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
	Changed []string `json:"changed"`
	// Notes are what the transformer reported with Note (what a token
	// budget dropped and why, for example).
	Notes []string `json:"notes,omitempty"`
}

type noteKey struct{}

type notes struct {
	mu   sync.Mutex
	list []string
}

// Note records a line in the trace step of the transformer running with
// ctx. Outside a relay it does nothing.
func Note(ctx context.Context, format string, args ...any) {
	n, ok := ctx.Value(noteKey{}).(*notes)
	if !ok {
		return
	}
	n.mu.Lock()
	n.list = append(n.list, fmt.Sprintf(format, args...))
	n.mu.Unlock()
}

// copier deep-copies prompts and contexts; tests swap in a JSON round trip
// to compare.
type copier struct {
	prompts func([]Prompt) []Prompt
	context func(*Context) *Context
}

var typedCopy = copier{prompts: ClonePrompts, context: cloneStepContext}

// Relay runs rc's prompts through the transformers in order and returns the
// prompts the last one returned, with a trace of every step. rc and its
// prompts are never changed. With no transformers the result is a copy of
// the prompts.
//
// Errors are *Error: CodeInvalidPrompt when rc's prompts are not valid (see
// CheckPrompts), CodeTransformFailed naming the transformer when one fails
// (a nil transformer, or one that panics, included) or returns invalid
// prompts, and CodeCancelled when ctx ends (wrapping ctx's error, so
// errors.Is(err, context.Canceled) holds). A step's context is a copy of
// rc's, and after a Redactor a copy of the redacted one (see Redactor).
func Relay(ctx context.Context, rc *Context, transformers ...Transformer) ([]Prompt, *Trace, error) {
	return relay(ctx, rc, typedCopy, transformers)
}

func relay(ctx context.Context, rc *Context, cp copier, transformers []Transformer) ([]Prompt, *Trace, error) {
	if rc == nil {
		return nil, nil, &Error{Code: CodeInvalidContext, Msg: "no relay context"}
	}
	if err := CheckPrompts(rc.Prompts); err != nil {
		return nil, nil, err
	}
	if err := checkMemory(rc.Memory, hardDepth); err != nil {
		return nil, nil, err
	}
	if len(transformers) == 0 {
		out := cp.prompts(rc.Prompts)
		if out == nil {
			out = []Prompt{}
		}
		return out, &Trace{Steps: []Step{}}, nil
	}
	// cur is what the last step returned: at first the originals, which
	// are only read. Each transformer gets a deep copy of cur, its own, to
	// change freely; cur stays as it was, to compare the step's result
	// with. The result of a step is the relay's alone (nothing else holds
	// the copy it came from), so it becomes the next cur without another
	// copy, and the result of the last step is the relay's result. Each
	// transformer so costs one copy of the prompts and one of the context,
	// and the relay makes no other copy.
	cur := rc.Prompts
	// base is the context each step gets a copy of: rc, until a redactor
	// runs (see Redactor), and its redacted copy from then on.
	base := rc
	trace := &Trace{Steps: make([]Step, 0, len(transformers))}
	for i, t := range transformers {
		if err := ctx.Err(); err != nil {
			return nil, trace, &Error{Code: CodeCancelled, Step: i, Msg: "the relay was stopped before this step: " + err.Error(), Err: err}
		}
		n := &notes{}
		name, targets, out, err := transform(context.WithValue(ctx, noteKey{}, n), t, cp.context(base), cp.prompts(cur))
		var step Step
		if err == nil {
			step, err = review(cur, out, keepsPrompts(t))
		}
		if err != nil {
			code := CodeTransformFailed
			if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
				code = CodeCancelled
			}
			return nil, trace, &Error{Code: code, Transformer: name, Targets: targets, Step: i, Msg: err.Error(), Err: err}
		}
		if r := redactorFor(t, base.TargetAgent); r != nil {
			var found map[string]int
			base, found = r.redactContext(base)
			if len(found) > 0 {
				n.list = append(n.list, "redacted in the relay context "+countList(found))
			}
		}
		step.Transformer = name
		step.Targets = targets
		step.Notes = n.list
		trace.Steps = append(trace.Steps, step)
		cur = out
	}
	if cur == nil {
		cur = []Prompt{}
	}
	return cur, trace, nil
}

// transform runs one transformer and says who it is: its name and, under
// ForTargets, the targets. A nil transformer is an error, and a panic
// (in Name too) is an error, not a crash.
func transform(ctx context.Context, t Transformer, rc *Context, prompts []Prompt) (name string, targets []string, out []Prompt, err error) {
	defer func() {
		if r := recover(); r != nil {
			if name == "" {
				name = fmt.Sprintf("%T", t)
			}
			out, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	applies := true
	for {
		f, ok := t.(*forTargets)
		if !ok || f == nil {
			break
		}
		targets = append(targets, f.targets...)
		applies = applies && slices.Contains(f.targets, rc.TargetAgent)
		t = f.t
	}
	if t == nil {
		return "<nil>", targets, nil, errors.New("no transformer (nil)")
	}
	name = t.Name()
	if !applies {
		return name, targets, prompts, nil
	}
	out, err = t.Transform(ctx, rc, prompts)
	return name, targets, out, err
}

// cloneStepContext is the copy of rc one transformer gets: no prompts (they
// are the transformer's argument), its own memory and constraints.
func cloneStepContext(rc *Context) *Context {
	return &Context{
		SourceAgent: rc.SourceAgent,
		TargetAgent: rc.TargetAgent,
		Task:        rc.Task,
		Memory:      cloneMap(rc.Memory),
		Constraints: slices.Clone(rc.Constraints),
	}
}

// review checks the prompts a step returned (after) against those it was
// given a copy of (before, which are valid) and says what the step added,
// removed and changed. The errors are checkShape's and checkMetadata's.
// keeps says the step is one of keepsPrompts's: a prompt of after with the
// ID of one of before is that prompt, unchanged.
//
// Most steps keep the order of the prompts and add a few, drop some or
// change some; review then walks both lists once. A prompt equal to the one
// of its ID before is valid as that one is, so only the added and changed
// prompts are checked, and the walk itself proves the IDs unique. Anything
// else (a prompt moved back, many added, any fault) takes the full path:
// every prompt checked and compared, in order, so the error names the
// first fault.
func review(before, after []Prompt, keeps bool) (Step, error) {
	if s, ok := diffInOrder(before, after, true, keeps); ok {
		return s, nil
	}
	if err := checkShape(after); err != nil {
		return Step{}, err
	}
	s := diff(before, after)
	return s, checkChanged(after, s)
}

// checkChanged checks the metadata of the prompts a step added or changed.
func checkChanged(out []Prompt, s Step) error {
	if len(s.Added) == 0 && len(s.Changed) == 0 {
		return nil
	}
	touched := make(map[string]bool, len(s.Added)+len(s.Changed))
	for _, id := range s.Added {
		touched[id] = true
	}
	for _, id := range s.Changed {
		touched[id] = true
	}
	for i := range out {
		if touched[out[i].ID] {
			if err := checkMetadata(&out[i], i, hardDepth); err != nil {
				return err
			}
		}
	}
	return nil
}

// diff compares the prompts before and after a step by ID. IDs are unique
// in both.
func diff(before, after []Prompt) Step {
	if s, ok := diffInOrder(before, after, false, false); ok {
		return s
	}
	return diffByID(before, after)
}

// maxAddedInOrder bounds the prompts diffInOrder takes as added (each costs
// a scan of before) before it gives up for diffByID.
const maxAddedInOrder = 8

// diffInOrder is diff when after keeps the order of before: each prompt of
// after is either one of before further on than the last one matched, or
// not in before at all (added). ok is false when that does not hold or
// more than maxAddedInOrder prompts were added.
//
// before's IDs are unique. With check set, after's need not be, nor be
// valid: ok is then also false when an added or changed prompt fails
// promptOK or two added prompts have the same ID. When ok, after's IDs are
// unique: the matched ones are distinct prompts of before, and the added
// ones are in neither before nor, twice, among the added.
//
// With keeps set, a prompt of after matched to one of before is taken to be
// unchanged without comparing them (see keepsPrompts).
func diffInOrder(before, after []Prompt, check, keeps bool) (s Step, ok bool) {
	s = Step{Added: []string{}, Removed: []string{}, Changed: []string{}}
	if n := len(before) - len(after); n > 0 {
		s.Removed = make([]string, 0, n) // at least that many
	}
	j := 0
	for i := range after {
		p := &after[i]
		k := j
		for k < len(before) && before[k].ID != p.ID {
			k++
		}
		if k == len(before) {
			// Not ahead: new, unless it moved back.
			if len(s.Added) == maxAddedInOrder || slices.ContainsFunc(before[:j], func(q Prompt) bool { return q.ID == p.ID }) {
				return Step{}, false
			}
			if check && (!promptOK(p) || slices.Contains(s.Added, p.ID)) {
				return Step{}, false
			}
			s.Added = append(s.Added, p.ID)
			continue
		}
		for ; j < k; j++ {
			s.Removed = append(s.Removed, before[j].ID)
		}
		if !keeps && !EqualPrompts(&before[k], p) {
			if check && !promptOK(p) {
				return Step{}, false
			}
			s.Changed = append(s.Changed, p.ID)
		}
		j = k + 1
	}
	for ; j < len(before); j++ {
		s.Removed = append(s.Removed, before[j].ID)
	}
	return s, true
}

// diffByID is diff for any order.
func diffByID(before, after []Prompt) Step {
	s := Step{Added: []string{}, Removed: []string{}, Changed: []string{}}
	old := make(map[string]*Prompt, len(before))
	for i := range before {
		old[before[i].ID] = &before[i]
	}
	seen := make(map[string]bool, len(after))
	for i := range after {
		p := &after[i]
		seen[p.ID] = true
		q, ok := old[p.ID]
		switch {
		case !ok:
			s.Added = append(s.Added, p.ID)
		case !EqualPrompts(q, p):
			s.Changed = append(s.Changed, p.ID)
		}
	}
	for i := range before {
		if !seen[before[i].ID] {
			s.Removed = append(s.Removed, before[i].ID)
		}
	}
	return s
}

// keepsPrompts reports whether t is a built-in transformer that returns
// some of the prompts it gets, in their order and untouched, and prompts of
// its own: ContextInjector (prepends one), ScopeNarrower and TokenBudget
// (drop some), alone or under ForTargets. The relay then knows which of
// its prompts are unchanged without comparing them field by field.
// TestKeepsPrompts holds the built-ins to this. The types must match
// exactly: a type that embeds one of them has a Transform of its own.
func keepsPrompts(t Transformer) bool {
	switch x := t.(type) {
	case *ContextInjector, *ScopeNarrower, *TokenBudget:
		return true
	case *forTargets:
		return keepsPrompts(x.t)
	}
	return false
}

// Result is the outcome of one delegation of RelayAll.
type Result struct {
	Prompts []Prompt
	Trace   *Trace
	Err     error
}

// RelayAll relays each context through the same transformers concurrently
// (at most GOMAXPROCS at a time) and returns the results in the order of
// contexts: the parallel delegation pattern. The transformers must be safe
// for concurrent use, as the built-in ones are.
func RelayAll(ctx context.Context, contexts []*Context, transformers ...Transformer) []Result {
	out := make([]Result, len(contexts))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, rc := range contexts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			p, t, err := Relay(ctx, rc, transformers...)
			out[i] = Result{Prompts: p, Trace: t, Err: err}
		}()
	}
	wg.Wait()
	return out
}
