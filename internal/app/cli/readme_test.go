package cli_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/cli"
)

// TestReadmeTour runs every "$ go run ./cmd/ctxkit …" line in the README's
// console blocks from the repository root and compares what it prints
// (stdout, then stderr) with the lines the README shows after it.
func TestReadmeTour(t *testing.T) {
	t.Chdir("../../..")
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	type example struct {
		cmd  string
		want []string
	}
	var (
		examples []example
		inBlock  bool
	)
	for _, line := range strings.Split(string(readme), "\n") {
		switch {
		case strings.HasPrefix(line, "```console"):
			inBlock = true
		case strings.HasPrefix(line, "```"):
			inBlock = false
		case inBlock && strings.HasPrefix(line, "$ "):
			examples = append(examples, example{cmd: strings.TrimPrefix(line, "$ ")})
		case inBlock && len(examples) > 0:
			examples[len(examples)-1].want = append(examples[len(examples)-1].want, line)
		}
	}
	if len(examples) < 3 {
		t.Fatalf("found %d README examples; the tour has at least 3", len(examples))
	}
	for _, ex := range examples {
		t.Run(ex.cmd, func(t *testing.T) {
			fields := strings.Fields(ex.cmd)
			const prefix = "go run ./cmd/ctxkit"
			if !strings.HasPrefix(ex.cmd, prefix) {
				t.Fatalf("README example does not start with %q", prefix)
			}
			args := fields[3:]
			var stdin []byte
			for i, f := range args {
				if f == "<" && i+1 < len(args) {
					if stdin, err = os.ReadFile(args[i+1]); err != nil {
						t.Fatal(err)
					}
					args = args[:i]
					break
				}
			}
			var stdout, stderr bytes.Buffer
			code := cli.Main(context.Background(), args, bytes.NewReader(stdin), &stdout, &stderr)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			got := strings.TrimRight(stdout.String()+stderr.String(), "\n")
			want := strings.Join(ex.want, "\n")
			if got != want {
				t.Fatalf("README shows\n%s\nctxkit prints\n%s", want, got)
			}
		})
	}
}
