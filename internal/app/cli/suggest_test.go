package cli

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
	"time"
)

func TestSuggest(t *testing.T) {
	names := []string{"apply", "convert", "index", "max-bytes", "relay", "serve", "view", "version"}
	for _, c := range []struct{ typed, want string }{
		{"serv", "serve"},      // one deletion, and a prefix
		{"sreve", "serve"},     // a swap
		{"vew", "view"},        // one deletion
		{"covnert", "convert"}, // a swap in a long name
		{"conveet", "convert"}, // a replacement
		{"cnvrt", ""},          // two edits in five letters: too far
		{"max", "max-bytes"},   // unique prefix
		{"ver", "version"},     // begins only version
		{"v", ""},              // one letter is a prefix of three names
		{"frobnicate", ""},     // nothing near
		{"", ""},               // nothing typed
		{strings.Repeat("a", 1000), ""},
	} {
		got := suggest(c.typed, names)
		if got != c.want {
			t.Errorf("suggest(%q) = %q, want %q", c.typed, got, c.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "abc", 0}, {"abc", "acb", 1}, {"abc", "", 3},
		{"kitten", "sitting", 3}, {"hint", "hints", 1}, {"ca", "abc", 3},
	} {
		if got := editDistance(c.a, c.b); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// FuzzSuggest: any typed word gives a known name or nothing, in bounded
// time.
func FuzzSuggest(f *testing.F) {
	for _, s := range []string{"serv", "covnert", "", "x", "max-", "\xff\xfe", strings.Repeat("ab", 100)} {
		f.Add(s)
	}
	names := commandNames()
	f.Fuzz(func(t *testing.T, typed string) {
		got := suggest(typed, names)
		if got == "" {
			return
		}
		if _, ok := commands[got]; !ok {
			t.Fatalf("suggest(%q) = %q, not a command", typed, got)
		}
		if d := editDistance(typed, got); d > 2 && !strings.HasPrefix(got, typed) {
			t.Fatalf("suggest(%q) = %q at distance %d", typed, got, d)
		}
	})
}

func TestParseFlagsInput(t *testing.T) {
	for _, c := range []struct {
		args    []string
		file    string
		compact bool
		err     string
	}{
		{args: nil},
		{args: []string{"-"}},
		{args: []string{"in.json"}, file: "in.json"},
		{args: []string{"in.json", "-c"}, file: "in.json", compact: true},
		{args: []string{"--compact", "in.json"}, file: "in.json", compact: true},
		{args: []string{"--", "-c"}, file: "-c"},
		{args: []string{"a", "b"}, err: `one input file at most, not 2: unexpected argument "b"`},
		{args: []string{"a", "--", "b"}, err: `one input file at most, not 2`},
		{args: []string{"--compat"}, err: "unknown flag --compat; did you mean --compact?"},
		{args: []string{"-x"}, err: "unknown flag -x"},
	} {
		fs := newFlags("t")
		compact := fs.Bool("compact", false, "")
		fs.BoolVar(compact, "c", false, "")
		file, err := parseFlagsInput(fs, c.args)
		if c.err != "" {
			if _, ok := err.(*usageError); !ok || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want a usage error with %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || file != c.file || *compact != c.compact {
			t.Errorf("%q: file %q compact %v err %v, want %q %v", c.args, file, *compact, err, c.file, c.compact)
		}
	}
}

// FuzzParseFlagsInput: any argument list gives at most one file or a
// usage error, never a panic.
func FuzzParseFlagsInput(f *testing.F) {
	f.Add("in.json\x00-c")
	f.Add("--\x00-\x00x")
	f.Add("--hints=x\x00--compact=false\x00a")
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		if len(args) > 64 {
			args = args[:64]
		}
		fs := newFlags("t")
		fs.String("hints", "", "")
		fs.Bool("compact", false, "")
		file, err := parseFlagsInput(fs, args)
		if err != nil {
			if _, ok := err.(*usageError); !ok && err != flag.ErrHelp {
				t.Fatalf("%q: %T %v, want a usage error", args, err, err)
			}
			return
		}
		if file == "-" {
			t.Fatalf("%q: file %q: - means standard input", args, file)
		}
	})
}

func TestCommandFlagSets(t *testing.T) {
	// Every command's flags come from its flag set; these are in the
	// usage texts too.
	for name, want := range map[string][]string{
		"view":    {"hints", "c", "compact"},
		"convert": {"to", "strict", "lenient", "c"},
		"index":   {"repo", "state", "json"},
		"apply":   {"dry-run"},
	} {
		fs := commands[name].flagSet()
		if fs == nil {
			t.Fatalf("%s: no flag set", name)
		}
		for _, f := range want {
			if fs.Lookup(f) == nil {
				t.Errorf("%s: no flag %s", name, f)
			}
			if !strings.Contains(commands[name].usage, dashes(f)) {
				t.Errorf("%s: usage does not mention %s", name, dashes(f))
			}
		}
	}
}

func TestIndexProgress(t *testing.T) {
	var b bytes.Buffer
	p := &progress{w: &b, started: time.Now().Add(-time.Second)}
	p.update(1, 10)
	p.update(2, 10) // within progressEvery: not drawn
	p.update(10, 10)
	p.finish()
	out := b.String()
	if !strings.Contains(out, "indexing: 1/10 files") || strings.Contains(out, "2/10") || !strings.Contains(out, "indexing: 10/10 files") {
		t.Errorf("progress drew %q", out)
	}
	if !strings.HasSuffix(out, "\r\x1b[K") {
		t.Errorf("progress did not clear its line: %q", out)
	}
	var none *progress
	none.finish() // no terminal: nothing to clear

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if isTerminal(w) || isTerminal(&b) {
		t.Error("a pipe or a buffer is not a terminal")
	}
}
