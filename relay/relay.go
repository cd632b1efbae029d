// Package relay hands a task from a parent agent to a sub-agent. The
// sub-agent gets the delegation context (who asked, the task, the
// constraints, how much shared memory it may use) and only the prompts that
// matter for the task, and the parent's prompts never change underneath it.
//
// Relay runs the parent's prompts through a pipeline of transformers. It
// first makes a typed deep copy of the prompts (strings are shared, maps and
// slices are not; integers stay integers), gives each transformer its own
// copy of the prompts and of the context, and records in a Trace which
// prompt IDs each transformer added, removed or changed. A transformer that
// fails stops the relay with an *Error of code RELAY_TRANSFORM_FAILED naming
// it; so does one that returns prompts without an ID or content, with an
// unknown position or with duplicate IDs.
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
//     bearer tokens, PEM private keys; e-mail addresses on request; and
//     patterns of one's own) with [REDACTED:<kind>].
//   - ForTarget applies a transformer only when delegating to one agent, so
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
// shows template syntax to a model survives.
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
	"fmt"
	"runtime"
	"slices"
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
func (p Position) Valid() bool { return p.index() >= 0 }

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

// Injected reports whether the relay injected p (its metadata has relay: true).
func (p *Prompt) Injected() bool {
	v, ok := p.Metadata["relay"].(bool)
	return ok && v
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
	Transformer string   `json:"transformer"`
	Added       []string `json:"added"`
	Removed     []string `json:"removed"`
	Changed     []string `json:"changed"`
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
// or returns invalid prompts, and the context's error when ctx ends.
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
	cur := cp.prompts(rc.Prompts)
	trace := &Trace{Steps: make([]Step, 0, len(transformers))}
	for i, t := range transformers {
		if err := ctx.Err(); err != nil {
			return nil, trace, err
		}
		name := t.Name()
		n := &notes{}
		out, err := transform(context.WithValue(ctx, noteKey{}, n), t, cp.context(rc), cp.prompts(cur))
		if err == nil {
			err = checkShape(out)
		}
		var step Step
		if err == nil {
			// Only new and changed prompts can hold metadata that was not
			// checked before: an unchanged prompt equals a checked one.
			step = diff(cur, out)
			err = checkChanged(out, step)
		}
		if err != nil {
			return nil, trace, &Error{Code: CodeTransformFailed, Transformer: name, Step: i, Msg: err.Error(), Err: err}
		}
		step.Transformer = name
		step.Notes = n.list
		trace.Steps = append(trace.Steps, step)
		cur = out
	}
	if cur == nil {
		cur = []Prompt{}
	}
	return cur, trace, nil
}

// transform runs one transformer; a panic is an error, not a crash.
func transform(ctx context.Context, t Transformer, rc *Context, prompts []Prompt) (out []Prompt, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return t.Transform(ctx, rc, prompts)
}

// cloneStepContext is the copy of rc one transformer gets: no prompts (they
// are the transformer's argument), its own memory and constraints.
func cloneStepContext(rc *Context) *Context {
	return &Context{
		SourceAgent: rc.SourceAgent,
		TargetAgent: rc.TargetAgent,
		Task:        rc.Task,
		Memory:      CloneMap(rc.Memory),
		Constraints: slices.Clone(rc.Constraints),
	}
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
	// Most steps keep the order and add a few prompts, drop some or change
	// some: walk both lists together while that holds, and fall back to
	// maps otherwise.
	s := Step{Added: []string{}, Removed: []string{}, Changed: []string{}}
	j := 0
	for i := range after {
		id := after[i].ID
		k := j
		for k < len(before) && before[k].ID != id {
			k++
		}
		if k == len(before) {
			// Not ahead: new, unless it moved back.
			if len(s.Added) == 8 || slices.ContainsFunc(before[:j], func(p Prompt) bool { return p.ID == id }) {
				return diffByID(before, after)
			}
			s.Added = append(s.Added, id)
			continue
		}
		for ; j < k; j++ {
			s.Removed = append(s.Removed, before[j].ID)
		}
		if !EqualPrompts(&before[k], &after[i]) {
			s.Changed = append(s.Changed, id)
		}
		j = k + 1
	}
	for ; j < len(before); j++ {
		s.Removed = append(s.Removed, before[j].ID)
	}
	return s
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
