//go:build !unix

package gitfiles

import "os/exec"

func inGroup(cmd *exec.Cmd) {}

func killGroup(cmd *exec.Cmd) {}
