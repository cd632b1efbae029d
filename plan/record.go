package plan

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// RecordVersion is the version of the audit record's shape.
const RecordVersion = 1

// Record is one apply run's audit record: a line of an append-only JSON
// Lines file, enough to review the run or replay it (the plan is in it).
type Record struct {
	Version  int       `json:"version"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Root     string    `json:"root"`
	Strategy string    `json:"strategy"`
	// PlanSHA256 is the SHA-256 of the plan document as read.
	PlanSHA256 string           `json:"plan_sha256"`
	Plan       *Plan            `json:"plan,omitempty"`
	Diffs      []Outcome        `json:"diffs"`
	Written    bool             `json:"written"`
	Verified   bool             `json:"verified"`
	Commands   []CommandOutcome `json:"commands,omitempty"`
	OK         bool             `json:"ok"`
	Code       Code             `json:"code,omitempty"`
	Error      string           `json:"error,omitempty"`
}

// AppendRecord appends r as one line to the file name, creating it. The
// line is written with one call on a file opened for appending, so
// concurrent runs do not interleave, and synced before returning.
func AppendRecord(name string, r *Record) error {
	if r.Version == 0 {
		r.Version = RecordVersion
	}
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("audit record: %w", err)
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("audit record: %w", err)
	}
	_, err = f.Write(append(line, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("audit record: %w", err)
	}
	return nil
}
