package cli_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/proctest"
	"github.com/cairn-dev/cairn/session"
)

// TestEmptySessions: a session file exists only once it holds a prompt;
// an empty one (left by a crash or an older cairn) is neither continued
// nor listed; -c with no session starts one.
func TestEmptySessions(t *testing.T) {
	p := newProject(t)
	t.Setenv("HOME", p.home)
	if code, _, errOut := p.run(t, "", "-p", "/bogus"); code != 2 || !strings.Contains(errOut, "unknown command /bogus") {
		t.Fatalf("-p /bogus: exit %d, %q", code, errOut)
	}
	if ids := p.sessionIDs(t); len(ids) != 0 {
		t.Errorf("-p /bogus left sessions %v", ids)
	}
	// -c with nothing to continue starts a session.
	if code, _, errOut := p.run(t, "", "-c", "-p", "first"); code != 0 {
		t.Fatalf("-c with no session: exit %d, %q", code, errOut)
	}
	ids := p.sessionIDs(t)
	if len(ids) != 1 {
		t.Fatalf("sessions after -c: %v", ids)
	}
	// A newer empty transcript is skipped by -c and by the list.
	empty := filepath.Join(session.Home{Dir: p.home}.ProjectDir(p.dir), "0f8fad5b-d9cb-469f-a165-70867728950e.jsonl")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(empty, future, future); err != nil {
		t.Fatal(err)
	}
	p.srv.Enqueue()
	if code, _, errOut := p.run(t, "", "-c", "-p", "second"); code != 0 {
		t.Fatalf("-c: exit %d, %q", code, errOut)
	}
	if got := strings.Join(said(p.srv.Last()), " | "); got != "user: first | assistant: OK | user: second" {
		t.Errorf("-c sent %q", got)
	}
	code, out, _ := p.run(t, "", "sessions", "list", "--json")
	if code != 0 || strings.Contains(out, "0f8fad5b") || !strings.Contains(out, ids[0]) {
		t.Errorf("sessions list: exit %d, %s", code, out)
	}
}

// TestUIOpenQuitLeavesNoSession opens the terminal UI and quits without
// typing anything: no session file, and no "Resume this session" line.
func TestUIOpenQuitLeavesNoSession(t *testing.T) {
	proctest.Command(t, "tmux", "apt-get install tmux")
	p := newProject(t)
	x := tmux{t: t, name: fmt.Sprintf("cairn-empty-%d", os.Getpid())}
	env := []string{"CAIRN_HOME=" + p.home, "ANTHROPIC_BASE_URL=" + p.srv.URL, "ANTHROPIC_API_KEY=test-key", "HOME=" + p.home, "TERM=xterm-256color"}
	script := fmt.Sprintf("cd %q && env -i PATH=%q %s %q; echo cairn-exited-$?; sleep 60", p.dir, os.Getenv("PATH"), strings.Join(quoteAll(env), " "), binary)
	x.run("new-session", "-d", "-s", x.name, "-x", "100", "-y", "30", script)
	t.Cleanup(func() { exec.Command("tmux", "-L", x.name, "kill-server").Run() })
	x.waitFor("Welcome to cairn")
	x.run("send-keys", "-t", x.name, "C-c")
	x.waitFor("Press Ctrl+C again to exit")
	x.run("send-keys", "-t", x.name, "C-c")
	s := x.waitFor("cairn-exited-")
	if !strings.Contains(s, "cairn-exited-0") || strings.Contains(s, "Resume this session") {
		t.Errorf("exit:\n%s", s)
	}
	if ids := p.sessionIDs(t); len(ids) != 0 {
		t.Errorf("opening and quitting left sessions %v", ids)
	}
}
