package layers

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/ctxkit/ctxkit/"

type layer int

const (
	leaf layer = iota
	library
	testkit
	app
	command
)

var layerNames = [...]string{"leaf", "library", "test kit", "application", "command"}

// layerOf places a package (its path inside the module) in its layer; ok is
// false for a package the table does not know.
func layerOf(p string) (layer, bool) {
	under := func(prefix string) bool { return p == prefix || strings.HasPrefix(p, prefix+"/") }
	switch {
	case under("cmd"):
		return command, true
	case under("internal/app"):
		return app, true
	case under("internal/testkit"):
		return testkit, true
	case under("internal"):
		return leaf, true
	}
	for _, lib := range []string{"chat", "wire", "view", "relay", "envelope", "workspace", "patch", "plan", "store"} {
		if under(lib) {
			return library, true
		}
	}
	return 0, false
}

// may says which layers a layer may import.
var may = map[layer][]layer{
	leaf:    {leaf},
	library: {leaf, library},
	testkit: {leaf, library, testkit},
	app:     {leaf, library, app},
	command: {leaf, library, app},
}

// seams are stricter promises: packages (a path, or a prefix ending in /)
// that must not depend on the banned paths, directly or through anything
// they import.
var seams = []struct {
	pkgs   []string
	reason string
	banned []string
}{
	{
		pkgs:   []string{"view", "chat", "envelope", "relay"},
		reason: "pure libraries: no storage, network, HTTP or processes",
		banned: []string{module + "store/...", "database/sql/...", "net", "net/http/...", "os/exec", "modernc.org/sqlite/...", "github.com/jackc/pgx/..."},
	},
	{
		pkgs:   []string{"wire/"},
		reason: "a wire package never reaches around the canonical model into the store",
		banned: []string{module + "store/...", "database/sql/...", "modernc.org/sqlite/...", "github.com/jackc/pgx/..."},
	},
}

// builtOn names, for the libraries that promise to stand alone, the only
// other libraries they may depend on, directly or not (leaves are always
// allowed): a view user, for one, gets no chat or store with it.
var builtOn = map[string][]string{
	"view":     {},
	"chat":     {},
	"envelope": {},
	"patch":    {},
	"relay":    {"chat"},
	"plan":     {"patch"},
}

type pkg struct {
	path    string   // inside the module
	imports []string // direct imports, non-test files
	deps    []string // everything it depends on, non-test files
}

func list(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "|")
		if len(f) != 3 {
			t.Fatalf("go list line %q", sc.Text())
		}
		pkgs = append(pkgs, pkg{strings.TrimPrefix(f[0], module), strings.Fields(f[1]), strings.Fields(f[2])})
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

// banned reports whether dep is one of the banned paths; a path ending in
// /... bans the tree below it too ("net" alone leaves net/url allowed).
func banned(dep string, bans []string) bool {
	for _, b := range bans {
		if tree, ok := strings.CutSuffix(b, "/..."); ok && (dep == tree || strings.HasPrefix(dep, tree+"/")) {
			return true
		}
		if dep == b {
			return true
		}
	}
	return false
}

func matches(p string, pkgs []string) bool {
	for _, s := range pkgs {
		if p == s || (strings.HasSuffix(s, "/") && strings.HasPrefix(p, s)) {
			return true
		}
	}
	return false
}

// violations lists every broken rule among pkgs.
func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		from, ok := layerOf(p.path)
		if !ok {
			out = append(out, p.path+": not in the layer table of internal/layers; give it a layer")
			continue
		}
		for _, imp := range p.imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			to, ok := layerOf(strings.TrimPrefix(imp, module))
			if ok && !slices.Contains(may[from], to) {
				out = append(out, p.path+" ("+layerNames[from]+") imports "+strings.TrimPrefix(imp, module)+" ("+layerNames[to]+")")
			}
		}
		if allowed, ok := builtOn[p.path]; ok {
			for _, dep := range p.deps {
				d, ours := strings.CutPrefix(dep, module)
				if l, _ := layerOf(d); ours && l == library && !slices.Contains(allowed, d) {
					out = append(out, p.path+" depends on "+d+" (it stands on "+strings.Join(append([]string{"leaves"}, allowed...), ", ")+" alone)")
				}
			}
		}
		for _, s := range seams {
			if !matches(p.path, s.pkgs) {
				continue
			}
			for _, dep := range p.deps {
				if banned(dep, s.banned) {
					out = append(out, p.path+" depends on "+dep+" ("+s.reason+")")
				}
			}
		}
	}
	return out
}

func TestLayers(t *testing.T) {
	for _, v := range violations(list(t)) {
		t.Error(v)
	}
}

// TestRulesCatch holds the checker to the rules: each case breaks one.
func TestRulesCatch(t *testing.T) {
	bad := []pkg{
		{path: "internal/jsonscan", imports: []string{module + "chat"}},
		{path: "store", imports: []string{module + "internal/app/server"}},
		{path: "plan", imports: []string{module + "internal/testkit/pgtest"}},
		{path: "internal/testkit/pgtest", imports: []string{module + "internal/app/cli"}},
		{path: "internal/app/cli", imports: []string{module + "cmd/ctxkit"}},
		{path: "view", deps: []string{"net/http"}},
		{path: "view", deps: []string{"net/http/httptrace"}},
		{path: "chat", deps: []string{"net"}},
		{path: "wire/openai", deps: []string{module + "store/sqlite"}},
		{path: "envelope", deps: []string{"database/sql"}},
		{path: "relay", deps: []string{"os/exec"}},
		{path: "wire/gemini", deps: []string{module + "store"}},
		{path: "newpkg"},
		{path: "view", deps: []string{module + "chat"}},
		{path: "relay", deps: []string{module + "chat", module + "envelope"}},
	}
	for _, p := range bad {
		if v := violations([]pkg{p}); len(v) != 1 {
			t.Errorf("%+v: %d violations %q, want 1", p, len(v), v)
		}
	}
	good := []pkg{
		{path: "internal/strictjson", imports: []string{module + "internal/jsonscan"}},
		{path: "store", imports: []string{module + "view", module + "internal/secret"}, deps: []string{"net/http"}},
		{path: "internal/testkit/pgtest", imports: []string{module + "store"}},
		{path: "internal/app/server", imports: []string{module + "store", module + "internal/app/gateway"}},
		{path: "cmd/ctxkit", imports: []string{module + "internal/app/cli"}},
		{path: "view", deps: []string{module + "internal/tokencount", "net/netip", "net/url"}},
		{path: "wire/openai", deps: []string{"net/http"}},
		{path: "relay", deps: []string{module + "chat", module + "internal/jsonscan"}},
	}
	for _, p := range good {
		if v := violations([]pkg{p}); len(v) != 0 {
			t.Errorf("%+v: %q, want none", p, v)
		}
	}
}
