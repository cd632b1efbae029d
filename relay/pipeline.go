package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/internal/tokencount"
	"go.yaml.in/yaml/v3"
)

// Bounds on a pipeline file.
const (
	MaxPipelineBytes = 1 << 20
	MaxTransformers  = 64
)

// Pipeline is a compiled list of transformers. It is safe for concurrent
// use: compile it once, run it for any number of relays.
type Pipeline struct {
	transformers []Transformer
}

// NewPipeline is a pipeline of the given transformers.
func NewPipeline(transformers ...Transformer) *Pipeline {
	return &Pipeline{transformers: slices.Clone(transformers)}
}

// Transformers are the pipeline's transformers, in order.
func (p *Pipeline) Transformers() []Transformer { return slices.Clone(p.transformers) }

// Run relays rc through the pipeline (see Relay).
func (p *Pipeline) Run(ctx context.Context, rc *Context) ([]Prompt, *Trace, error) {
	return Relay(ctx, rc, p.transformers...)
}

// RunAll relays each context through the pipeline concurrently (see RelayAll).
func (p *Pipeline) RunAll(ctx context.Context, contexts []*Context) []Result {
	return RelayAll(ctx, contexts, p.transformers...)
}

// settings are the keys each transformer type takes besides "type" and
// "targets".
var settings = map[string][]string{
	TypeContextInjector: {"template", "include_constraints", "include_memory", "include_memory_values"},
	TypeScopeNarrower:   {"allowed_positions", "exclude_ids", "keywords"},
	TypeTokenBudget:     {"max_tokens", "encoding"},
	TypeRedactor:        {"patterns", "emails", "builtins"},
}

// TransformerTypes lists the types a pipeline file may name.
func TransformerTypes() []string { return sortedKeys(settings) }

// ParsePipeline reads a pipeline file: JSON, or YAML when the first
// character that is not a space is not "{". It has one key, transformers: a
// list of objects, each with a type (context_injector, scope_narrower,
// token_budget, redactor), that type's settings, and optionally targets (the
// target agents it applies to; see ForTargets). For example
//
//	{"transformers": [
//	  {"type": "context_injector", "include_memory": true},
//	  {"type": "scope_narrower", "keywords": ["security"]},
//	  {"type": "token_budget", "max_tokens": 4000},
//	  {"type": "redactor", "emails": true, "patterns": [{"kind": "ticket", "regex": "TICKET-[0-9]+"}]}]}
//
// Settings: context_injector: template (at most MaxTemplateBytes), include_constraints (default
// true), include_memory (default true), include_memory_values; scope_narrower:
// allowed_positions, exclude_ids, keywords; token_budget: max_tokens
// (required), encoding; redactor: patterns ({kind, regex}), emails,
// builtins (default true; false needs patterns or emails). Own patterns
// are bounded in cost: see MaxRepeat, MaxPatternInsts, MaxRedactorInsts.
//
// Errors are *Error of code CodeInvalidPipeline naming the place:
// "transformers[1]: unknown setting \"keyword\" for scope_narrower ...".
func ParsePipeline(r io.Reader) (*Pipeline, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxPipelineBytes+1))
	if err != nil {
		return nil, errorf(CodeInvalidPipeline, "", "reading the pipeline: %v", err)
	}
	if len(data) > MaxPipelineBytes {
		return nil, errorf(CodeTooLarge, "", "the pipeline is over %d bytes", MaxPipelineBytes)
	}
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] != '{' {
		if data, err = yamlToJSON(data); err != nil {
			return nil, err
		}
	}
	fields, err := decodeObject(data, "", CodeInvalidPipeline)
	if err != nil {
		return nil, err
	}
	var raw []json.RawMessage
	for _, k := range sortedKeys(fields) {
		if k != "transformers" {
			return nil, errorf(CodeInvalidPipeline, "", "unknown field %q (a pipeline has transformers only)", k)
		}
		if err := decodeStrict(fields[k], k, CodeInvalidPipeline, &raw); err != nil {
			return nil, err
		}
	}
	if _, ok := fields["transformers"]; !ok {
		return nil, errorf(CodeInvalidPipeline, "transformers", "required (a list; it may be empty)")
	}
	if len(raw) > MaxTransformers {
		return nil, errorf(CodeTooLarge, "transformers", "%d transformers; the limit is %d", len(raw), MaxTransformers)
	}
	p := &Pipeline{transformers: make([]Transformer, len(raw))}
	for i, r := range raw {
		if p.transformers[i], err = parseTransformer(r, "transformers["+strconv.Itoa(i)+"]"); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func parseTransformer(data []byte, at string) (Transformer, error) {
	fields, err := decodeObject(data, at, CodeInvalidPipeline)
	if err != nil {
		return nil, err
	}
	var typ string
	if v, ok := fields["type"]; !ok {
		return nil, errorf(CodeInvalidPipeline, at+".type", "required (one of %s)", strings.Join(TransformerTypes(), ", "))
	} else if err := decodeStrict(v, at+".type", CodeInvalidPipeline, &typ); err != nil {
		return nil, err
	}
	known, ok := settings[typ]
	if !ok {
		return nil, errorf(CodeInvalidPipeline, at+".type", "unknown transformer type %q (known: %s)", typ, strings.Join(TransformerTypes(), ", "))
	}
	for _, k := range sortedKeys(fields) {
		if k != "type" && k != "targets" && !slices.Contains(known, k) {
			return nil, errorf(CodeInvalidPipeline, at, "unknown setting %q for %s (known: %s, targets)", k, typ, strings.Join(known, ", "))
		}
	}
	get := func(key string, into any) error {
		v, ok := fields[key]
		if !ok || isNull(v) {
			return nil
		}
		return decodeStrict(v, at+"."+key, CodeInvalidPipeline, into)
	}
	var t Transformer
	switch typ {
	case TypeContextInjector:
		c := NewContextInjector()
		err = firstErr(get("template", &c.Template), get("include_constraints", &c.IncludeConstraints),
			get("include_memory", &c.IncludeMemory), get("include_memory_values", &c.IncludeMemoryValues))
		if err == nil && fields["template"] != nil && strings.TrimSpace(c.Template) == "" {
			err = errorf(CodeInvalidPipeline, at+".template", "must not be empty (leave it out for the default text)")
		}
		if err == nil && len(c.Template) > MaxTemplateBytes {
			err = errorf(CodeTooLarge, at+".template", "%d bytes; the limit is %d", len(c.Template), MaxTemplateBytes)
		}
		t = c
	case TypeScopeNarrower:
		s := &ScopeNarrower{}
		err = firstErr(get("allowed_positions", &s.AllowedPositions), get("exclude_ids", &s.ExcludeIDs), get("keywords", &s.KeywordFilter))
		if err == nil {
			err = checkNarrower(s, at)
		}
		t = s
	case TypeTokenBudget:
		b := &TokenBudget{}
		var n json.Number
		if err = firstErr(get("max_tokens", &n), get("encoding", &b.Encoding)); err != nil {
			break
		}
		v, perr := strconv.ParseInt(string(n), 10, 64)
		switch {
		case n == "":
			err = errorf(CodeInvalidPipeline, at+".max_tokens", "required (a positive number of tokens)")
		case perr != nil || v <= 0 || v > math.MaxInt32:
			err = errorf(CodeInvalidPipeline, at+".max_tokens", "must be a whole number between 1 and %d, not %s", math.MaxInt32, n)
		}
		b.MaxTokens = int(v)
		if err == nil {
			if _, cerr := tokencount.Codec(b.Encoding); cerr != nil {
				err = errorf(CodeInvalidPipeline, at+".encoding", "%v", cerr)
			}
		}
		t = b
	case TypeRedactor:
		var opts RedactorOptions
		builtins := true
		if err = firstErr(get("patterns", &opts.Patterns), get("emails", &opts.Emails), get("builtins", &builtins)); err != nil {
			break
		}
		opts.NoBuiltins = !builtins
		var r *Redactor
		if r, err = NewRedactor(opts); err != nil {
			if e, ok := err.(*Error); ok {
				e.Path = join(at, e.Path)
			}
		}
		t = r
	}
	if err != nil {
		return nil, err
	}
	if v, ok := fields["targets"]; ok {
		var targets []string
		if err := decodeStrict(v, at+".targets", CodeInvalidPipeline, &targets); err != nil {
			return nil, err
		}
		if len(targets) == 0 {
			return nil, errorf(CodeInvalidPipeline, at+".targets", "name at least one target agent (leave it out to apply to every target)")
		}
		for i, s := range targets {
			if s == "" {
				return nil, errorf(CodeInvalidPipeline, fmt.Sprintf("%s.targets[%d]", at, i), "empty target agent")
			}
		}
		t = ForTargets(t, targets...)
	}
	return t, nil
}

func checkNarrower(s *ScopeNarrower, at string) error {
	for i, p := range s.AllowedPositions {
		if p == "" || !p.Valid() {
			return errorf(CodeInvalidPipeline, fmt.Sprintf("%s.allowed_positions[%d]", at, i), "unknown position %q (use one of %s)", string(p), positionList())
		}
	}
	for i, k := range s.KeywordFilter {
		if strings.TrimSpace(k) == "" {
			return errorf(CodeInvalidPipeline, fmt.Sprintf("%s.keywords[%d]", at, i), "empty keyword")
		}
	}
	for i, id := range s.ExcludeIDs {
		if id == "" {
			return errorf(CodeInvalidPipeline, fmt.Sprintf("%s.exclude_ids[%d]", at, i), "empty ID")
		}
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// yamlToJSON turns a YAML pipeline into JSON, so both go through the same
// strict decoding.
func yamlToJSON(data []byte) ([]byte, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, errorf(CodeInvalidPipeline, "", "%s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	v, err := jsonable(v, "", 0)
	if err != nil {
		return nil, err
	}
	out, merr := json.Marshal(v)
	if merr != nil {
		return nil, errorf(CodeInvalidPipeline, "", "%v", merr)
	}
	return out, nil
}

func jsonable(v any, at string, depth int) (any, error) {
	if depth > hardDepth {
		return nil, errorf(CodeInvalidPipeline, at, "nested deeper than %d levels", hardDepth)
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			y, err := jsonable(e, join(at, k), depth+1)
			if err != nil {
				return nil, err
			}
			x[k] = y
		}
		return x, nil
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			ks, ok := k.(string)
			if !ok {
				return nil, errorf(CodeInvalidPipeline, at, "key %v is not a string", k)
			}
			y, err := jsonable(e, join(at, ks), depth+1)
			if err != nil {
				return nil, err
			}
			out[ks] = y
		}
		return out, nil
	case []any:
		for i, e := range x {
			y, err := jsonable(e, fmt.Sprintf("%s[%d]", at, i), depth+1)
			if err != nil {
				return nil, err
			}
			x[i] = y
		}
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, errorf(CodeInvalidPipeline, at, "%v is not a JSON number", x)
		}
	}
	return v, nil
}
