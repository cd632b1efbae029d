package main_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildCtxkit builds the binary once per test run.
func buildCtxkit(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ctxkit")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

type proc struct {
	cmd   *exec.Cmd
	url   string
	token string
}

// serve starts 'ctxkit serve' as a subprocess and reads its URL (and the
// admin token on a first start) from its output.
func serve(t *testing.T, bin, data string, flags ...string) proc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--data", data}, flags...)...)
	cmd.Stderr = io.Discard
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	p := proc{cmd: cmd}
	keyFile := filepath.Join(data, "signing.key")
	for i, f := range flags {
		if f == "--key" && i+1 < len(flags) {
			keyFile = flags[i+1]
		}
	}
	_, statErr := os.Stat(keyFile)
	firstStart := os.IsNotExist(statErr)
	lines := make(chan string, 8)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	read := func() string {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("serve exited during start-up")
			}
			return line
		case <-time.After(20 * time.Second):
			t.Fatal("serve did not start")
		}
		return ""
	}
	m := regexp.MustCompile(`ctxkit serving on (http://\S+)`).FindStringSubmatch(read())
	if m == nil {
		t.Fatal("serve did not print its URL first")
	}
	p.url = m[1]
	if firstStart {
		if !strings.Contains(read(), "admin token") {
			t.Fatal("first start did not announce an admin token")
		}
		p.token = read()
	}
	go func() {
		for range lines {
		}
	}()
	return p
}

// TestKillNineLosesNothingAcknowledged writes from several clients, kills the
// server with SIGKILL mid-stream, restarts it, and checks every write the
// server acknowledged is there.
func TestKillNineLosesNothingAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a server; skipped with -short")
	}
	bin := buildCtxkit(t)
	data := t.TempDir()
	p := serve(t, bin, data)
	if p.token == "" {
		t.Fatal("first start printed no admin token")
	}
	client := &http.Client{Timeout: 5 * time.Second}
	do := func(method, path, body string) (int, map[string]any) {
		req, _ := http.NewRequest(method, p.url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+p.token)
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil // the server died mid-request: not acknowledged
		}
		defer resp.Body.Close()
		var m map[string]any
		if json.NewDecoder(resp.Body).Decode(&m) != nil {
			return 0, nil
		}
		return resp.StatusCode, m
	}

	var (
		mu    sync.Mutex
		acked = map[string]int64{} // id → highest acknowledged version
		wg    sync.WaitGroup
		stop  = make(chan struct{})
	)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				code, m := do("POST", "/breadcrumbs", fmt.Sprintf(`{"title":"w%d-%d","context":{"i":%d}}`, w, i, i))
				if code != 201 {
					continue
				}
				id := m["id"].(string)
				mu.Lock()
				acked[id] = 1
				mu.Unlock()
				code, m = do("PATCH", "/breadcrumbs/"+id, `{"title":"patched"}`)
				if code == 200 {
					mu.Lock()
					acked[id] = int64(m["version"].(float64))
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
	close(stop)
	wg.Wait()
	if len(acked) < 20 {
		t.Fatalf("only %d writes were acknowledged before the kill; the test proves little", len(acked))
	}

	p2 := serve(t, bin, data)
	if p2.token != "" {
		t.Fatal("restart printed an admin token")
	}
	p.url = p2.url
	for id, version := range acked {
		code, m := do("GET", "/breadcrumbs/"+id+"/full", "")
		if code != 200 {
			t.Errorf("acknowledged breadcrumb %s is gone after kill -9 (%d)", id, code)
			continue
		}
		if got := int64(m["version"].(float64)); got < version {
			t.Errorf("breadcrumb %s: version %d after restart, %d was acknowledged", id, got, version)
		}
	}
	t.Logf("%d acknowledged breadcrumbs all present after kill -9", len(acked))
	if _, err := os.Stat(filepath.Join(data, "ctxkit.db")); err != nil {
		t.Fatal(err)
	}
}
