package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/view"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/providers"
)

// formats is every --to format: the rows of the provider table.
func formats() []string {
	var out []string
	for _, p := range providers.All() {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

// encode runs row's encoder, with its failures said in the flags' terms:
// bad --options are a usage error, a bad --cache-state file the input's.
func encode(row wire.Provider, req chat.Request, options json.RawMessage, state []byte) (any, []byte, []chat.Warning, error) {
	out, newState, warns, err := row.Encode(req, options, state)
	var we *wire.Error
	if errors.As(err, &we) {
		switch we.Code {
		case wire.CodeOptions:
			return nil, nil, nil, usagef("--options: %s", we.Error())
		case wire.CodeState:
			return nil, nil, nil, fmt.Errorf("--cache-state: %w", we)
		}
	}
	return out, newState, warns, err
}

func init() {
	register(&command{
		name:    "convert",
		summary: "convert a canonical chat request to a provider's wire format",
		usage: `Usage: ctxkit convert --to FORMAT [--cache STRATEGY] [--cache-every N] [--model ID]
                      [--cache-state FILE] [--no-vision] [--dedup-images] [--options JSON]
                      [--strict | --lenient] [-c|--compact] [INPUT]

Reads a canonical request (the Anthropic Messages shape: system, messages,
tools, tool_choice, max_tokens, ...) from INPUT, or standard input when
INPUT is absent or -, and prints the request body for FORMAT. What the
format cannot carry is converted by a documented fallback and reported as a
warning on standard error ("warning: messages[2].content[1]: ..."); nothing
is dropped silently. A message the format cannot carry at all, or a request
that names no model (in the request or with --model), is an error unless
--lenient.

Flags:
  --to FORMAT         openai, deepseek, mistral, gemini, bedrock, anthropic,
                      vscodelm or simple (env CTXKIT_TO)
  --cache STRATEGY    prompt caching marks: anthropic (with --to anthropic),
                      openrouter or gemini-every-n (with --to openai), bedrock
                      (with --to bedrock) (env CTXKIT_CACHE)
  --cache-every N     gemini-every-n: mark every Nth user message (default 10)
                      (env CTXKIT_CACHE_EVERY)
  --model ID          the model when the request names none, and for limits
                      that depend on it (bedrock caching) (env CTXKIT_MODEL)
  --cache-state FILE  bedrock: cache points of the previous turn, read if the
                      file exists and written back, so points stay stable
                      (env CTXKIT_CACHE_STATE)
  --no-vision         the model has no vision: every image becomes a text stub
                      (env CTXKIT_NO_VISION)
  --dedup-images      an image that repeats an earlier one becomes a reference
                      (env CTXKIT_DEDUP_IMAGES)
  --options JSON      the format's own options as a JSON object (see its package
                      documentation), e.g. '{"schema":"openapi"}' for gemini
                      (env CTXKIT_OPTIONS)
  --strict            every warning is an error: nothing is printed on stdout
                      (env CTXKIT_STRICT)
  --lenient           a dropped message or a missing model is a warning
                      (env CTXKIT_LENIENT)
  -c, --compact       print the request on one line instead of indented
                      (env CTXKIT_COMPACT)

Exit status: 0 on success (warnings or not); 1 when the input is not a valid
request (the message names the line and column, or the message and block
at fault), when a message was dropped or the model is missing (without
--lenient), or on any warning with --strict; 2 on a usage error.
`,
		run: runConvert,
	})
}

func runConvert(ctx context.Context, e *env, args []string) error {
	fs := newFlags("convert")
	to := fs.String("to", "", "")
	cache := fs.String("cache", "", "")
	every := fs.Int("cache-every", 0, "")
	model := fs.String("model", "", "")
	stateFile := fs.String("cache-state", "", "")
	noVision := fs.Bool("no-vision", false, "")
	dedup := fs.Bool("dedup-images", false, "")
	optionsJSON := fs.String("options", "", "")
	compact := fs.Bool("compact", false, "")
	fs.BoolVar(compact, "c", false, "")
	strict := fs.Bool("strict", false, "")
	lenient := fs.Bool("lenient", false, "")
	file, err := parseFlagsInput(fs, args)
	if err != nil {
		return err
	}
	if *strict && *lenient {
		return usagef("--strict and --lenient do not go together")
	}
	conv, ok := providers.Lookup(*to)
	if !ok {
		if *to == "" {
			return usagef("--to is required: one of %s", strings.Join(formats(), ", "))
		}
		return usagef("unknown --to %q: use one of %s", *to, strings.Join(formats(), ", "))
	}
	options := map[string]any{}
	if *optionsJSON != "" {
		dec := json.NewDecoder(strings.NewReader(*optionsJSON))
		dec.UseNumber()
		if err := dec.Decode(&options); err != nil {
			return usagef("--options: not a JSON object: %v", err)
		}
	}
	if *cache != "" {
		if !slices.Contains(conv.Caches, *cache) {
			if len(conv.Caches) == 0 {
				return usagef("--cache: --to %s has no caching strategy", *to)
			}
			return usagef("--cache %q does not go with --to %s: use %s", *cache, *to, strings.Join(conv.Caches, " or "))
		}
		options["cache"] = *cache
	}
	if *every != 0 {
		if *cache != "gemini-every-n" {
			return usagef("--cache-every goes with --cache gemini-every-n")
		}
		if *every < 0 {
			return usagef("--cache-every must be positive")
		}
		options["cache_every"] = *every
	}
	if *model != "" {
		options["model"] = *model
	}
	if *stateFile != "" && !conv.Stateful {
		var stateful []string
		for _, p := range providers.All() {
			if p.Stateful {
				stateful = append(stateful, p.Name)
			}
		}
		return usagef("--cache-state goes with --to %s", strings.Join(stateful, " or "))
	}

	input, err := readInputFile(e, file)
	if err != nil {
		return err
	}
	req, err := decodeRequest(input)
	if err != nil {
		return fmt.Errorf("request: %w", err)
	}
	if req.Model == "" {
		// --model names the model of a request that names none; only a
		// request with its own model passes --model to the format's
		// options (bedrock's caching limits).
		req.Model = *model
		delete(options, "model")
	}
	var optRaw json.RawMessage
	if len(options) > 0 {
		optRaw, _ = json.Marshal(options)
	}
	var warns []chat.Warning
	if *dedup {
		var w []chat.Warning
		req, w = chat.DedupImages(req)
		warns = append(warns, w...)
	}
	if *noVision {
		var w []chat.Warning
		req, w = chat.StripImages(req)
		warns = append(warns, w...)
	}
	var state []byte
	if *stateFile != "" {
		state, err = os.ReadFile(*stateFile)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("--cache-state: %w", err)
		}
	}
	out, newState, w, err := encode(conv, req, optRaw, state)
	if err != nil {
		return err
	}
	warns = append(warns, w...)
	body, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("encoding the %s request: %w", *to, err)
	}
	if !*compact {
		var b bytes.Buffer
		if err := json.Indent(&b, body, "", "  "); err != nil {
			return err
		}
		body = b.Bytes()
	}
	if req.Model == "" {
		warns = append(warns, chat.Warnf("model", "the request names no model: give it in the request or with --model"))
	}
	var faults []chat.Warning
	for _, w := range warns {
		if *strict || !*lenient && fatalWarning(w) {
			faults = append(faults, w)
			continue
		}
		fmt.Fprintf(e.stderr, "warning: %s\n", w)
	}
	switch {
	case len(faults) == 1:
		return errors.New(faults[0].String())
	case len(faults) > 1:
		for _, w := range faults[:len(faults)-1] {
			fmt.Fprintf(e.stderr, "error: %s\n", w)
		}
		return fmt.Errorf("%s (and %d more errors above)", faults[len(faults)-1], len(faults)-1)
	}
	if *stateFile != "" && newState != nil {
		if err := writeFileAtomic(*stateFile, newState); err != nil {
			return fmt.Errorf("--cache-state: %w", err)
		}
	}
	_, err = e.stdout.Write(append(body, '\n'))
	return err
}

// decodeRequest decodes a canonical request. JSON that does not parse is
// reported as view reports its input, with the line and column at fault.
func decodeRequest(input []byte) (chat.Request, error) {
	req, err := chat.DecodeRequest(input)
	if err != nil && !json.Valid(input) {
		if _, jerr := view.DecodeJSON(input); jerr != nil {
			return req, jerr
		}
	}
	return req, err
}

// fatalWarning reports whether w is one that fails a conversion unless
// --lenient: the request names no model, or a whole message was left out
// (the converters say "messages[i]: ... message omitted", "... the message
// is omitted" or "... message dropped").
func fatalWarning(w chat.Warning) bool {
	if w.Path == "model" {
		return true
	}
	if !isMessagePath(w.Path) {
		return false
	}
	for _, end := range []string{"message omitted", "message is omitted", "message dropped"} {
		if strings.HasSuffix(w.Message, end) {
			return true
		}
	}
	return false
}

// isMessagePath reports whether p is "messages[i]": a whole message, not a
// block or field of one.
func isMessagePath(p string) bool {
	n, ok := strings.CutPrefix(p, "messages[")
	if !ok {
		return false
	}
	n, ok = strings.CutSuffix(n, "]")
	if !ok || n == "" {
		return false
	}
	for _, r := range n {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// writeFileAtomic replaces path with data: written whole to a temporary
// file beside it, then renamed over it.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
