package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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

// pidIn returns the process id on the first line of out.
func pidIn(t *testing.T, out string) int {
	t.Helper()
	first, _, _ := strings.Cut(out, "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		t.Fatalf("no pid in output %q", out)
	}
	return pid
}

// waitGone fails the test unless process pid ends within 5 s, waiting on
// its exit event (a pidfd) rather than sleeping. It may remain a zombie
// until its new parent reaps it; that counts as ended.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return
	}
	if err != nil {
		t.Skipf("pidfd_open: %v", err)
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 5000)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d still runs 5 s after the hook was stopped", pid)
		}
		return
	}
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
