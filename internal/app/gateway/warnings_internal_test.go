package gateway

import (
	"strconv"
	"testing"
)

// TestWarningsCapped: a request's warnings past maxWarnings are counted
// in one last entry, not kept.
func TestWarningsCapped(t *testing.T) {
	for _, n := range []int{0, 1, maxWarnings, maxWarnings + 1, 10 * maxWarnings} {
		var ws warnings
		for k := range n {
			ws.add("messages[" + strconv.Itoa(k) + "]: dropped")
		}
		all := ws.all()
		switch {
		case n <= maxWarnings && len(all) != n:
			t.Fatalf("%d warnings: kept %d", n, len(all))
		case n > maxWarnings && (len(all) != maxWarnings+1 || all[maxWarnings] != "… and "+strconv.Itoa(n-maxWarnings)+" more"):
			t.Fatalf("%d warnings: kept %d, last %q", n, len(all), all[len(all)-1])
		case len(ws.list) > maxWarnings:
			t.Fatalf("%d warnings: %d held", n, len(ws.list))
		}
	}
}
