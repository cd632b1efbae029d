package metrics

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// userHZ is the unit of the times in /proc/<pid>/stat: the kernel reports
// them in USER_HZ, 100 on every architecture Go builds for.
const userHZ = 100

// maxProcFile bounds what is read of a /proc file.
const maxProcFile = 64 << 10

// procStat is what the process series need of /proc/self/stat.
type procStat struct {
	cpuTicks   uint64 // utime + stime
	startTicks uint64 // since boot
	vsize      uint64 // bytes
	rssPages   uint64
}

// parseProcStat reads the fields of /proc/<pid>/stat after the command
// name: that name, in parentheses, may hold spaces and parentheses itself,
// so the fields start after the last ')'.
func parseProcStat(b []byte) (procStat, error) {
	if len(b) > maxProcFile {
		return procStat{}, errors.New("stat: longer than 64 KiB")
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, errors.New("stat: no ')' closing the command name")
	}
	// Field 3 (state) is the first after the name; utime is field 14.
	f := bytes.Fields(b[i+1:])
	if len(f) < 22 {
		return procStat{}, fmt.Errorf("stat: %d fields after the command name, want at least 22", len(f))
	}
	var st procStat
	var n [6]uint64
	for k, field := range []int{14, 15, 22, 23, 24} {
		v, err := strconv.ParseUint(string(f[field-3]), 10, 64)
		if err != nil {
			if field == 24 && len(f[field-3]) > 0 && f[field-3][0] == '-' {
				continue // rss is a signed long; a negative one is no pages
			}
			return procStat{}, fmt.Errorf("stat: field %d: %q is not a count", field, f[field-3])
		}
		n[k] = v
	}
	st.cpuTicks, st.startTicks, st.vsize, st.rssPages = n[0]+n[1], n[2], n[3], n[4]
	return st, nil
}

// parseBootTime finds the "btime" line of /proc/stat: the boot time in
// seconds since 1970. b may be the file's first MiB only: btime comes
// early, after the CPU and interrupt lines.
func parseBootTime(b []byte) (uint64, error) {
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			t, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/stat: btime %q is not a count", bytes.TrimSpace(v))
			}
			return t, nil
		}
	}
	return 0, errors.New("/proc/stat: no btime line")
}
