package patch

import (
	"errors"
	"math/rand/v2"
	"testing"
)

func TestDumpRefusedP1(t *testing.T) {
	corpus := historyCorpus(t, moduleRoot(t), 40)
	for vi, v := range lenientVariants {
		rng := rand.New(rand.NewPCG(19, uint64(vi)))
		for _, e := range corpus {
			if e.newFile || e.deleteFile {
				continue
			}
			d, ok := v.rewrite(rng, e.diff)
			if !ok {
				continue
			}
			f, _ := Parse(d)
			_, err := Apply(e.pre, f)
			var pe *Error
			if errors.As(err, &pe) {
				t.Logf("%s | %s | %v", v.name, e.name, err)
			}
		}
	}
}
