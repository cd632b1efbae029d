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
	PlanSHA256 string `json:"plan_sha256,omitempty"`
	Plan       *Plan  `json:"plan,omitempty"`
	// PatchSHA256 and Patch are, for a plain patch (apply --patch), its
	// SHA-256 and its text; a plain patch's record has no plan.
	PatchSHA256 string `json:"patch_sha256,omitempty"`
	Patch       string `json:"patch,omitempty"`
	// Note says what the run could not check (NoChecksums).
	Note    string    `json:"note,omitempty"`
	Diffs   []Outcome `json:"diffs"`
	Written bool      `json:"written"`
	// Unrestored lists the files a failed write changed and could not
	// restore (the code is then rollback_incomplete).
	Unrestored []string         `json:"unrestored,omitempty"`
	Verified   bool             `json:"verified"`
	Commands   []CommandOutcome `json:"commands,omitempty"`
	OK         bool             `json:"ok"`
	Code       Code             `json:"code,omitempty"`
	Error      string           `json:"error,omitempty"`
	// Origin, for a plan ctxkit asked a model for, says which model wrote
	// it, from what.
	Origin *Origin `json:"origin,omitempty"`
}

// Origin is where a plan came from: the model asked, the task and files
// it was shown, and its reply.
type Origin struct {
	// Upstream is the base URL of the OpenAI-compatible server asked.
	Upstream string `json:"upstream"`
	Model    string `json:"model"`
	// TaskSHA256 is the SHA-256 of the task description.
	TaskSHA256 string `json:"task_sha256"`
	// Context is each file put in the prompt, with its SHA-256.
	Context []FileSum `json:"context,omitempty"`
	// ReplySHA256 and ReplyBytes identify the reply's text, when one came.
	ReplySHA256 string `json:"reply_sha256,omitempty"`
	ReplyBytes  int    `json:"reply_bytes,omitempty"`
	// Stop is why the reply ended (end_turn, max_tokens, ...).
	Stop string `json:"stop,omitempty"`
}

// FileSum is a file's path and the SHA-256 of its content.
type FileSum struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
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
