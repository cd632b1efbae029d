package server

import (
	"bytes"
	"os"
	"strconv"
)

// processWrites is the write calls the test process has made and the
// bytes they wrote (Linux's /proc/self/io: the syscw and wchar lines);
// ok is false where that is not at hand. Unlike CPU time, neither
// depends on what else the machine runs.
func processWrites() (calls, bytesWritten int64, ok bool) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, 0, false
	}
	var seen int
	for line := range bytes.Lines(b) {
		name, value, found := bytes.Cut(bytes.TrimSpace(line), []byte(": "))
		if !found {
			continue
		}
		n, err := strconv.ParseInt(string(value), 10, 64)
		if err != nil {
			continue
		}
		switch string(name) {
		case "syscw":
			calls, seen = n, seen+1
		case "wchar":
			bytesWritten, seen = n, seen+1
		}
	}
	return calls, bytesWritten, seen == 2
}
