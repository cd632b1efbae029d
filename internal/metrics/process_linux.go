package metrics

import (
	"io"
	"os"
	"sync"
	"syscall"
)

// processCollector writes the process_* series from /proc, read at each
// scrape; a file it cannot read leaves its series out.
type processCollector struct {
	mu       sync.Mutex
	bootTime uint64 // read once: it does not change
}

// NewProcessCollector is the collector of the process_* series: CPU time,
// resident and virtual memory, open and maximum file descriptors, start
// time. They are read from /proc, so only on Linux; elsewhere the
// collector writes nothing.
func NewProcessCollector() Collector { return &processCollector{} }

func (p *processCollector) names() []string {
	return []string{"process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes",
		"process_start_time_seconds", "process_open_fds", "process_max_fds"}
}

func (p *processCollector) collect(out []Family) []Family {
	gauge := func(name, help string, v float64) {
		out = append(out, Family{Name: name, Help: help, Type: TypeGauge, Series: []Series{{Value: v}}})
	}
	if b, err := readProc("/proc/self/stat", maxProcFile+1); err == nil {
		if st, err := parseProcStat(b); err == nil {
			out = append(out, Family{Name: "process_cpu_seconds_total", Help: "Total user and system CPU time spent in seconds.",
				Type: TypeCounter, Series: []Series{{Value: float64(st.cpuTicks) / userHZ}}})
			gauge("process_resident_memory_bytes", "Resident memory size in bytes.", float64(st.rssPages)*float64(os.Getpagesize()))
			gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", float64(st.vsize))
			if boot := p.boot(); boot > 0 {
				gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
					float64(boot)+float64(st.startTicks)/userHZ)
			}
		}
	}
	if d, err := os.Open("/proc/self/fd"); err == nil {
		names, err := d.Readdirnames(-1)
		d.Close()
		if err == nil {
			gauge("process_open_fds", "Number of open file descriptors.", float64(len(names)))
		}
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		gauge("process_max_fds", "Maximum number of open file descriptors.", float64(lim.Cur))
	}
	return out
}

func (p *processCollector) boot() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bootTime == 0 {
		if b, err := readProc("/proc/stat", 1<<20); err == nil {
			p.bootTime, _ = parseBootTime(b)
		}
	}
	return p.bootTime
}

// readProc reads at most limit bytes of a /proc file.
func readProc(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}
