package relay

import (
	"strings"
	"testing"
)

// Rendering is linear in the text: a long run of "{" (each a candidate
// "{{") costs about as much per byte as a short one.
func TestRenderIsLinear(t *testing.T) {
	vars := map[string]string{"x": "X"}
	work := func(n int) int {
		s := strings.Repeat("{", n) + "x}}" + strings.Repeat("{{ a", n/8) + strings.Repeat("a", n/4) + "}"
		size, w := renderedSize(s, vars)
		if got := RenderVariables(s, vars); len(got) != size || !strings.HasPrefix(got, strings.Repeat("{", n-2)+"X") {
			t.Fatalf("rendered %d bytes, sized %d", len(got), size)
		}
		return w
	}
	small, large := work(100<<10), work(1<<20)
	t.Logf("work: 100 KiB %d, 1 MiB %d", small, large)
	if large >= 20*small || large > 8<<20 {
		t.Fatalf("rendering 1 MiB costs %d, 100 KiB %d: not linear", large, small)
	}
	for _, c := range []struct{ in, want string }{
		{"{{x}}", "X"}, {"{{ x }}", "X"}, {"{{\tx\n}}", "X"}, {"{{{x}}", "{X"}, {"{{x}}}", "X}"}, {"{{y}}", "{{y}}"},
		{"{{x y}}", "{{x y}}"}, {"{{x}b}}", "{{x}b}}"}, {"{{x} }}", "{{x} }}"}, {"{{1x}}", "{{1x}}"}, {"a{{x}}b{{x}}", "aXbX"},
		{"{{{{x}}}}", "{{X}}"}, {"{{", "{{"}, {"{{x", "{{x"}, {"{{x}", "{{x}"}, {"{{ {{x}}", "{{ X"},
	} {
		if got := RenderVariables(c.in, vars); got != c.want {
			t.Errorf("%q rendered %q, want %q", c.in, got, c.want)
		}
		if n, _ := renderedSize(c.in, vars); n != len(c.want) {
			t.Errorf("%q sized %d, want %d", c.in, n, len(c.want))
		}
	}
}
