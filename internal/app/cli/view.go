package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/internal/canonjson"
	"github.com/ctxkit/ctxkit/internal/tokencount"
	"github.com/ctxkit/ctxkit/view"
)

// maxInput bounds what commands read from standard input.
const maxInput = 256 << 20

func init() {
	register(&command{
		name:    "view",
		summary: "print the LLM view of a JSON document through llm_hints",
		usage: `Usage: ctxkit view --hints FILE [--record] [--stats] [--encoding NAME] [-c|--compact]
                   [--timeout D] [--memory SIZE] [INPUT]

Reads a JSON context from INPUT (standard input when INPUT is absent or -),
applies the llm_hints in FILE and prints the view as JSON.

Flags:
  --hints FILE      the hints document (llm_hints JSON); with --record it may be
                    left out when the record carries its own llm_hints
                    (env CTXKIT_HINTS)
  --record          the input is a whole breadcrumb ({"title": …, "context": …,
                    "tags": […], …}); templates and format rules see its fields
                    (env CTXKIT_VIEW_RECORD: CTXKIT_RECORD is the record
                    file of apply and scaffold)
  --stats           print token counts before and after to standard error
                    (env CTXKIT_STATS)
  --encoding NAME   token encoding for --stats: ` + strings.Join(tokencount.Encodings(), ", ") + `
                    (default ` + tokencount.Default + `) (env CTXKIT_ENCODING)
  -c, --compact     print the view on one line instead of indented
                    (env CTXKIT_COMPACT)
  --timeout D       deadline for each jq and template rule (default 2s)
                    (env CTXKIT_VIEW_TIMEOUT: CTXKIT_TIMEOUT bounds a
                    whole scaffold run)
  --memory SIZE     memory the view may take beyond its input, as in 256MiB
                    (default 1GiB; at least 64MiB); a step that would need
                    more than a quarter of it (at most 64MiB), or a heap that
                    grows past it, stops the view with view_too_costly
                    (env CTXKIT_VIEW_MEMORY, as serve's --view-memory)

Exit status: 0 on success; 1 when the input, the hints or a rule failed (a
failed rule still prints the include/exclude-filtered context, never the
unfiltered one); 2 on a usage error.
`,
		run: runView,
	})
}

func runView(ctx context.Context, e *env, args []string) error {
	fs := newFlags("view")
	hintsFile := fs.String("hints", "", "")
	record := fs.Bool("record", false, "")
	stats := fs.Bool("stats", false, "")
	encoding := fs.String("encoding", tokencount.Default, "")
	compact := fs.Bool("compact", false, "")
	fs.BoolVar(compact, "c", false, "")
	timeout := fs.Duration("timeout", view.DefaultRuleTimeout, "")
	memory := byteSize(1 << 30)
	fs.Var(&memory, "memory", "")
	file, err := parseFlagsInput(fs, args)
	if err != nil {
		return err
	}
	if !slices.Contains(tokencount.Encodings(), *encoding) {
		return usagef("unknown --encoding %q: use one of %s", *encoding, strings.Join(tokencount.Encodings(), ", "))
	}
	if *timeout <= 0 {
		return usagef("--timeout must be positive, not %v", *timeout)
	}
	if memory < minViewMemory {
		return usagef("--memory %s is too small: it must be at least 64MiB", byteCount(int64(memory)))
	}
	if *hintsFile == "" && !*record {
		return usagef("--hints FILE is required")
	}

	input, err := readInputFile(e, file)
	if err != nil {
		return err
	}
	var (
		rec   view.Record
		hints []byte
	)
	if *record {
		if rec, hints, err = view.DecodeRecord(input); err != nil {
			return fmt.Errorf("input: %w", err)
		}
	} else if rec.Context, err = view.DecodeJSON(input); err != nil {
		return fmt.Errorf("input: %w", err)
	}
	if *hintsFile != "" {
		if hints, err = os.ReadFile(*hintsFile); err != nil {
			return fmt.Errorf("hints: %w", err)
		}
	} else if hints == nil {
		return usagef("the record has no llm_hints: pass --hints FILE")
	}
	// The input may be large (up to maxInput), so the heap bound counts
	// from what it already takes.
	budget := view.NewBudget(heapInUse() + int64(memory))
	v, err := view.CompileWith(hints, view.Options{RuleTimeout: *timeout, MaxMemory: min(64<<20, int64(memory)/4), Budget: budget})
	if err != nil {
		return fmt.Errorf("hints: %w", err)
	}

	res := v.Apply(ctx, rec)
	out, err := canonjson.Marshal(res.Value)
	if err != nil {
		return fmt.Errorf("encoding the view: %w", err)
	}
	printed := out
	if !*compact {
		var b bytes.Buffer
		if err := json.Indent(&b, out, "", "  "); err != nil {
			return fmt.Errorf("encoding the view: %w", err)
		}
		printed = b.Bytes()
	}
	if _, err := fmt.Fprintf(e.stdout, "%s\n", printed); err != nil {
		return err
	}
	if *stats {
		before, err := canonjson.Marshal(rec.Context)
		if err != nil {
			return err
		}
		s, err := view.Measure(*encoding, before, out)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "tokens (%s): %d before, %d after, %.1f%% saved\n", s.Encoding, s.TokensBefore, s.TokensAfter, s.SavedPercent)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(e.stderr, "warning: %s: %s\n", w.Path, w.Message)
	}
	if res.Status != view.StatusOK {
		return fmt.Errorf("%s: %w (printed the filtered context instead)", res.Status, res.Err)
	}
	return nil
}

// heapInUse is the live heap after a collection.
func heapInUse() int64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	return int64(sample[0].Value.Uint64())
}

// readInputFile reads the input file a command was given, or standard
// input when file is "", up to maxInput bytes. A file that cannot be read
// is named in the error.
func readInputFile(e *env, file string) ([]byte, error) {
	if file == "" {
		return readInput(e.stdin)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	defer f.Close()
	data, err := readInput(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return data, nil
}

// readInput reads standard input up to maxInput bytes.
func readInput(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	if len(data) > maxInput {
		return nil, fmt.Errorf("input: larger than %d MiB", maxInput>>20)
	}
	return data, nil
}
