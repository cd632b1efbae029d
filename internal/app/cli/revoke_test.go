package cli_test

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/cli"
)

// mintWithID mints a token with 'ctxkit token' and returns it with the id
// the command printed on standard error.
func mintWithID(t *testing.T, args ...string) (string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := cli.Main(context.Background(), append([]string{"token"}, args...), nil, &out, &errOut); code != 0 {
		t.Fatalf("token %v: exit %d: %s", args, code, errOut.String())
	}
	m := regexp.MustCompile(`^token id (\S+) \(revoke it with: ctxkit token revoke --id (\S+)\)\n$`).FindStringSubmatch(errOut.String())
	if m == nil || m[1] != m[2] {
		t.Fatalf("token's id on stderr: %q", errOut.String())
	}
	tok := strings.TrimSpace(out.String())
	if strings.Count(tok, ".") != 2 || strings.Contains(tok, "\n") {
		t.Fatalf("token printed more than a token: %q", out.String())
	}
	return tok, m[1]
}

func revokeCLI(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := cli.Main(context.Background(), append([]string{"token", "revoke"}, args...), nil, &out, &errOut); code != 0 {
		t.Fatalf("token revoke %v: exit %d: %s", args, code, errOut.String())
	}
	return out.String()
}

// TestTokenRevokeWhileServing: tokens revoked with 'ctxkit token revoke'
// on the data directory of a running server are refused by it within a
// second; the agent's other tokens, and tokens issued later, still work.
func TestTokenRevokeWhileServing(t *testing.T) {
	data := t.TempDir()
	s := startServe(t, data)
	one, oneID := mintWithID(t, "--data", data, "--owner", "acme", "--agent", "bot", "--roles", "emitter")
	two, _ := mintWithID(t, "--data", data, "--owner", "acme", "--agent", "bot", "--roles", "emitter")
	for _, tok := range []string{one, two} {
		if code, body := call(t, "GET", s.url+"/breadcrumbs", tok, ""); code != 200 {
			t.Fatalf("before: %d %s", code, body)
		}
	}
	if out := revokeCLI(t, "--data", data, "--id", oneID); !strings.Contains(out, `"id":"`+oneID+`"`) {
		t.Fatalf("revoke printed %q", out)
	}
	waitRefused(t, s.url, one, time.Now())
	if code, body := call(t, "GET", s.url+"/breadcrumbs", two, ""); code != 200 {
		t.Fatalf("the agent's other token: %d %s", code, body)
	}

	// Every token of the agent issued before now; a later one works.
	revokeCLI(t, "--data", data, "--owner", "acme", "--agent", "bot")
	waitRefused(t, s.url, two, time.Now())
	time.Sleep(1100 * time.Millisecond) // into the next second: issue times are whole seconds
	three := mint(t, "--data", data, "--owner", "acme", "--agent", "bot", "--roles", "emitter")
	if code, body := call(t, "GET", s.url+"/breadcrumbs", three, ""); code != 200 {
		t.Fatalf("a token issued after the revocation: %d %s", code, body)
	}

	// Without --owner: the agent's tokens in every owner, and no other agent's.
	ci1 := mint(t, "--data", data, "--owner", "acme", "--agent", "ci", "--roles", "emitter")
	ci2 := mint(t, "--data", data, "--owner", "globex", "--agent", "ci", "--roles", "emitter")
	revokeCLI(t, "--data", data, "--agent", "ci")
	waitRefused(t, s.url, ci1, time.Now())
	waitRefused(t, s.url, ci2, time.Now())
	if code, body := call(t, "GET", s.url+"/breadcrumbs", three, ""); code != 200 {
		t.Fatalf("another agent after a revocation in every owner: %d %s", code, body)
	}
	var out bytes.Buffer
	if code := cli.Main(context.Background(), []string{"token", "revocations", "--data", data}, nil, &out, &bytes.Buffer{}); code != 0 || strings.Count(out.String(), "\n") != 3 {
		t.Fatalf("revocations: %d %q", code, out.String())
	}
}

func waitRefused(t *testing.T, url, tok string, since time.Time) {
	t.Helper()
	for {
		code, body := call(t, "GET", url+"/breadcrumbs", tok, "")
		if code == 401 && strings.Contains(body, "token_revoked") {
			return
		}
		if code != 200 {
			t.Fatalf("%d %s", code, body)
		}
		if time.Since(since) > time.Second {
			t.Fatalf("still accepted %v after the revocation", time.Since(since))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
