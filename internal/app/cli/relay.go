package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ctxkit/ctxkit/internal/canonjson"
	"github.com/ctxkit/ctxkit/relay"
)

func init() {
	register(&command{
		name:    "relay",
		summary: "pass a parent agent's prompts through a relay pipeline for a sub-agent",
		usage: `Usage: ctxkit relay --pipeline FILE [--assemble] [-c|--compact] [INPUT]

Reads a relay context (source_agent, target_agent, task, prompts, memory,
constraints) from INPUT, or standard input when INPUT is absent or -,
runs its prompts through the transformers the pipeline file names, and
prints the relayed prompts as a JSON array. What each transformer added,
removed or changed is printed on standard error, one line per step ("trace: scope_narrower: removed style, perf").

The pipeline file is JSON or YAML:
  {"transformers": [
    {"type": "context_injector", "include_memory": true},
    {"type": "scope_narrower", "keywords": ["security"]},
    {"type": "token_budget", "max_tokens": 4000},
    {"type": "redactor", "emails": true}]}
Transformer types: ` + strings.Join(relay.TransformerTypes(), ", ") + `.

Flags:
  --pipeline FILE  the pipeline file (JSON, or YAML) (env CTXKIT_PIPELINE)
  --assemble       print the canonical chat request the prompts make (the input
                   of 'ctxkit convert') instead of the prompts (env CTXKIT_ASSEMBLE)
  -c, --compact    print on one line instead of indented (env CTXKIT_COMPACT)

Exit status: 0 on success; 1 when the pipeline, the relay context or a
transformer failed (the message names the field, prompt or transformer at
fault); 2 on a usage error.
`,
		run: runRelay,
	})
}

func runRelay(ctx context.Context, e *env, args []string) error {
	fs := newFlags("relay")
	pipelineFile := fs.String("pipeline", "", "")
	assemble := fs.Bool("assemble", false, "")
	compact := fs.Bool("compact", false, "")
	fs.BoolVar(compact, "c", false, "")
	file, err := parseFlagsInput(fs, args)
	if err != nil {
		return err
	}
	if *pipelineFile == "" {
		return usagef("--pipeline FILE is required")
	}
	f, err := os.Open(*pipelineFile)
	if err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	p, err := relay.ParsePipeline(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	input, err := readInputFile(e, file)
	if err != nil {
		return err
	}
	rc, err := relay.DecodeContext(input, relay.Limits{})
	if err != nil {
		return fmt.Errorf("input: %w", err)
	}
	prompts, trace, err := p.Run(ctx, rc)
	if trace != nil {
		printTrace(e.stderr, trace)
	}
	if err != nil {
		return err
	}
	var out []byte
	if *assemble {
		req, aerr := relay.AssembleChecked(prompts, relay.Limits{})
		if aerr != nil {
			return fmt.Errorf("assembling: %w", aerr)
		}
		out, err = json.Marshal(req)
	} else {
		out, err = canonjson.Marshal(prompts)
	}
	if err != nil {
		return fmt.Errorf("encoding the output: %w", err)
	}
	if !*compact {
		var b bytes.Buffer
		if err := json.Indent(&b, out, "", "  "); err != nil {
			return fmt.Errorf("encoding the output: %w", err)
		}
		out = b.Bytes()
	}
	_, err = e.stdout.Write(append(out, '\n'))
	return err
}

// printTrace writes one line per step and one per note.
func printTrace(w io.Writer, t *relay.Trace) {
	for _, s := range t.Steps {
		var parts []string
		for _, c := range []struct {
			what string
			ids  []string
		}{{"added", s.Added}, {"removed", s.Removed}, {"changed", s.Changed}} {
			if len(c.ids) > 0 {
				parts = append(parts, c.what+" "+strings.Join(c.ids, ", "))
			}
		}
		if len(parts) == 0 {
			parts = []string{"no change"}
		}
		name := s.Transformer
		if len(s.Targets) > 0 {
			name += "@" + strings.Join(s.Targets, ",")
		}
		fmt.Fprintf(w, "trace: %s: %s\n", name, strings.Join(parts, "; "))
		for _, n := range s.Notes {
			fmt.Fprintf(w, "trace: %s: note: %s\n", name, oneLine(n))
		}
	}
}
