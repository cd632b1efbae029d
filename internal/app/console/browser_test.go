package console_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

// One browser for the whole test binary; each test gets a browser context
// of its own (its own storage), so tests do not see each other's tokens.
var browser struct {
	ctx     context.Context
	missing string // why there is no browser
}

func TestMain(m *testing.M) {
	code := func() int {
		path, err := exec.LookPath("chromium")
		if err != nil {
			browser.missing = "chromium is not installed (apt-get install chromium; ./scripts/test installs it as root)"
			return m.Run()
		}
		// A start can fail on a loaded machine (the browser is slow to
		// open its DevTools endpoint): a few tries, each in a fresh profile.
		for try := 1; try <= 3; try++ {
			dir, err := os.MkdirTemp("", "ctxkit-chromium-")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			defer os.RemoveAll(dir)
			alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
				chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
				chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(dir), chromedp.WindowSize(1280, 900),
				chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
				chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
				chromedp.Flag("disable-extensions", true), chromedp.Flag("disable-default-apps", true))
			defer cancelAlloc()
			ctx, cancel := chromedp.NewContext(alloc)
			defer cancel()
			err = chromedp.Do(ctx) // starts the browser
			if err == nil {
				browser.ctx, browser.missing = ctx, ""
				break
			}
			browser.missing = fmt.Sprintf("chromium did not start (%d tries): %v", try, err)
			fmt.Fprintln(os.Stderr, "console tests:", browser.missing)
			cancel()
			cancelAlloc()
		}
		return m.Run()
	}()
	os.Exit(code)
}

// site is a ctxkit server on loopback with the console.
type site struct {
	t   *testing.T
	url string
	key ed25519.PrivateKey
	api *server.Server
	db  store.Store
	// gate, when closed, holds new event streams until it is opened; drop
	// ends the streams open now (a dropped connection, as a proxy would).
	mu      sync.Mutex
	held    chan struct{}
	streams map[*http.Request]context.CancelFunc
	resumed []string // the Last-Event-ID of each stream request
}

// newSite starts a server; tweaks change its options (a gateway, say).
func newSite(t *testing.T, tweaks ...func(*server.Options)) *site {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ctxkit.db"))
	if err != nil {
		t.Fatal(err)
	}
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	opts := server.Options{Store: db, Key: key}
	for _, f := range tweaks {
		f(&opts)
	}
	api := server.New(opts)
	s := &site{t: t, key: key, api: api, db: db, streams: map[*http.Request]context.CancelFunc{}}
	h := api.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/events/stream" {
			h.ServeHTTP(w, r)
			return
		}
		s.mu.Lock()
		held := s.held
		s.resumed = append(s.resumed, r.Header.Get("Last-Event-ID"))
		s.mu.Unlock()
		if held != nil {
			select {
			case <-held:
			case <-r.Context().Done():
				return
			}
		}
		ctx, cancel := context.WithCancel(r.Context())
		r = r.WithContext(ctx)
		s.mu.Lock()
		s.streams[r] = cancel
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.streams, r)
			s.mu.Unlock()
			cancel()
		}()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		api.StopStreams()
		srv.Close()
		// Traffic records still queued are written before the store closes.
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := api.DrainRecords(ctx); err != nil {
			t.Errorf("draining the traffic records: %v", err)
		}
		db.Close()
	})
	s.url = srv.URL
	return s
}

// dropStreams ends the open event streams and holds new ones until the
// returned func is called.
func (s *site) dropStreams() (release func()) {
	s.mu.Lock()
	held := make(chan struct{})
	s.held = held
	for _, cancel := range s.streams {
		cancel()
	}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.held = nil
		s.mu.Unlock()
		close(held)
	}
}

func (s *site) token(owner, agent string, roles ...string) string {
	s.t.Helper()
	tok, err := server.Mint(s.key, server.Principal{OwnerID: owner, AgentID: agent, Roles: roles}, time.Hour, time.Now())
	if err != nil {
		s.t.Fatal(err)
	}
	return tok
}

// call is an API request; it returns the status and the decoded body.
func (s *site) call(method, path, token string, body any) (int, map[string]any) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.url+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func (s *site) create(token string, body any) string {
	s.t.Helper()
	st, m := s.call("POST", "/breadcrumbs", token, body)
	if st != 201 {
		s.t.Fatalf("create: %d %v", st, m)
	}
	return m["id"].(string)
}

// tab is a page in a browser context of its own, watched for script
// errors and for requests outside the site.
type tab struct {
	t   *testing.T
	ctx context.Context
	s   *site
}

const wait = 90 * time.Second // generous: the tests run under -race on a loaded machine

func newTab(t *testing.T, s *site) *tab {
	t.Helper()
	if browser.ctx == nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the console's browser tests need chromium under CI: %s", browser.missing)
		}
		t.Skipf("no browser, so the console is not tested: %s", browser.missing)
	}
	ctx, cancel := chromedp.NewContext(browser.ctx, chromedp.WithNewBrowserContext())
	var (
		mu       sync.Mutex
		problems []string
	)
	note := func(format string, args ...any) {
		mu.Lock()
		problems = append(problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			desc := d.Text
			if d.Exception != nil {
				desc += " " + d.Exception.Description
			}
			note("uncaught exception: %s", desc)
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				note("console.%s: %s", ev.Type, strings.Join(args, " "))
			}
		case *cdplog.EventEntryAdded:
			// The browser's own errors (a refused script, a policy
			// violation); failed requests are the API's answers, which the
			// tests provoke (401, 412) and check themselves.
			if ev.Entry.Level == cdplog.EntryLevelError && ev.Entry.Source != cdplog.EntrySourceNetwork {
				note("browser error (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
			}
		case *network.EventRequestWillBeSent:
			if u := ev.Request.URL; !strings.HasPrefix(u, s.url+"/") {
				note("request outside the server's origin: %s", u)
			}
		}
	}); err != nil {
		cancel()
		t.Fatal(err)
	}
	tb := &tab{t: t, ctx: ctx, s: s}
	tb.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, cdplog.Enable, cdp.Empty{})
		return err
	}))
	t.Cleanup(func() {
		cancel()
		mu.Lock()
		defer mu.Unlock()
		for _, p := range problems {
			t.Errorf("the page had a problem: %s", p)
		}
	})
	return tb
}

func (tb *tab) do(steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 2*wait)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		tb.t.Fatal(err)
	}
}

// until waits for a JavaScript condition to hold. A condition that
// throws (an element not there yet, while a page is redrawn) does not
// hold yet; it must not end the polling.
func (tb *tab) until(js string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 2*wait)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool]("(() => { try { return !!("+js+") } catch { return false } })()", chromedp.WithPollingTimeout(wait), chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		page, _ := eval[string](tb, `document.querySelector("main") ? document.querySelector("main").innerText.slice(0, 2000) : ""`)
		tb.t.Fatalf("waiting for %s: %v\nthe page says:\n%s", js, err, page)
	}
}

func eval[T any](tb *tab, js string) (T, error) {
	ctx, cancel := context.WithTimeout(tb.ctx, wait)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](js))
}

func (tb *tab) value(js string) string {
	tb.t.Helper()
	v, err := eval[string](tb, js)
	if err != nil {
		tb.t.Fatalf("%s: %v", js, err)
	}
	return v
}

func (tb *tab) number(js string) float64 {
	tb.t.Helper()
	v, err := eval[float64](tb, js)
	if err != nil {
		tb.t.Fatalf("%s: %v", js, err)
	}
	return v
}

func (tb *tab) open(path string) {
	tb.t.Helper()
	tb.do(chromedp.Navigate(tb.s.url + path))
}

// rows is the script for the list's rows once a load has finished.
const rows = `(document.querySelector("#crumbs") && document.querySelector("#crumbs").dataset.loads > 0 ? document.querySelectorAll("#rows tr").length : -1)`

// signIn signs in by pasting token and waits for the list.
func (tb *tab) signIn(token string) {
	tb.t.Helper()
	tb.open("/ui/")
	tb.fill("token", token)
	tb.click(`#signin button[type=submit]`)
	tb.until(rows + ` >= 0`)
}

func (tb *tab) screenshot(name string) {
	tb.t.Helper()
	dir := os.Getenv("CTXKIT_ARTIFACTS")
	if dir == "" {
		dir = tb.t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.t.Fatal(err)
	}
	for _, scheme := range []string{"light", "dark"} {
		tb.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
			return err
		}))
		tb.until(fmt.Sprintf(`matchMedia("(prefers-color-scheme: %s)").matches`, scheme))
		ctx, cancel := context.WithTimeout(tb.ctx, wait)
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		cancel()
		if err != nil {
			tb.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "console-"+name+"-"+scheme+".png"), png, 0o644); err != nil {
			tb.t.Fatal(err)
		}
	}
}

// fill sets an input's value as typing would leave it.
func (tb *tab) fill(id, value string) {
	tb.t.Helper()
	v, _ := json.Marshal(value)
	tb.until(fmt.Sprintf(`(() => { const e = document.getElementById(%q); if (!e) return false; e.value = %s; e.dispatchEvent(new Event("input", {bubbles: true})); return true })()`, id, v))
}

// click clicks the element a selector names, once it is there and enabled.
func (tb *tab) click(sel string) {
	tb.t.Helper()
	tb.until(fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e || e.disabled) return false; e.click(); return true })()`, sel))
}
