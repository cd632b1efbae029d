package console_test

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/console"
)

func TestAssetsStayUnderTheirBudget(t *testing.T) {
	total := int64(0)
	err := filepath.WalkDir("assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		st, err := os.Stat(p)
		total += st.Size()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if total > 300<<10 {
		t.Fatalf("the console's assets are %d bytes, over the 300 KB budget", total)
	}
}

// TestAssetsHaveNoInlineCodeOrMarkupSinks: nothing the policy would refuse
// (inline scripts, style attributes, handlers in markup), and no way for
// data to become markup or code in the scripts.
func TestAssetsHaveNoInlineCodeOrMarkupSinks(t *testing.T) {
	html, err := os.ReadFile("assets/index.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range regexp.MustCompile(`(?i)<script[^>]*>`).FindAll(html, -1) {
		if !strings.Contains(string(tag), " src=") {
			t.Errorf("index.html has an inline script: %s", tag)
		}
	}
	for _, re := range []string{`\sstyle=`, `\son[a-z]+=`, `<style`, `https?://`} {
		if regexp.MustCompile(`(?i)` + re).Match(html) {
			t.Errorf("index.html matches %s", re)
		}
	}
	if !regexp.MustCompile(`<script type="module" src="/ui/app.js"></script>`).Match(html) {
		t.Error("index.html does not load app.js as a module")
	}
	js, err := os.ReadFile("assets/app.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "setTimeout(\"", ".style.", "http://", "https://"} {
		if strings.Contains(string(js), sink) {
			t.Errorf("app.js uses %s", sink)
		}
	}
}

func TestHandlerHeaders(t *testing.T) {
	srv := httptest.NewServer(http.StripPrefix("", console.Handler()))
	defer srv.Close()
	get := func(path string, header ...string) *http.Response {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for path, ctype := range map[string]string{
		"/ui/": "text/html; charset=utf-8", "/ui/index.html": "text/html; charset=utf-8", "/ui/app.js": "text/javascript; charset=utf-8",
		"/ui/style.css": "text/css; charset=utf-8", "/ui/icon.svg": "image/svg+xml",
	} {
		resp := get(path)
		h := resp.Header
		if resp.StatusCode != 200 || h.Get("Content-Type") != ctype {
			t.Errorf("%s: %d %s; want 200 %s", path, resp.StatusCode, h.Get("Content-Type"), ctype)
		}
		csp := h.Get("Content-Security-Policy")
		for _, d := range []string{"default-src 'self'", "frame-ancestors 'none'", "script-src 'self'", "object-src 'none'"} {
			if !strings.Contains(csp, d) {
				t.Errorf("%s: the policy %q lacks %s", path, csp, d)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("%s: the policy allows something unsafe: %q", path, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" || h.Get("ETag") == "" {
			t.Errorf("%s: headers %v", path, h)
		}
		if again := get(path, "If-None-Match", h.Get("ETag")); again.StatusCode != http.StatusNotModified {
			t.Errorf("%s: revalidation answered %d, not 304", path, again.StatusCode)
		}
	}
	if resp := get("/ui/nothing.js"); resp.StatusCode != 404 || resp.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("an unknown asset: %d %v", resp.StatusCode, resp.Header)
	}
}
