package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// byteSize is a flag value for a number of bytes: a whole number with an
// optional unit, binary (KiB, MiB, GiB, TiB) or decimal (kB, MB, GB, TB),
// as in 512MiB or 1GiB. Units are case-insensitive; a bare number is bytes.
type byteSize int64

var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
}

func (s *byteSize) String() string { return strconv.FormatInt(int64(*s), 10) }

func (s *byteSize) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	*s = byteSize(n)
	return nil
}

func parseSize(v string) (int64, error) {
	t := strings.TrimSpace(v)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("%q is not a size: write a whole number with a unit, such as 512MiB or 1GiB", v)
	}
	unit, ok := sizeUnits[strings.ToLower(strings.TrimSpace(t[i:]))]
	if !ok {
		return 0, fmt.Errorf("%q: unknown unit %q; use B, KiB, MiB, GiB, TiB, kB, MB, GB or TB", v, strings.TrimSpace(t[i:]))
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil || n > math.MaxInt64/unit {
		return 0, fmt.Errorf("%q is too large", v)
	}
	return n * unit, nil
}

// minViewMemory is the least --view-memory: less leaves a view's
// computation too little room to be useful.
const minViewMemory = 64 << 20

// byteCount prints n in the largest binary unit that divides it.
func byteCount(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}
