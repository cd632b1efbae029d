//go:build race

package server_test

// raceEnabled: the race detector keeps shadow memory of its own, which the
// Go runtime cannot return, so resident-set figures mean nothing under it.
const raceEnabled = true
