package cli_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/cli"
	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
	"github.com/rogpeppe/go-internal/testscript"
)

// stopAfter stops the throwaway PostgreSQL server, if a test started one,
// once the tests have run.
type stopAfter struct{ m *testing.M }

func (s stopAfter) Run() int {
	defer pgtest.Stop()
	return s.m.Run()
}

func TestMain(m *testing.M) {
	testscript.Main(stopAfter{m}, map[string]func(){
		"ctxkit": func() { os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
		// ctxkit-status runs ctxkit, then prints its exit status on stderr
		// and exits 0, so scripts can assert the exact status.
		"ctxkit-status": func() {
			code := cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
			fmt.Fprintf(os.Stderr, "[exit %d]\n", code)
			os.Exit(0)
		},
	})
}

// TestScripts runs the CLI scripts in testdata/script: each is a txtar file
// of commands, inputs and expected outputs.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "../../../testdata/script",
		RequireExplicitExec: true,
		Setup: func(e *testscript.Env) error {
			// Under -race every process otherwise sleeps a second at exit.
			if os.Getenv("GORACE") == "" {
				e.Setenv("GORACE", "atexit_sleep_ms=0")
			}
			return nil
		},
	})
}
