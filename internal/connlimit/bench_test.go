package connlimit_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/connlimit"
)

// holderEnv makes the test binary a client process that holds idle
// connections (see hold): the server's process then spends only its own
// descriptors, as against clients on other machines.
const holderEnv = "CONNLIMIT_HOLD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(holderEnv); spec != "" {
		hold(spec)
		return
	}
	os.Exit(m.Run())
}

// holdReport is what a holder process prints.
type holdReport struct {
	Opened, Failed int     // idle connections that got their /health, and those that did not
	P50ms, Maxms   float64 // latency of /health on a new connection, with the idle ones open (2s: none)
	ProbeFailures  int     // of those probes, the ones with no 200 within 2s
}

// hold opens n connections to addr, asks GET /health once on each and keeps
// them, and prints a holdReport of them; told "probe" on its standard input,
// it then times 20 GET /health on new connections and prints their report.
// It ends when its standard input closes. spec is "addr n".
func hold(spec string) {
	var (
		addr string
		n    int
	)
	if _, err := fmt.Sscan(spec, &addr, &n); err != nil {
		log.Fatal(err)
	}
	var (
		mu     sync.Mutex
		held   []net.Conn
		next   atomic.Int64
		failed atomic.Int64
		wg     sync.WaitGroup
	)
	for range 64 {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				c, err := keepAlive(addr)
				if err != nil {
					failed.Add(1)
					continue
				}
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	enc := json.NewEncoder(os.Stdout)
	enc.Encode(holdReport{Opened: len(held), Failed: int(failed.Load())})
	// Probes once every holder has opened its connections.
	in := bufio.NewReader(os.Stdin)
	if line, _ := in.ReadString('\n'); line == "probe\n" {
		var rep holdReport
		var lat []float64
		for range 20 {
			start := time.Now()
			st, _, err := health(addr, "/health")
			d := time.Since(start)
			if err != nil || st != 200 {
				rep.ProbeFailures++
				d = 2 * time.Second
			}
			lat = append(lat, float64(d.Microseconds())/1000)
		}
		slices.Sort(lat)
		rep.P50ms, rep.Maxms = lat[len(lat)/2], lat[len(lat)-1]
		enc.Encode(rep)
	}
	io.Copy(io.Discard, in)
	runtime.KeepAlive(held) // an unreachable connection is closed by its finalizer
}

// BenchmarkIdleConns holds 20,000 idle keep-alive connections (one GET
// /health each, as in the attack; fewer if two client processes' descriptor
// limits do not allow as many) from two client processes against a server in
// this process,
// unbounded (the baseline) and bounded by the default derived from the
// descriptor limit, and reports the /health latency on a new connection and
// the connections the server holds. Run it with -benchtime=1x.
func BenchmarkIdleConns(b *testing.B) {
	nofile, err := connlimit.FileLimit()
	if err != nil {
		b.Fatal(err)
	}
	n := min(2*(int(nofile)-100), 20000) // a holder needs a few descriptors of its own
	for _, bounded := range []bool{false, true} {
		name := "unbounded"
		if bounded {
			name = "bounded"
		}
		b.Run(name, func(b *testing.B) {
			var rep holdReport
			var held int64
			for b.Loop() {
				rep, held = idleFlood(b, n, bounded, nofile)
			}
			b.ReportMetric(float64(n), "conns_opened")
			b.ReportMetric(float64(held), "conns_held")
			b.ReportMetric(rep.P50ms, "health_p50_ms")
			b.ReportMetric(rep.Maxms, "health_max_ms")
			b.ReportMetric(float64(rep.ProbeFailures), "health_failed/20")
		})
	}
}

func idleFlood(b *testing.B, n int, bounded bool, nofile uint64) (holdReport, int64) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var open atomic.Int64 // connections the server holds, counted by its own hooks
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"status":"ok"}`) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: log.New(io.Discard, "", 0), // the unbounded server's accept errors (too many open files)
		ConnState: func(_ net.Conn, s http.ConnState) {
			switch s {
			case http.StateNew:
				open.Add(1)
			case http.StateClosed, http.StateHijacked:
				open.Add(-1)
			}
		}}
	var ln net.Listener = raw
	var l *connlimit.Listener
	if bounded {
		l = connlimit.Wrap(srv, raw, connlimit.Options{Max: connlimit.Default(nofile), Admit: isHealth})
		ln = l
	}
	go srv.Serve(ln)
	defer srv.Close()

	var (
		rep   holdReport
		mu    sync.Mutex
		wg    sync.WaitGroup
		stdin []io.WriteCloser
		outs  []*json.Decoder
		cmds  []*exec.Cmd
	)
	for i := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), holderEnv+"="+raw.Addr().String()+" "+strconv.Itoa(n/2+i*(n%2)))
		in, err := cmd.StdinPipe()
		if err != nil {
			b.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		stdin, outs, cmds = append(stdin, in), append(outs, json.NewDecoder(out)), append(cmds, cmd)
		wg.Go(func() {
			var r holdReport
			if err := outs[i].Decode(&r); err != nil {
				b.Error("holder: ", err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			rep.Opened, rep.Failed = rep.Opened+r.Opened, rep.Failed+r.Failed
		})
	}
	wg.Wait()
	io.WriteString(stdin[0], "probe\n")
	var probes holdReport
	if err := outs[0].Decode(&probes); err != nil {
		b.Fatal("holder: ", err)
	}
	rep.P50ms, rep.Maxms, rep.ProbeFailures = probes.P50ms, probes.Maxms, probes.ProbeFailures
	held := open.Load()
	if l != nil {
		held = int64(l.Stats().Open)
		b.Logf("bound %d: %+v", connlimit.Default(nofile), l.Stats())
	}
	b.Logf("%s: %+v, server holds %d", map[bool]string{false: "unbounded", true: "bounded"}[bounded], rep, held)
	for i, cmd := range cmds {
		stdin[i].Close()
		cmd.Wait()
	}
	return rep, held
}
