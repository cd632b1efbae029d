package plan

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestAppendRecord(t *testing.T) {
	name := filepath.Join(t.TempDir(), "audit.jsonl")
	p := twoFilePlan()
	for i := range 2 {
		r := &Record{Started: time.Unix(100, 0).UTC(), Finished: time.Unix(101, 0).UTC(), Root: "/r", Strategy: "write",
			PlanSHA256: Checksum([]byte("plan")), Plan: p, Diffs: []Outcome{{Index: 0, Path: "main.go", Status: StatusApplied}}, OK: i == 0}
		if err := AppendRecord(name, r); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []Record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, r)
	}
	if len(lines) != 2 || !lines[0].OK || lines[1].OK || lines[0].Version != RecordVersion || lines[1].Plan.Diffs[1].Path != "docs/new/notes.md" {
		t.Fatalf("%+v", lines)
	}
	// The plan in the record replays: it parses back to the same plan.
	raw, _ := json.Marshal(lines[0].Plan)
	if _, err := Parse(raw); err != nil {
		t.Fatal(err)
	}
}
