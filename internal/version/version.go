// Package version is the one place ctxkit reads its own version from: the
// module version, the commit and its time and whether the tree had local
// changes, as the Go toolchain recorded them in the binary. ctxkit version,
// the MCP server's serverInfo (over stdio and HTTP) and GET /health all
// say the same string.
package version

import (
	"runtime/debug"
	"strings"
	"sync"
)

// Info is what the binary knows of its own build.
type Info struct {
	Version    string // the module version, or "devel" for a build from a work tree
	Commit     string // the VCS revision, when built from a repository
	CommitTime string // the revision's time (RFC 3339); Go records no build time
	Modified   bool   // the work tree had changes not committed
}

var read = sync.OnceValue(func() Info {
	in := Info{Version: "devel"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return in
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		in.Version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = s.Value
		case "vcs.time":
			in.CommitTime = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
})

// Get returns the binary's build information.
func Get() Info { return read() }

// String is the version as ctxkit prints it: "v1.2.3", or
// "devel+1a2b3c4d5e6f" (with "-dirty" for a modified tree) when built
// from a work tree at a commit.
func String() string {
	in := read()
	if in.Version != "devel" || in.Commit == "" {
		return in.Version
	}
	s := "devel+" + in.Commit[:min(12, len(in.Commit))]
	if in.Modified {
		s += "-dirty"
	}
	return s
}

// Long is the version with the commit and its time, for ctxkit version.
func Long() string {
	in := read()
	var b strings.Builder
	b.WriteString("ctxkit " + String())
	if in.Commit != "" {
		b.WriteString(" (commit " + in.Commit)
		if in.CommitTime != "" {
			b.WriteString(", " + in.CommitTime)
		}
		if in.Modified {
			b.WriteString(", with local changes")
		}
		b.WriteString(")")
	}
	return b.String()
}
