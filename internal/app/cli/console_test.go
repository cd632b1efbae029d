package cli_test

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/cli"
)

func TestTokenConsoleLink(t *testing.T) {
	data := t.TempDir()
	s := startServe(t, data)
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := cli.Main(context.Background(), append([]string{"token", "--data", data}, args...), nil, &out, &errOut)
		return code, out.String(), errOut.String()
	}
	code, out, _ := run("--console", "--server", s.url+"/", "--owner", "acme", "--agent", "alice", "--roles", "subscriber")
	m := regexp.MustCompile(`^` + regexp.QuoteMeta(s.url) + `/ui/#login=(lc1\.[A-Za-z0-9_.-]+)\n$`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("token --console: exit %d, printed %q", code, out)
	}
	st, body := call(t, "POST", s.url+"/console/login", "", `{"code":"`+m[1]+`"}`)
	if st != 200 || !strings.Contains(body, `"agent_id":"alice"`) || !strings.Contains(body, `"roles":["subscriber"]`) {
		t.Fatalf("exchanging the code: %d %s", st, body)
	}
	if st, _ := call(t, "POST", s.url+"/console/login", "", `{"code":"`+m[1]+`"}`); st != 401 {
		t.Fatalf("the code worked twice: %d", st)
	}
	if code, out, _ := run("--console", "--admin", "--server", s.url); code != 0 || !strings.Contains(out, "/ui/#login=lc1.") {
		t.Fatalf("token --console --admin: exit %d %q", code, out)
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--console", "--admin", "--ttl", "1h"}, "--ttl does not apply"},
		{[]string{"--console", "--admin", "--server", "ftp://x"}, "--server"},
		{[]string{"--console", "--owner", "acme", "--agent", "a", "--roles", "root"}, "unknown role"},
		{[]string{"--console", "--admin", "--key", filepath.Join(t.TempDir(), "none")}, "no signing key"},
	} {
		code, _, errOut := run(c.args...)
		if code == 0 || !strings.Contains(errOut, c.msg) {
			t.Errorf("token %v: exit %d, %q; want a failure naming %s", c.args, code, errOut, c.msg)
		}
	}
}
