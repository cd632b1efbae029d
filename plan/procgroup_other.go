//go:build !unix

package plan

import (
	"os"
	"os/exec"
)

// Without process groups only the command itself can be stopped.
func setGroup(*exec.Cmd) {}

func signalGroup(p *os.Process, _ bool) {
	if p != nil {
		_ = p.Kill()
	}
}

func signalOf(*os.ProcessState) string { return "" }
