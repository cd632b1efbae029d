package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/cli"
	"github.com/itchyny/gojq"
)

// skipMarker precedes a README sh block the test does not run, with the
// reason: `<!-- tour:skip needs PostgreSQL -->`.
const skipMarker = "<!-- tour:skip "

// TestReadmeShellBlocks runs every sh block of the README, each in a fresh
// directory holding a copy of examples/ (so a block finds the inputs the
// README names and starts on a fresh data directory .ctxkit): `go run
// ./cmd/ctxkit serve` starts the server on a free loopback port, which
// stands for localhost:8700 (in curl URLs, and as $CTXKIT_UPSTREAM for
// scaffold), then every command runs in turn and what it prints is
// compared with the "# → " lines after it. A block the test cannot run is
// marked in the README with `<!-- tour:skip REASON -->`, and logged.
func TestReadmeShellBlocks(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := shellBlocks(string(readme))
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	run := 0
	for _, b := range blocks {
		if b.skip != "" {
			t.Logf("README.md line %d: not run: %s", b.line, b.skip)
			continue
		}
		run++
		t.Run(fmt.Sprintf("line %d", b.line), func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(filepath.Join(dir, "examples"), os.DirFS(filepath.Join(root, "examples"))); err != nil {
				t.Fatal(err)
			}
			t.Chdir(dir)
			runTour(t, root, b.body)
		})
	}
	if run < 5 {
		t.Fatalf("ran %d README sh blocks; the README has at least 5", run)
	}
}

// TestReadmeGatewayConfig: the gateway configuration the README shows is
// examples/gateway.yaml, which its tour starts the server with.
func TestReadmeGatewayConfig(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile("../../../examples/gateway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```yaml\n"+string(cfg)+"```\n") {
		t.Fatalf("README.md does not show examples/gateway.yaml as it is:\n%s", cfg)
	}
}

// shellBlock is a README sh block: where it starts, its text, and the
// reason it is not run, if it is marked so.
type shellBlock struct {
	line int
	body string
	skip string
}

// shellBlocks finds the sh blocks of text, each with the skip marker on
// the last non-blank line before it, if any.
func shellBlocks(text string) ([]shellBlock, error) {
	lines := strings.Split(text, "\n")
	var blocks []shellBlock
	prev := ""
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if line != "```sh" {
			if strings.TrimSpace(line) != "" {
				prev = line
			}
			continue
		}
		b := shellBlock{line: i + 1}
		if rest, ok := strings.CutPrefix(prev, skipMarker); ok {
			b.skip = strings.TrimSpace(strings.TrimSuffix(rest, "-->"))
			if b.skip == "" {
				return nil, fmt.Errorf("line %d: %s gives no reason", i, skipMarker)
			}
		}
		var body []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			body = append(body, lines[i])
		}
		if i == len(lines) {
			return nil, fmt.Errorf("line %d: the sh block does not end", b.line)
		}
		b.body = strings.Join(body, "\n")
		blocks = append(blocks, b)
		prev = ""
	}
	return blocks, nil
}

// tourStep is one command of a tour and the output it must print.
type tourStep struct {
	line int    // where the command starts in the block, 1-based
	cmd  string // continuation lines joined
	file string // of a heredoc: its text
	want []string
}

// parseTour splits a tour into its commands: lines ending in a
// backslash continue on the next, a quote left open continues too, a
// heredoc runs to its terminator, "# → " lines are the output of the
// command before them, other comments and blank lines are nothing.
func parseTour(t *testing.T, block string) []tourStep {
	t.Helper()
	lines := strings.Split(block, "\n")
	var steps []tourStep
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "# → "):
			if len(steps) == 0 {
				t.Fatalf("tour line %d: output before any command", i+1)
			}
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, strings.TrimPrefix(trimmed, "# → "))
			continue
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			continue
		}
		step := tourStep{line: i + 1}
		if m := regexp.MustCompile(`^cat > (\S+) <<'(\w+)'$`).FindStringSubmatch(trimmed); m != nil {
			var body []string
			for i++; i < len(lines) && lines[i] != m[2]; i++ {
				body = append(body, lines[i])
			}
			if i == len(lines) {
				t.Fatalf("tour line %d: the heredoc does not end with %s", step.line, m[2])
			}
			step.cmd, step.file = "cat > "+m[1], strings.Join(body, "\n")+"\n"
			steps = append(steps, step)
			continue
		}
		cmd := line
		for (strings.HasSuffix(cmd, "\\") || strings.Count(cmd, "'")%2 == 1) && i+1 < len(lines) {
			cmd = strings.TrimSuffix(cmd, "\\") + "\n" + lines[i+1]
			i++
		}
		step.cmd = cmd
		steps = append(steps, step)
	}
	return steps
}

// runTour runs the commands of block in the current directory, as the
// repository root's `go run ./cmd/ctxkit` would: ctxkit in process (its
// stdout and stderr in one stream, as a terminal shows them), curl as an
// HTTP client, localhost:8700 the server it started, `| jq -r QUERY` by
// gojq, `cp -r`, and `NAME=$(…)` or `export NAME=$(…)` keeping what the
// command printed on stdout.
func runTour(t *testing.T, root, block string) {
	vars := map[string]string{}
	server := ""
	for _, s := range parseTour(t, block) {
		name := fmt.Sprintf("line %d", s.line)
		var out string
		switch {
		case s.file != "":
			path := strings.TrimPrefix(s.cmd, "cat > ")
			if err := os.WriteFile(path, []byte(s.file), 0o600); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		default:
			words, err := shellWords(s.cmd, vars)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			assign, export := "", false
			if len(words) > 1 && words[0] == "export" {
				words, export = words[1:], true
			}
			if len(words) > 0 {
				if v, rest, ok := strings.Cut(words[0], "=$("); ok && strings.HasSuffix(words[len(words)-1], ")") {
					assign = v
					words[0] = rest
					words[len(words)-1] = strings.TrimSuffix(words[len(words)-1], ")")
				}
			}
			var jq []string
			if i := slices.Index(words, "|"); i >= 0 {
				words, jq = words[:i], words[i+1:]
			}
			switch {
			case len(words) >= 4 && slices.Equal(words[:4], []string{"go", "run", "./cmd/ctxkit", "serve"}):
				if server != "" {
					t.Fatalf("%s: a second server", name)
				}
				words = slices.DeleteFunc(words[4:], func(w string) bool { return w == "&" })
				server = startServe(t, ".ctxkit", words...).url
				// scaffold's default upstream is the gateway on localhost:8700.
				t.Setenv("CTXKIT_UPSTREAM", server+"/v1")
				continue
			case len(words) >= 3 && slices.Equal(words[:3], []string{"go", "run", "./cmd/ctxkit"}):
				var stdout, stderr bytes.Buffer
				errOut := &stderr
				if assign == "" {
					errOut = &stdout
				}
				if code := cli.Main(context.Background(), words[3:], strings.NewReader(""), &stdout, errOut); code != 0 {
					t.Fatalf("%s: %s: exit %d: %s%s", name, s.cmd, code, stdout.String(), stderr.String())
				}
				out = stdout.String()
			case len(words) == 4 && words[0] == "cp" && words[1] == "-r":
				if err := os.CopyFS(words[3], os.DirFS(words[2])); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			case len(words) > 0 && words[0] == "curl":
				if server == "" {
					t.Fatalf("%s: curl before the server started", name)
				}
				out = curl(t, name, server, words[1:])
			default:
				t.Fatalf("%s: the tour test cannot run %q", name, s.cmd)
			}
			if jq != nil {
				out = jqRaw(t, name, jq, out)
			}
			if assign != "" {
				vars[assign] = strings.TrimSpace(out)
				if export {
					t.Setenv(assign, vars[assign])
				}
				continue
			}
		}
		if !tourMatch(s.want, out) {
			t.Fatalf("%s: %s\nthe README shows\n%s\nit prints\n%s", name, s.cmd, strings.Join(s.want, "\n"), out)
		}
	}
}

// jqRaw runs `jq -r QUERY` (args: jq and its arguments) on the JSON in
// in, as jq prints it: strings raw, other values as JSON, one a line.
func jqRaw(t *testing.T, name string, args []string, in string) string {
	t.Helper()
	if len(args) != 3 || args[0] != "jq" || args[1] != "-r" {
		t.Fatalf("%s: the tour test pipes only to jq -r QUERY, not %q", name, args)
	}
	q, err := gojq.Parse(args[2])
	if err != nil {
		t.Fatalf("%s: jq %s: %v", name, args[2], err)
	}
	var v any
	if err := json.Unmarshal([]byte(in), &v); err != nil {
		t.Fatalf("%s: jq input: %v: %s", name, err, in)
	}
	var b strings.Builder
	iter := q.Run(v)
	for {
		r, ok := iter.Next()
		if !ok {
			break
		}
		if err, ok := r.(error); ok {
			t.Fatalf("%s: jq %s: %v", name, args[2], err)
		}
		if str, ok := r.(string); ok {
			b.WriteString(str + "\n")
			continue
		}
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b.Write(append(data, '\n'))
	}
	return b.String()
}

// tourMatch reports whether out matches want, the lines the README shows
// (joined by newlines), where "…" stands for any text (newlines too).
// Output the README does not show must be empty.
func tourMatch(want []string, out string) bool {
	out = strings.TrimSpace(out)
	if len(want) == 0 {
		return out == ""
	}
	parts := strings.Split(strings.Join(want, "\n"), "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`(?s)\A` + strings.Join(parts, ".*?") + `\z`).MatchString(out)
}

// shellWords splits cmd as sh would, for the forms a tour uses: words
// between blanks, '…' taken as it is, "…" and bare words with $NAME and
// ${NAME} replaced from vars, a backslash-newline a blank. A variable
// that is not set is an error.
func shellWords(cmd string, vars map[string]string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	expand := func(s string) (string, error) {
		var err error
		out := regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`).ReplaceAllStringFunc(s, func(m string) string {
			name := strings.Trim(m, "${}")
			v, ok := vars[name]
			if !ok {
				err = fmt.Errorf("$%s is not set", name)
			}
			return v
		})
		return out, err
	}
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case c == '\\' && i+1 < len(cmd) && cmd[i+1] == '\n':
			i++
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		case c == '#' && !inWord:
			// a comment: to the end of the line
			for i < len(cmd) && cmd[i] != '\n' {
				i++
			}
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		case c == '\'':
			end := strings.IndexByte(cmd[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("a ' is not closed")
			}
			cur.WriteString(cmd[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			end := strings.IndexByte(cmd[i+1:], '"')
			if end < 0 {
				return nil, fmt.Errorf("a \" is not closed")
			}
			s, err := expand(cmd[i+1 : i+1+end])
			if err != nil {
				return nil, err
			}
			cur.WriteString(s)
			i += end + 1
			inWord = true
		case c == '$' && i+1 < len(cmd) && cmd[i+1] == '(':
			// $( … ): kept as it is for the caller to run.
			cur.WriteString("$(")
			i++
			inWord = true
		case c == '$':
			j := i + 1
			for j < len(cmd) && (cmd[j] == '_' || cmd[j] == '{' || cmd[j] == '}' || 'A' <= cmd[j] && cmd[j] <= 'Z' || 'a' <= cmd[j] && cmd[j] <= 'z' || '0' <= cmd[j] && cmd[j] <= '9') {
				j++
			}
			s, err := expand(cmd[i:j])
			if err != nil {
				return nil, err
			}
			cur.WriteString(s)
			i = j - 1
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// curl makes the request the curl arguments args describe (-s, -S, -N,
// -i, -X, -H, -d: the options a tour uses; any other is an error) to
// server in place of localhost:8700, and returns what curl prints: the
// body, after the status line and the headers with -i. Like curl, -d
// makes a POST of type application/x-www-form-urlencoded unless a header
// says otherwise.
func curl(t *testing.T, name, server string, args []string) string {
	t.Helper()
	method, url, body, include := "", "", "", false
	header := http.Header{}
	hasBody := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-H" || a == "-d" || a == "-X":
			if i+1 == len(args) {
				t.Fatalf("%s: curl %s without its value", name, a)
			}
			v := args[i+1]
			i++
			switch a {
			case "-H":
				k, hv, ok := strings.Cut(v, ":")
				if !ok {
					t.Fatalf("%s: curl -H %q is not a header", name, v)
				}
				header.Add(strings.TrimSpace(k), strings.TrimSpace(hv))
			case "-d":
				body, hasBody = v, true
			case "-X":
				method = v
			}
		case strings.HasPrefix(a, "-") && strings.Trim(a[1:], "sSNi") == "" && len(a) > 1:
			include = include || strings.Contains(a, "i")
		case strings.HasPrefix(a, "-"):
			t.Fatalf("%s: the tour test's curl does not know %s", name, a)
		case url == "":
			url = a
		default:
			t.Fatalf("%s: curl with two URLs", name)
		}
	}
	rest, ok := strings.CutPrefix(strings.TrimPrefix(url, "http://"), "localhost:8700")
	if !ok {
		t.Fatalf("%s: curl %s is not to localhost:8700", name, url)
	}
	if method == "" {
		method = http.MethodGet
		if hasBody {
			method = http.MethodPost
		}
	}
	req, err := http.NewRequest(method, server+rest, strings.NewReader(body))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	req.Header = header
	if hasBody && header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !include {
		return string(data)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %s\n", resp.Status)
	resp.Header.Write(&b)
	b.WriteString("\n")
	b.Write(data)
	return b.String()
}

// TestServeConfigErrorNamesTheLine: `ctxkit serve --config` with a bad
// configuration exits 1 with one line naming the file, the line and
// column of the field at fault, and its path.
func TestServeConfigErrorNamesTheLine(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gateway.yaml")
	os.WriteFile(cfg, []byte("providers:\n  - name: demo\n    type: mock\n    models: [demo-model]\n    mock:\n      errors: [{status: 429, onn: 1}]\n"), 0o600)
	code, stderr := serveOnce(t, filepath.Join(dir, "data"), "--config", cfg)
	want := "--config: " + cfg + `:6:30: providers[0].mock.errors[0].onn: unknown field "onn" (known fields: status, cut, on, every, retry_after, message)`
	if code != 1 || !strings.Contains(stderr, want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Fatalf("exit %d: %s\nwant %s", code, stderr, want)
	}
}
