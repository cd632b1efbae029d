package metrics

import (
	"fmt"
	"strings"
	"testing"
)

const statLine = "4242 (ctx kit) (x)) S 1 4242 4242 0 -1 4194560 2112 0 0 0 150 25 0 0 20 0 9 0 987654 1234567168 2048 18446744073709551615 1 1 0 0 0 0 0 0 2143420159 0 0 0 17 1 0 0 0 0 0\n"

// TestParseProcStat: the fields are found after the last ')', whatever
// the command name holds, and a short or malformed line is an error
// naming the field.
func TestParseProcStat(t *testing.T) {
	st, err := parseProcStat([]byte(statLine))
	if err != nil {
		t.Fatal(err)
	}
	if st != (procStat{cpuTicks: 175, startTicks: 987654, vsize: 1234567168, rssPages: 2048}) {
		t.Errorf("parsed %+v", st)
	}
	for _, c := range []struct{ in, want string }{
		{"1 (x S 1 2 3", "no ')'"},
		{"1 (x) S 1 2 3", "4 fields"},
		{strings.Replace(statLine, " 150 ", " x ", 1), "field 14"},
		{strings.Replace(statLine, " 987654 ", " -3 ", 1), "field 22"},
		{"1 (" + strings.Repeat("x", 70000) + ")", "64 KiB"},
	} {
		if _, err := parseProcStat([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.40q: err %v, want %q", c.in, err, c.want)
		}
	}
	if st, err := parseProcStat([]byte(strings.Replace(statLine, " 2048 ", " -1 ", 1))); err != nil || st.rssPages != 0 {
		t.Errorf("negative rss: %+v %v", st, err)
	}
	boot, err := parseBootTime([]byte("cpu  1 2 3\nintr 1 2 3\nctxt 9\nbtime 1764000000\nprocesses 5\n"))
	if err != nil || boot != 1764000000 {
		t.Errorf("btime %v %v", boot, err)
	}
	for _, in := range []string{"cpu 1\n", "btime x\n"} {
		if _, err := parseBootTime([]byte(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// FuzzProcStat: no input makes the /proc readers panic, and what they
// accept has every field they need.
func FuzzProcStat(f *testing.F) {
	f.Add([]byte(statLine))
	f.Add([]byte("1 ()) S"))
	f.Add([]byte("btime 12\n"))
	f.Add([]byte("))))"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if st, err := parseProcStat(b); err == nil {
			// Write the fields back and parse again: the same numbers.
			line := fmt.Sprintf("1 (c) S %s %d %d %s %d %d %d", strings.Repeat("0 ", 10), st.cpuTicks, 0, strings.Repeat("0 ", 6), st.startTicks, st.vsize, st.rssPages)
			if again, err := parseProcStat([]byte(line)); err != nil || again != st {
				t.Fatalf("%q: %+v, again %+v %v", b, st, again, err)
			}
		}
		parseBootTime(b)
	})
}
