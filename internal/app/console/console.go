// Package console is ctxkit's web console, served by ctxkit serve at /ui/:
// plain ES modules and CSS embedded in the binary, with no build step and
// nothing fetched from elsewhere. The page reads and writes only through
// the public API with the token the user signs in with, so what it may see
// and change is exactly what the API allows that token.
package console

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed assets
var files embed.FS

// Prefix is the path the console is served under.
const Prefix = "/ui/"

// SecurityPolicy is the Content-Security-Policy of every console response:
// scripts, styles, images and API calls from the server's own origin only,
// no inline script or style, no eval, no plugins, and no framing (against
// clickjacking).
const SecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; font-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// asset is one embedded file with what is sent with it.
type asset struct {
	body  []byte
	ctype string
	etag  string
}

var types = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// Handler serves the console: GET Prefix is the page, Prefix+NAME its
// assets. Every response carries the security headers; assets carry an
// ETag and are revalidated on each use (their names do not change with
// their content, and a new binary must not run with an old script).
func Handler() http.Handler {
	assets := map[string]asset{}
	err := fs.WalkDir(files, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		ctype, ok := types[path.Ext(p)]
		if !ok {
			ctype = "application/octet-stream"
		}
		sum := sha256.Sum256(body)
		assets[strings.TrimPrefix(p, "assets/")] = asset{body: body, ctype: ctype,
			etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		// The files are part of the binary: a failure here is a build's,
		// which the tests catch.
		panic(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", SecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		name := strings.TrimPrefix(r.URL.Path, Prefix)
		if name == "" {
			name = "index.html"
		}
		a, ok := assets[name]
		if !ok {
			h.Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte("no such console page: the console is at " + Prefix + "\n"))
			return
		}
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", a.etag)
		h.Set("Content-Type", a.ctype)
		if match(r.Header.Get("If-None-Match"), a.etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		if r.Method == http.MethodHead {
			return
		}
		w.Write(a.body)
	})
}

// match reports whether an If-None-Match list names tag (or is "*").
func match(header, tag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == tag {
			return true
		}
	}
	return false
}
