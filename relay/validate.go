package relay

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Limits bound what DecodeContext and Validate accept from outside (the CLI
// and the HTTP route). A zero field takes its default.
type Limits struct {
	MaxBytes        int // a relay context document; default 16 MiB
	MaxPrompts      int // prompts in a context; default 1000
	MaxContentBytes int // one prompt's content; default 1 MiB
	MaxDepth        int // nesting of metadata and memory values; default 16
	// MaxRenderedBytes bounds the text the prompts make once their
	// {{variables}} are expanded (Validate, AssembleChecked, the token
	// budget): a short reference repeated many times to a long value
	// must not make a huge request. Default 4 × MaxBytes, at most 16 MiB.
	MaxRenderedBytes int
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = 16 << 20
	}
	if l.MaxPrompts <= 0 {
		l.MaxPrompts = 1000
	}
	if l.MaxContentBytes <= 0 {
		l.MaxContentBytes = 1 << 20
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = 16
	}
	if l.MaxRenderedBytes <= 0 {
		l.MaxRenderedBytes = min(4*l.MaxBytes, maxRenderedDefault)
	}
	return l
}

// maxRenderedDefault caps the default of Limits.MaxRenderedBytes.
const maxRenderedDefault = 16 << 20

// hardDepth bounds metadata nesting even without Limits, so a cyclic map
// is an error rather than an endless copy.
const hardDepth = 64

// CheckPrompts checks what every relay needs of prompts: an ID and content,
// a known position, IDs used once, well-formed conditions and variable
// names, and JSON-compatible metadata (at most 64 levels deep). Errors are
// *Error of code CodeInvalidPrompt naming the place: prompts[3].position.
func CheckPrompts(prompts []Prompt) error {
	return checkPrompts(prompts, hardDepth)
}

func checkPrompts(prompts []Prompt, maxDepth int) error {
	if err := checkShape(prompts); err != nil {
		return err
	}
	for i := range prompts {
		if err := checkMetadata(&prompts[i], i, maxDepth); err != nil {
			return err
		}
	}
	return nil
}

// checkMetadata checks that p's metadata is JSON-compatible and nests at
// most maxDepth levels; i is p's index, for the error.
func checkMetadata(p *Prompt, i, maxDepth int) error {
	for k, v := range p.Metadata {
		if !valueOK(v, 1, maxDepth) {
			return checkValue(v, "prompts["+strconv.Itoa(i)+"].metadata."+k, 1, maxDepth)
		}
	}
	return nil
}

// checkShape is checkPrompts without the metadata.
func checkShape(prompts []Prompt) error {
	var first map[string]int
	if len(prompts) > 16 {
		first = make(map[string]int, len(prompts))
	}
	for i := range prompts {
		p := &prompts[i]
		if p.ID == "" {
			return errorf(CodeInvalidPrompt, promptPath(i)+".id", "required")
		}
		if first != nil {
			if j, ok := first[p.ID]; ok {
				return errorf(CodeInvalidPrompt, promptPath(i)+".id", "%q is used twice (first at prompts[%d])", p.ID, j)
			}
			first[p.ID] = i
		} else {
			for j := range i {
				if prompts[j].ID == p.ID {
					return errorf(CodeInvalidPrompt, promptPath(i)+".id", "%q is used twice (first at prompts[%d])", p.ID, j)
				}
			}
		}
		if fieldsOK(p) {
			continue
		}
		// Something is wrong: find what, and say where.
		at := promptPath(i)
		if p.Content == "" {
			return errorf(CodeInvalidPrompt, at+".content", "required")
		}
		if !p.Position.Valid() {
			return errorf(CodeInvalidPrompt, at+".position", "unknown position %q (use one of %s)", string(p.Position), positionList())
		}
		for name := range p.Variables {
			if !validName(name) {
				return errorf(CodeInvalidPrompt, at+".variables", "%q is not a variable name (a letter or _, then letters, digits, _, . or -)", name)
			}
		}
		for j, c := range p.Conditions {
			cat := at + ".conditions[" + strconv.Itoa(j) + "]"
			if c.Variable == "" {
				return errorf(CodeInvalidPrompt, cat+".variable", "required")
			}
			if !c.oneTest() {
				return errorf(CodeInvalidPrompt, cat, "set exactly one of equals, not_equals, exists")
			}
		}
	}
	return nil
}

func promptPath(i int) string { return "prompts[" + strconv.Itoa(i) + "]" }

// fieldsOK reports whether p passes checkShape's checks of a single prompt
// but the ID's: content, position, variable names and conditions. It builds
// no error and allocates nothing.
func fieldsOK(p *Prompt) bool {
	if p.Content == "" || !p.Position.Valid() {
		return false
	}
	for name := range p.Variables {
		if !validName(name) {
			return false
		}
	}
	for _, c := range p.Conditions {
		if c.Variable == "" || !c.oneTest() {
			return false
		}
	}
	return true
}

// promptOK reports whether p alone would pass CheckPrompts: an ID, fieldsOK
// and JSON-compatible metadata. It builds no error.
func promptOK(p *Prompt) bool {
	if p.ID == "" || !fieldsOK(p) {
		return false
	}
	for _, v := range p.Metadata {
		if !valueOK(v, 1, hardDepth) {
			return false
		}
	}
	return true
}

// oneTest reports whether exactly one of the condition's tests is set.
func (c *Condition) oneTest() bool {
	n := 0
	if c.Equals != nil {
		n++
	}
	if c.NotEquals != nil {
		n++
	}
	if c.Exists != nil {
		n++
	}
	return n == 1
}

func positionList() string {
	s := make([]string, len(positions))
	for i, p := range positions {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

// validName: a letter or _, then letters, digits, _, . or -.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '.' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// valueOK is checkValue without the error: fast, and allocation-free.
func valueOK(v any, depth, maxDepth int) bool {
	if depth > maxDepth {
		return false
	}
	switch x := v.(type) {
	case nil, bool, string, json.Number, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, []string, map[string]string:
		return true
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	case map[string]any:
		for _, e := range x {
			if !valueOK(e, depth+1, maxDepth) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if !valueOK(e, depth+1, maxDepth) {
				return false
			}
		}
		return true
	}
	// The rarer types: let checkValue decide.
	return checkValue(v, "", depth, maxDepth) == nil
}

// checkValue checks that v is JSON-compatible and nests at most maxDepth
// levels (a scalar at the top is depth 1).
func checkValue(v any, at string, depth, maxDepth int) error {
	if depth > maxDepth {
		return errorf(CodeTooLarge, at, "nested deeper than %d levels", maxDepth)
	}
	switch x := v.(type) {
	case nil, bool, string, json.Number, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, []string, map[string]string:
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return errorf(CodeInvalidPrompt, at, "%v is not a JSON number", x)
		}
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return errorf(CodeInvalidPrompt, at, "%v is not a JSON number", x)
		}
	case json.RawMessage:
		if !json.Valid(x) {
			return errorf(CodeInvalidPrompt, at, "not valid JSON")
		}
	case map[string]any:
		for k, e := range x {
			if err := checkValue(e, at+"."+k, depth+1, maxDepth); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if err := checkValue(e, at+"["+strconv.Itoa(i)+"]", depth+1, maxDepth); err != nil {
				return err
			}
		}
	default:
		return errorf(CodeInvalidPrompt, at, "a %T is not a JSON-compatible value", v)
	}
	return nil
}

// checkMemory checks the memory's values like metadata.
func checkMemory(m map[string]any, maxDepth int) error {
	for k, v := range m {
		if valueOK(v, 1, maxDepth) {
			continue
		}
		if err := checkValue(v, "memory."+k, 1, maxDepth); err != nil {
			if e, ok := err.(*Error); ok && e.Code == CodeInvalidPrompt {
				e.Code = CodeInvalidContext
			}
			return err
		}
	}
	return nil
}

// Validate checks rc as CheckPrompts does and against the limits (a zero
// Limits is the defaults): the number of prompts, the size of each
// content, the variable values of all prompts together (at most MaxBytes),
// the text all prompts make with their variables expanded (at most
// MaxRenderedBytes, whether or not their conditions hold), and the nesting
// of metadata and memory. Only a prompt the relay injected (see Injected)
// may carry metadata relay: true.
func (rc *Context) Validate(lim Limits) error {
	lim = lim.withDefaults()
	if len(rc.Prompts) > lim.MaxPrompts {
		return errorf(CodeTooLarge, "prompts", "%d prompts; the limit is %d", len(rc.Prompts), lim.MaxPrompts)
	}
	vars := 0
	for i := range rc.Prompts {
		p := &rc.Prompts[i]
		if n := len(p.Content); n > lim.MaxContentBytes {
			return errorf(CodeTooLarge, fmt.Sprintf("prompts[%d].content", i), "%d bytes; the limit is %d", n, lim.MaxContentBytes)
		}
		for _, v := range p.Variables {
			vars += len(v)
		}
		if vars > lim.MaxBytes {
			return errorf(CodeTooLarge, promptPath(i)+".variables", "the variable values of the prompts come to more than %d bytes", lim.MaxBytes)
		}
	}
	if err := checkPrompts(rc.Prompts, lim.MaxDepth); err != nil {
		return err
	}
	for i := range rc.Prompts {
		if p := &rc.Prompts[i]; !p.Injected() {
			if v, ok := p.Metadata["relay"].(bool); ok && v {
				return errorf(CodeInvalidPrompt, promptPath(i)+".metadata.relay", "only a prompt the relay injected may say relay: true "+
					"(position system_prefix, ID relay:<source>><target>, metadata source and target); remove it")
			}
		}
	}
	total := 0
	for i := range rc.Prompts {
		p := &rc.Prompts[i]
		if total += p.renderedSize(); total > lim.MaxRenderedBytes {
			return tooLargeRender(i, p, total, lim.MaxRenderedBytes)
		}
	}
	return checkMemory(rc.Memory, lim.MaxDepth)
}
