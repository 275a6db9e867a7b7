package hook

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// hookSpec is one hook for a test: a shell script run for an event.
type hookSpec struct {
	event   Event
	matcher string
	script  string  // the body of a sh script written to the project dir
	timeout float64 // seconds; 0 leaves it out
}

// project writes each spec's script into a fresh project folder and
// returns a runner for them, with the session fields every input carries.
func project(t *testing.T, specs ...hookSpec) (*Runner, string) {
	t.Helper()
	dir := t.TempDir()
	type cmdJSON struct {
		Type    string  `json:"type"`
		Command string  `json:"command"`
		Timeout float64 `json:"timeout,omitempty"`
	}
	type groupJSON struct {
		Matcher string    `json:"matcher,omitempty"`
		Hooks   []cmdJSON `json:"hooks"`
	}
	cfg := map[Event][]groupJSON{}
	for i, s := range specs {
		name := fmt.Sprintf("hook%d.sh", i)
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+s.script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := cmdJSON{Type: "command", Command: `"$CLAUDE_PROJECT_DIR"/` + name, Timeout: s.timeout}
		cfg[s.event] = append(cfg[s.event], groupJSON{Matcher: s.matcher, Hooks: []cmdJSON{cmd}})
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &Config{}
	if w := c.Add(filepath.Join(dir, "settings.json"), raw); len(w) > 0 {
		t.Fatalf("warnings: %q", w)
	}
	r := NewRunner(c, Options{ProjectDir: dir, Session: func() Session {
		return Session{ID: "sess-1", TranscriptPath: "/t/sess-1.jsonl", Cwd: dir, PermissionMode: "default"}
	}})
	return r, dir
}

// mkfifo makes a named pipe in dir.
func mkfifo(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := unix.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
