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
	"github.com/ctxkit/ctxkit/wire/anthropic"
	"github.com/ctxkit/ctxkit/wire/bedrock"
	"github.com/ctxkit/ctxkit/wire/deepseek"
	"github.com/ctxkit/ctxkit/wire/gemini"
	"github.com/ctxkit/ctxkit/wire/mistral"
	"github.com/ctxkit/ctxkit/wire/openai"
	"github.com/ctxkit/ctxkit/wire/simple"
	"github.com/ctxkit/ctxkit/wire/vscodelm"
)

// converter turns a canonical request into one wire format. options is
// the package's Options as JSON; state is the cache state file's content
// (nil when none) and the returned state is written back to it.
type converter struct {
	encode func(req chat.Request, options json.RawMessage, state []byte) (out any, newState []byte, warns []chat.Warning, err error)
	// caches are the --cache strategies this format takes.
	caches []string
	// stateful formats take --cache-state.
	stateful bool
}

// converters is every --to format.
var converters = map[string]converter{
	"openai":    {encode: plain(openai.EncodeRequest), caches: []string{openai.CacheOpenRouter, openai.CacheGeminiEvery}},
	"deepseek":  {encode: plain(deepseek.EncodeRequest)},
	"mistral":   {encode: plain(mistral.EncodeRequest)},
	"gemini":    {encode: plain(gemini.EncodeRequest)},
	"anthropic": {encode: plain(anthropic.EncodeRequest), caches: []string{anthropic.CacheAnthropic}},
	"bedrock":   {encode: encodeBedrock, caches: []string{bedrock.CacheBedrock}, stateful: true},
	"vscodelm":  {encode: plain(vscodelm.EncodeRequest)},
	"simple":    {encode: plain(simple.EncodeRequest)},
}

// encodeBedrock reads the previous turn's cache points from the state file
// content and returns the new ones to write back.
func encodeBedrock(req chat.Request, options json.RawMessage, state []byte) (any, []byte, []chat.Warning, error) {
	var opts bedrock.Options
	if err := decodeOptions(options, &opts); err != nil {
		return nil, nil, nil, err
	}
	if len(bytes.TrimSpace(state)) > 0 {
		var st bedrock.CacheState
		dec := json.NewDecoder(bytes.NewReader(state))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&st); err != nil {
			return nil, nil, nil, fmt.Errorf("--cache-state: not a cache state file: %v", err)
		}
		opts.State = &st
	}
	out, warns, err := bedrock.EncodeRequest(req, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	newState, err := json.MarshalIndent(out.CacheState, "", "  ")
	if err != nil {
		return nil, nil, nil, err
	}
	return out, append(newState, '\n'), warns, nil
}

// plain adapts a package's EncodeRequest that keeps no cache state.
func plain[O any, R any](enc func(chat.Request, O) (R, []chat.Warning, error)) func(chat.Request, json.RawMessage, []byte) (any, []byte, []chat.Warning, error) {
	return func(req chat.Request, options json.RawMessage, _ []byte) (any, []byte, []chat.Warning, error) {
		var opts O
		if err := decodeOptions(options, &opts); err != nil {
			return nil, nil, nil, err
		}
		out, warns, err := enc(req, opts)
		return out, nil, warns, err
	}
}

func decodeOptions(options json.RawMessage, into any) error {
	if len(options) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(options))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return usagef("--options: %v", err)
	}
	return nil
}

func formats() []string {
	var out []string
	for k := range converters {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func init() {
	register(&command{
		name:    "convert",
		summary: "convert a canonical chat request to a provider's wire format",
		usage: `Usage: ctxkit convert --to FORMAT [--cache STRATEGY] [--cache-every N] [--model ID]
                      [--cache-state FILE] [--no-vision] [--dedup-images] [--options JSON]
                      [--compact] < request.json

Reads a canonical request (the Anthropic Messages shape: system, messages,
tools, tool_choice, max_tokens, ...) on standard input and prints the
request body for FORMAT. What the format cannot carry is converted by a
documented fallback and reported as a warning on standard error
("warning: messages[2].content[1]: ..."); nothing is dropped silently.

Flags:
  --to FORMAT         openai, deepseek, mistral, gemini, bedrock, anthropic,
                      vscodelm or simple
  --cache STRATEGY    prompt caching marks: anthropic (with --to anthropic),
                      openrouter or gemini-every-n (with --to openai), bedrock
                      (with --to bedrock)
  --cache-every N     gemini-every-n: mark every Nth user message (default 10)
  --model ID          the model, for limits that depend on it (bedrock caching)
  --cache-state FILE  bedrock: cache points of the previous turn, read if the
                      file exists and written back, so points stay stable
  --no-vision         the model has no vision: every image becomes a text stub
  --dedup-images      an image that repeats an earlier one becomes a reference
  --options JSON      the format's own options as a JSON object (see its package
                      documentation), e.g. '{"schema":"openapi"}' for gemini
  --compact           print the request on one line instead of indented

Exit status: 0 on success (warnings or not); 1 when the input is not a valid
request (the message names the message and block at fault); 2 on a usage
error.
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
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q: the request is read from standard input", fs.Arg(0))
	}
	conv, ok := converters[*to]
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
		if !slices.Contains(conv.caches, *cache) {
			if len(conv.caches) == 0 {
				return usagef("--cache: --to %s has no caching strategy", *to)
			}
			return usagef("--cache %q does not go with --to %s: use %s", *cache, *to, strings.Join(conv.caches, " or "))
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
	if *stateFile != "" && !conv.stateful {
		return usagef("--cache-state goes with --to bedrock")
	}
	var optRaw json.RawMessage
	if len(options) > 0 {
		optRaw, _ = json.Marshal(options)
	}

	input, err := readInput(e.stdin)
	if err != nil {
		return err
	}
	req, err := chat.DecodeRequest(input)
	if err != nil {
		return fmt.Errorf("request: %w", err)
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
	out, newState, w, err := conv.encode(req, optRaw, state)
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
	for _, w := range warns {
		fmt.Fprintf(e.stderr, "warning: %s\n", w)
	}
	if *stateFile != "" && newState != nil {
		if err := writeFileAtomic(*stateFile, newState); err != nil {
			return fmt.Errorf("--cache-state: %w", err)
		}
	}
	_, err = e.stdout.Write(append(body, '\n'))
	return err
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
