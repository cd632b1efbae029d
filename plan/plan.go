// Package plan reads the plans a model writes (single-file unified diffs
// with preimage checksums, and commands that verify the result), checks
// them, applies them atomically through an os.Root, runs their commands
// with real timeouts and records what happened.
package plan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/strictjson"
	"github.com/ctxkit/ctxkit/patch"
)

// Bounds on a plan.
const (
	MaxPlanBytes    = 16 << 20 // a plan document
	MaxDiffs        = 1000
	MaxDiffBytes    = 4 << 20 // one unified_diff
	MaxCommands     = 32
	MaxArgs         = 256
	MaxTimeout      = 30 * 60 * 1000 // ms
	DefaultTimeout  = 60 * 1000      // ms, for a command without timeout_ms
	maxPathBytes    = 4096
	maxArgBytes     = 64 << 10
	maxExtractTries = 64
)

// Plan is a model's proposal: diffs to apply, then commands to run.
type Plan struct {
	Diffs []Diff `json:"diffs"`
	Post  *Post  `json:"post,omitempty"`
}

// Diff is one file's change.
type Diff struct {
	// Path is the file, relative to the root, with forward slashes.
	Path string `json:"path"`
	// Checksum is the lowercase hex SHA-256 of the file before the diff
	// (of empty input for a file that does not exist yet).
	Checksum    string `json:"checksum"`
	UnifiedDiff string `json:"unified_diff"`
}

// Post is what runs after the diffs are written.
type Post struct {
	Commands []Command `json:"commands"`
}

// Command is one program run without a shell.
type Command struct {
	Program string   `json:"program"`
	Args    []string `json:"args,omitempty"`
	// TimeoutMS bounds the run; 0 means DefaultTimeout.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// Commands is the plan's post commands (none when it has no post).
func (p *Plan) Commands() []Command {
	if p.Post == nil {
		return nil
	}
	return p.Post.Commands
}

// Code is a stable, machine-readable error kind. Diff errors carry the
// code of the patch package (hunk_not_found, hunk_ambiguous, ...).
type Code string

// Error codes of this package.
const (
	CodeSyntax           Code = "plan_syntax"         // not a JSON plan
	CodeField            Code = "plan_field"          // a field is missing, unknown or of the wrong kind
	CodeTooLarge         Code = "plan_too_large"      // a bound is passed
	CodeSchema           Code = "schema"              // the plan does not satisfy the user's schema
	CodePathRejected     Code = "path_rejected"       // a path leaves the root, names .git, or disagrees with its headers
	CodeChecksumMismatch Code = "checksum_mismatch"   // the file is not the one the plan was written against
	CodeNotText          Code = "binary"              // a NUL byte or invalid UTF-8
	CodeBackupExists     Code = "backup_exists"       // a backup would overwrite a file
	CodeIO               Code = "io"                  // reading or writing a file failed
	CodeCommand          Code = "command_failed"      // a post command failed or timed out
	CodeNoPlan           Code = "no_plan_in_reply"    // Extract found no JSON object
	CodeCommandStart     Code = "command_not_started" // a post command could not start
	// CodeRollbackIncomplete: a write failed and restoring the files
	// already written failed too; Report.Unrestored names them.
	CodeRollbackIncomplete Code = "rollback_incomplete"
	// Plain patches only (they have no checksums to tell these apart):
	CodeFileMissing Code = "file_missing"      // the file a patch changes does not exist
	CodeFileExists  Code = "file_exists"       // the file a patch creates or renames onto exists
	CodeUnsupported Code = "patch_unsupported" // a copy, a symbolic link or a submodule
)

// Error is a failure the plan caused. Path names the place in the plan
// ("diffs[2].path", "" for the whole plan), File the file under the root
// when there is one.
type Error struct {
	Code Code
	Path string
	File string
	Msg  string
	Err  error
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Path != "" {
		b.WriteString(e.Path)
		if e.File != "" {
			fmt.Fprintf(&b, " (%s)", e.File)
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Err != nil {
		if e.Msg != "" {
			b.WriteString(": ")
		}
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// CodeOf is the code of the first *Error or *patch.Error in err's chain,
// "" when there is none.
func CodeOf(err error) Code {
	var pe *Error
	if errors.As(err, &pe) {
		var de *patch.Error
		if errors.As(pe.Err, &de) {
			return Code(de.Code)
		}
		return pe.Code
	}
	var de *patch.Error
	if errors.As(err, &de) {
		return Code(de.Code)
	}
	return ""
}

func fieldErr(field, format string, args ...any) *Error {
	return &Error{Code: CodeField, Path: field, Msg: fmt.Sprintf(format, args...)}
}

// Checksum is the lowercase hex SHA-256 of b: what a Diff's Checksum holds.
func Checksum(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Parse decodes a plan strictly: one JSON object, no unknown or repeated
// fields, every field of the right kind, within the bounds; then checks
// each diff's path and checksum form. The error names the field at fault.
func Parse(data []byte) (*Plan, error) {
	if len(data) > MaxPlanBytes {
		return nil, &Error{Code: CodeTooLarge, Msg: fmt.Sprintf("the plan is %d bytes, more than %d", len(data), MaxPlanBytes)}
	}
	p, ok := parseFast(data)
	if !ok {
		var err error
		if p, err = decodeStrict(data); err != nil {
			return nil, err
		}
	}
	if err := p.Check(); err != nil {
		return nil, err
	}
	return p, nil
}

// decodeStrict is Parse's decoding by JSON tokens: slower than parseFast,
// but every error it returns names the field at fault.
func decodeStrict(data []byte) (*Plan, error) {
	d := &decoder{dec: strictjson.NewDecoder(data)}
	var p Plan
	err := d.object("", map[string]func(string) error{
		"diffs": func(f string) error {
			return d.array(f, MaxDiffs, func(f string) error {
				var df Diff
				err := d.object(f, map[string]func(string) error{
					"path":         func(f string) error { return d.str(f, &df.Path, maxPathBytes) },
					"checksum":     func(f string) error { return d.str(f, &df.Checksum, 64) },
					"unified_diff": func(f string) error { return d.str(f, &df.UnifiedDiff, MaxDiffBytes) },
				}, "path", "checksum", "unified_diff")
				p.Diffs = append(p.Diffs, df)
				return err
			})
		},
		"post": func(f string) error {
			p.Post = &Post{Commands: []Command{}}
			return d.object(f, map[string]func(string) error{
				"commands": func(f string) error {
					return d.array(f, MaxCommands, func(f string) error {
						var c Command
						err := d.object(f, map[string]func(string) error{
							"program":    func(f string) error { return d.str(f, &c.Program, maxPathBytes) },
							"args":       func(f string) error { return d.strs(f, &c.Args) },
							"timeout_ms": func(f string) error { return d.int(f, &c.TimeoutMS) },
						}, "program")
						p.Post.Commands = append(p.Post.Commands, c)
						return err
					})
				},
			}, "commands")
		},
	}, "diffs")
	if err != nil {
		return nil, err
	}
	if err := d.dec.End(); err != nil {
		e := err.(*strictjson.Error)
		return nil, &Error{Code: CodeSyntax, Msg: fmt.Sprintf("text after the plan object at byte %d: a plan is one JSON object", e.Offset)}
	}
	return &p, nil
}

// Check checks what Parse checks beyond the JSON shape, for a plan built
// in code: at least one diff, each path relative, local, outside .git and
// named once, each checksum 64 lowercase hex digits, the diff text free
// of NUL bytes and valid UTF-8, each command a program with sane
// arguments and timeout.
func (p *Plan) Check() error {
	if len(p.Diffs) == 0 {
		return fieldErr("diffs", "a plan needs at least one diff")
	}
	if len(p.Diffs) > MaxDiffs {
		return &Error{Code: CodeTooLarge, Path: "diffs", Msg: fmt.Sprintf("%d diffs, more than %d", len(p.Diffs), MaxDiffs)}
	}
	seen := map[string]int{}
	for i, d := range p.Diffs {
		f := fmt.Sprintf("diffs[%d]", i)
		if err := CheckPath(d.Path); err != nil {
			err.Path = f + ".path"
			return err
		}
		key := strings.ToLower(path.Clean(d.Path))
		if j, ok := seen[key]; ok {
			return &Error{Code: CodePathRejected, Path: f + ".path", File: d.Path, Msg: fmt.Sprintf("the same file as diffs[%d]: put all of a file's hunks in one diff", j)}
		}
		seen[key] = i
		if !isChecksum(d.Checksum) {
			return fieldErr(f+".checksum", "must be the 64 lowercase hex digits of the SHA-256 of the file before the diff (of empty input for a new file)")
		}
		if len(d.UnifiedDiff) > MaxDiffBytes {
			return &Error{Code: CodeTooLarge, Path: f + ".unified_diff", Msg: fmt.Sprintf("%d bytes, more than %d", len(d.UnifiedDiff), MaxDiffBytes)}
		}
		if strings.IndexByte(d.UnifiedDiff, 0) >= 0 || !utf8.ValidString(d.UnifiedDiff) {
			return &Error{Code: CodeNotText, Path: f + ".unified_diff", Msg: "holds a NUL byte or invalid UTF-8: only text diffs can be applied"}
		}
		if strings.TrimSpace(d.UnifiedDiff) == "" {
			return fieldErr(f+".unified_diff", "is empty")
		}
	}
	cmds := p.Commands()
	if len(cmds) > MaxCommands {
		return &Error{Code: CodeTooLarge, Path: "post.commands", Msg: fmt.Sprintf("%d commands, more than %d", len(cmds), MaxCommands)}
	}
	for i, c := range cmds {
		f := fmt.Sprintf("post.commands[%d]", i)
		if strings.TrimSpace(c.Program) == "" {
			return fieldErr(f+".program", "is empty")
		}
		if strings.ContainsRune(c.Program, 0) {
			return fieldErr(f+".program", "holds a NUL byte")
		}
		if len(c.Args) > MaxArgs {
			return &Error{Code: CodeTooLarge, Path: f + ".args", Msg: fmt.Sprintf("%d arguments, more than %d", len(c.Args), MaxArgs)}
		}
		for j, a := range c.Args {
			if strings.ContainsRune(a, 0) {
				return fieldErr(fmt.Sprintf("%s.args[%d]", f, j), "holds a NUL byte")
			}
		}
		if c.TimeoutMS < 0 || c.TimeoutMS > MaxTimeout {
			return fieldErr(f+".timeout_ms", "must be between 1 and %d (0 or absent: %d)", MaxTimeout, DefaultTimeout)
		}
	}
	return nil
}

// CheckPath accepts a path that is relative, local (no "..", no volume),
// written with forward slashes in clean form, and not inside a .git
// directory. The error's Path (its place in a plan) is left for the
// caller. Apply checks the rest against the file system: the file and
// each of its directories must not be a symbolic link (a link could lead
// into .git).
func CheckPath(p string) *Error {
	bad := func(format string, args ...any) *Error {
		return &Error{Code: CodePathRejected, File: p, Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case p == "":
		return bad("is empty")
	case len(p) > maxPathBytes:
		return bad("is longer than %d bytes", maxPathBytes)
	case strings.ContainsRune(p, 0) || !utf8.ValidString(p):
		return bad("holds a NUL byte or invalid UTF-8")
	case strings.HasPrefix(p, "/") || filepath.IsAbs(p):
		return bad("must be relative to the root, not absolute")
	case strings.Contains(p, `\`):
		return bad("must use forward slashes")
	case !filepath.IsLocal(filepath.FromSlash(p)):
		return bad("must stay inside the root (no \"..\")")
	case path.Clean(p) != p:
		return bad("must be in clean form (%q)", path.Clean(p))
	}
	for _, part := range strings.Split(p, "/") {
		if strings.EqualFold(part, ".git") {
			return bad("is inside .git, which a plan may not change")
		}
	}
	return nil
}

func isChecksum(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// checkHeaders compares the names in a diff's "---"/"+++" headers with the
// diff's path: each name that is not /dev/null must be the path, with or
// without git's a/ or b/ prefix.
func checkHeaders(f *patch.File, p string) *Error {
	for _, h := range []struct{ name, prefix, which string }{{f.OldName, "a/", "---"}, {f.NewName, "b/", "+++"}} {
		if h.name == "" || h.name == patch.DevNull {
			continue
		}
		n := path.Clean(filepath.ToSlash(h.name))
		if n != p && strings.TrimPrefix(n, h.prefix) != p {
			return &Error{Code: CodePathRejected, File: p, Msg: fmt.Sprintf("the diff's %s header names %q, not the diff's path", h.which, h.name)}
		}
	}
	return nil
}

// decoder walks JSON tokens so that every error names its field.
type decoder struct{ dec *strictjson.Decoder }

// syntax is the error for err, a *strictjson.Error of the decoder at
// field, placed by byte offset as plan errors always were.
func (d *decoder) syntax(field string, err error) error {
	if e, ok := err.(*strictjson.Error); ok && e.Err != nil {
		err = e.Err
	}
	var se *json.SyntaxError
	msg := err.Error()
	if errors.As(err, &se) {
		msg = fmt.Sprintf("%v (byte %d)", se, se.Offset)
	} else if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "the JSON ends early"
	}
	e := &Error{Code: CodeSyntax, Path: field, Msg: "not valid JSON: " + msg}
	if field == "" {
		e.Msg = "the plan is not valid JSON: " + msg
	}
	return e
}

func (d *decoder) kindErr(field, want string, tok json.Token) error {
	got := "null"
	switch v := tok.(type) {
	case json.Delim:
		got = map[json.Delim]string{'{': "an object", '[': "an array"}[v]
	case string:
		got = "a string"
	case json.Number:
		got = "a number"
	case bool:
		got = "a boolean"
	}
	if field == "" {
		return &Error{Code: CodeSyntax, Msg: fmt.Sprintf("the plan must be a JSON object, not %s", got)}
	}
	return fieldErr(field, "must be %s, not %s", want, got)
}

// object reads an object whose keys are all in fields, each once, with
// every key in required present.
func (d *decoder) object(field string, fields map[string]func(string) error, required ...string) error {
	tok, err := d.dec.Token()
	if err != nil {
		return d.syntax(field, err)
	}
	if tok != json.Delim('{') {
		return d.kindErr(field, "an object", tok)
	}
	seen := map[string]bool{}
	for d.dec.More() {
		tok, err := d.dec.Token()
		if err != nil {
			return d.syntax(field, err)
		}
		key := tok.(string)
		read, ok := fields[key]
		if !ok {
			return fieldErr(strictjson.Join(field, key), "unknown field %q", key)
		}
		if seen[key] {
			return fieldErr(strictjson.Join(field, key), "repeated field %q", key)
		}
		seen[key] = true
		if err := read(strictjson.Join(field, key)); err != nil {
			return err
		}
	}
	if _, err := d.dec.Token(); err != nil {
		return d.syntax(field, err)
	}
	for _, r := range required {
		if !seen[r] {
			return fieldErr(strictjson.Join(field, r), "is required")
		}
	}
	return nil
}

func (d *decoder) array(field string, max int, elem func(string) error) error {
	tok, err := d.dec.Token()
	if err != nil {
		return d.syntax(field, err)
	}
	if tok != json.Delim('[') {
		return d.kindErr(field, "an array", tok)
	}
	for i := 0; d.dec.More(); i++ {
		if i == max {
			return &Error{Code: CodeTooLarge, Path: field, Msg: fmt.Sprintf("more than %d entries", max)}
		}
		if err := elem(strictjson.Index(field, i)); err != nil {
			return err
		}
	}
	if _, err := d.dec.Token(); err != nil {
		return d.syntax(field, err)
	}
	return nil
}

func (d *decoder) str(field string, into *string, max int) error {
	tok, err := d.dec.Token()
	if err != nil {
		return d.syntax(field, err)
	}
	s, ok := tok.(string)
	if !ok {
		return d.kindErr(field, "a string", tok)
	}
	if len(s) > max {
		return &Error{Code: CodeTooLarge, Path: field, Msg: fmt.Sprintf("%d bytes, more than %d", len(s), max)}
	}
	*into = s
	return nil
}

func (d *decoder) strs(field string, into *[]string) error {
	*into = []string{}
	return d.array(field, MaxArgs, func(f string) error {
		var s string
		if err := d.str(f, &s, maxArgBytes); err != nil {
			return err
		}
		*into = append(*into, s)
		return nil
	})
}

func (d *decoder) int(field string, into *int64) error {
	tok, err := d.dec.Token()
	if err != nil {
		return d.syntax(field, err)
	}
	n, ok := tok.(json.Number)
	if !ok {
		return d.kindErr(field, "a whole number", tok)
	}
	v, err := n.Int64()
	if err != nil {
		return fieldErr(field, "must be a whole number, not %s", n)
	}
	*into = v
	return nil
}

// Plain patches (ctxkit apply --patch).
const (
	// MaxPatchBytes bounds a plain patch.
	MaxPatchBytes = MaxPlanBytes
	// StripDetect asks ApplyPatch to tell how many leading
	// components to strip from each name.
	StripDetect = -1
	// maxStrip bounds an explicit strip count.
	maxStrip = 64
)

// NoChecksums is the note of a run of a plain patch: nothing tells which
// version of each file it was written against.
const NoChecksums = "no checksums: the patch was applied by content only"

// plainPatch is a plain multi-file unified diff, read into one diff per file.
type plainPatch struct {
	Files []fileDiff
}

// fileDiff is one file's diff of a plain patch.
type fileDiff struct {
	// Path is the file changed, created or deleted (for a rename, its
	// new path); From is a rename's old path.
	Path, From string
	// New and Delete say that the diff creates or deletes the file.
	New, Delete bool
	// OldMode and NewMode are git's modes, which are not applied (a
	// warning says so).
	OldMode, NewMode string
	// Line is the patch line where the file's section starts.
	Line int
	// file is the parsed diff, nil for a section without hunks (an
	// empty file created or deleted, a rename or a mode change only).
	file *patch.File
}

// readPatch reads a plain multi-file unified diff into one diff per file,
// its paths resolved and checked, as ApplyPatch describes.
func readPatch(root *os.Root, text []byte, strip int) (*plainPatch, error) {
	switch {
	case len(text) > MaxPatchBytes:
		return nil, &Error{Code: CodeTooLarge, Path: "patch", Msg: fmt.Sprintf("%d bytes, more than %d", len(text), MaxPatchBytes)}
	case strip < StripDetect || strip > maxStrip:
		return nil, &Error{Code: CodeField, Path: "strip", Msg: fmt.Sprintf("%d: must be between 0 and %d", strip, maxStrip)}
	}
	if i := bytes.IndexByte(text, 0); i >= 0 {
		return nil, &Error{Code: CodeNotText, Path: fmt.Sprintf("patch line %d", 1+bytes.Count(text[:i], []byte{'\n'})), Msg: "a NUL byte: only text diffs can be applied"}
	}
	if !utf8.Valid(text) {
		return nil, &Error{Code: CodeNotText, Path: "patch", Msg: "invalid UTF-8: only text diffs can be applied"}
	}
	m, err := patch.Split(string(text))
	if err != nil {
		var pe *patch.Error
		if errors.As(err, &pe) {
			return nil, &Error{Code: Code(pe.Code), Path: fmt.Sprintf("patch line %d", pe.Line), Msg: pe.Msg}
		}
		return nil, err
	}
	if len(m.Sections) > MaxDiffs {
		return nil, &Error{Code: CodeTooLarge, Path: "patch", Msg: fmt.Sprintf("%d files, more than %d", len(m.Sections), MaxDiffs)}
	}
	p := &plainPatch{Files: make([]fileDiff, len(m.Sections))}
	seen := map[string]int{}
	plain := StripDetect // the strip count found for sections not in git's format
	if strip == StripDetect {
		for _, sec := range m.Sections {
			if !sec.Git && sec.OldName != patch.DevNull && sec.NewName != patch.DevNull && sec.OldName != "" && sec.NewName != "" {
				plain = detectStrip(&sec)
				break
			}
		}
	}
	for i, sec := range m.Sections {
		n := strip
		if n == StripDetect && !sec.Git && plain != StripDetect {
			n = plain
		}
		fd, err := readSection(root, i, &sec, n)
		if err != nil {
			return nil, err
		}
		for _, name := range []string{fd.Path, fd.From} {
			if name == "" {
				continue
			}
			key := strings.ToLower(name)
			if j, ok := seen[key]; ok {
				return nil, &Error{Code: CodePathRejected, Path: fmt.Sprintf("diffs[%d]", i), File: name,
					Msg: fmt.Sprintf("patch line %d: the same file as diffs[%d]: a patch may change each file once", sec.HeaderLine, j)}
			}
			seen[key] = i
		}
		p.Files[i] = fd
	}
	return p, nil
}

// readSection reads the i-th section of a plain patch.
func readSection(root *os.Root, i int, sec *patch.Section, strip int) (fileDiff, error) {
	field := fmt.Sprintf("diffs[%d]", i)
	fd := fileDiff{Line: sec.Line, OldMode: sec.OldMode, NewMode: sec.NewMode, New: sec.NewFile, Delete: sec.Deleted}
	display := sec.NewName
	if display == "" || display == patch.DevNull {
		display = sec.OldName
	}
	bad := func(code Code, format string, args ...any) (fileDiff, error) {
		return fileDiff{}, &Error{Code: code, Path: field, File: display,
			Msg: fmt.Sprintf("patch line %d: ", sec.HeaderLine) + fmt.Sprintf(format, args...)}
	}
	n := strip
	if n == StripDetect {
		n = detectStrip(sec)
	}
	oldName, err1 := stripName(sec.OldName, n)
	newName, err2 := stripName(sec.NewName, n)
	if err1 == nil && err2 == nil {
		if newName != patch.DevNull && newName != "" {
			display = newName
		} else if oldName != "" {
			display = oldName
		}
	}
	switch {
	case sec.Binary:
		return bad(CodeNotText, "a binary diff: only text diffs can be applied")
	case sec.CopyFrom != "" || sec.CopyTo != "":
		return bad(CodeUnsupported, "a copy (copy from %s): ctxkit applies changes, new files, deletions and renames, not copies", sec.CopyFrom)
	case sec.OldMode == "120000" || sec.NewMode == "120000":
		return bad(CodeUnsupported, "a symbolic link (mode 120000): a patch changes regular files only")
	case sec.OldMode == "160000" || sec.NewMode == "160000":
		return bad(CodeUnsupported, "a submodule (mode 160000): a patch changes regular files only")
	case err1 != nil:
		return bad(CodePathRejected, "%v", err1)
	case err2 != nil:
		return bad(CodePathRejected, "%v", err2)
	case oldName == "" || newName == "":
		return bad(CodeField, "the headers do not tell the file's name")
	case oldName == patch.DevNull && newName == patch.DevNull:
		return bad(CodeField, "both names are /dev/null")
	}
	fd.New = fd.New || oldName == patch.DevNull
	fd.Delete = fd.Delete || newName == patch.DevNull
	switch {
	case sec.RenameFrom != "" || sec.RenameTo != "":
		from, err1 := stripName(sec.RenameFrom, max(n-1, 0))
		to, err2 := stripName(sec.RenameTo, max(n-1, 0))
		if sec.RenameFrom == "" || sec.RenameTo == "" || err1 != nil || err2 != nil {
			return bad(CodeField, "a rename needs both \"rename from\" and \"rename to\" names")
		}
		fd.Path, fd.From = to, from
		if fd.Path == fd.From {
			fd.From = ""
		}
	case fd.New:
		fd.Path = newName
	case fd.Delete:
		fd.Path = oldName
	case oldName == newName:
		fd.Path = newName
	case sec.Git:
		return bad(CodeField, "the headers name two files, %s and %s, and no rename", oldName, newName)
	default:
		fd.Path = pickName(root, oldName, newName)
	}
	if fd.New && fd.Delete {
		return bad(CodeField, "the diff both creates and deletes the file")
	}
	for _, name := range []string{fd.Path, fd.From} {
		if name == "" {
			continue
		}
		if err := CheckPath(name); err != nil {
			err.Path = field
			err.Msg = fmt.Sprintf("patch line %d: the path %s", sec.HeaderLine, err.Msg)
			return fileDiff{}, err
		}
	}
	if sec.Hunks == 0 {
		modeOnly := sec.OldMode != "" && sec.NewMode != "" && sec.OldMode != sec.NewMode
		if !sec.Git || !(fd.New || fd.Delete || fd.From != "" || modeOnly) {
			return bad(Code(patch.CodeSyntax), "no hunks: the diff changes nothing")
		}
		return fd, nil
	}
	f, err := patch.Parse(sec.Text)
	if err != nil {
		var pe *patch.Error
		if errors.As(err, &pe) && pe.Line > 0 {
			pe.Line += sec.Line - 1
		}
		return fileDiff{}, &Error{Code: codeOfPatch(err), Path: field, File: display, Err: err}
	}
	for h := range f.Hunks {
		// Errors name lines of the patch, not of the section.
		f.Hunks[h].Pos += sec.Line - 1
	}
	f.OldName, f.NewName = fd.Path, fd.Path
	if fd.New {
		f.OldName = patch.DevNull
	}
	if fd.Delete {
		f.NewName = patch.DevNull
	}
	fd.file = f
	return fd, nil
}

// detectStrip is the strip count StripDetect takes for sec.
func detectStrip(sec *patch.Section) int {
	if sec.Git {
		return 1
	}
	var names []string
	for _, n := range []string{sec.OldName, sec.NewName} {
		if n != "" && n != patch.DevNull {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return 0
	}
	prefixed := true
	for _, n := range names {
		prefixed = prefixed && (strings.HasPrefix(n, "a/") || strings.HasPrefix(n, "b/"))
	}
	if prefixed {
		return 1
	}
	if len(names) == 2 {
		a1, ar, aok := strings.Cut(names[0], "/")
		b1, br, bok := strings.Cut(names[1], "/")
		if aok && bok && a1 != b1 && ar == br {
			return 1
		}
	}
	return 0
}

// stripName removes n leading components from name (DevNull and "" stay).
func stripName(name string, n int) (string, error) {
	if name == "" || name == patch.DevNull {
		return name, nil
	}
	s := name
	for range n {
		i := strings.IndexByte(s, '/')
		if i < 0 {
			return "", fmt.Errorf("%q has fewer than %d components: strip fewer (-p)", name, n+1)
		}
		s = s[i+1:]
	}
	return s, nil
}

// pickName is the file two different names of a non-git section mean:
// the one that exists under root, else as GNU patch picks.
func pickName(root *os.Root, a, b string) string {
	exists := func(n string) bool {
		if CheckPath(n) != nil {
			return false
		}
		_, err := root.Lstat(n)
		return err == nil
	}
	ea, eb := exists(a), exists(b)
	switch {
	case ea && !eb:
		return a
	case eb && !ea:
		return b
	}
	ca, cb := strings.Count(a, "/"), strings.Count(b, "/")
	switch {
	case ca != cb:
		if ca < cb {
			return a
		}
		return b
	case len(path.Base(a)) != len(path.Base(b)):
		if len(path.Base(a)) < len(path.Base(b)) {
			return a
		}
		return b
	case len(a) < len(b):
		return a
	}
	return b
}
