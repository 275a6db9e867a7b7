package cli_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/proctest"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
)

// TestNoTerminalFallsBack: `cairn PROMPT` with stdout piped runs as -p,
// and says so.
func TestNoTerminalFallsBack(t *testing.T) {
	p := newProject(t)
	p.srv.Enqueue(modeltest.Text("Headless answer."))
	code, out, errOut := p.cairn(t, "say hello")
	if code != 0 || out != "Headless answer.\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if !strings.Contains(errOut, "stdout is not a terminal") {
		t.Errorf("no word of the fallback on stderr: %q", errOut)
	}
	// -r without an id needs the picker, which needs a terminal.
	if code, _, errOut := p.cairn(t, "-r", "-p", "again"); code != 2 || !strings.Contains(errOut, "session picker") {
		t.Errorf("cairn -r -p: exit %d, %q", code, errOut)
	}
}

// tmux drives the real binary in a real terminal.
type tmux struct {
	t    *testing.T
	name string
}

func (x tmux) run(args ...string) string {
	x.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", x.name}, args...)...).CombinedOutput()
	if err != nil {
		x.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (x tmux) screen() string { return x.run("capture-pane", "-p", "-t", x.name) }

func (x tmux) waitFor(want string) string {
	x.t.Helper()
	return x.waitUntil(fmt.Sprintf("%q", want), func(s string) bool { return strings.Contains(s, want) })
}

// waitUntil waits until the screen is ok, and returns it; what names
// the awaited screen in the failure.
func (x tmux) waitUntil(what string, ok func(string) bool) string {
	x.t.Helper()
	var s string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		if s = x.screen(); ok(s) {
			return s
		}
		time.Sleep(100 * time.Millisecond) // a real terminal: nothing to wait on but the screen
	}
	x.t.Fatalf("the terminal never showed %s; it shows:\n%s", what, s)
	return ""
}

// TestTerminalUISmoke starts `cairn` in tmux, asks a question that makes
// the model run a command the person must allow, answers, and exits
// with Ctrl+C twice.
func TestTerminalUISmoke(t *testing.T) {
	proctest.Command(t, "tmux", "apt-get install tmux")
	p := newProject(t)
	p.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{model.TextBlock("Let me check."), modeltest.ToolUse("toolu_1", "Bash", `{"command":"echo tmux-ok > out.txt"}`)}},
		modeltest.Text("All **done**."),
	)
	x := tmux{t: t, name: fmt.Sprintf("cairn-e2e-%d", os.Getpid())}
	env := []string{"CAIRN_HOME=" + p.home, "ANTHROPIC_BASE_URL=" + p.srv.URL, "ANTHROPIC_API_KEY=test-key", "HOME=" + p.home, "TERM=xterm-256color"}
	script := fmt.Sprintf("cd %q && env -i PATH=%q %s %q; echo cairn-exited-$?; sleep 60", p.dir, os.Getenv("PATH"), strings.Join(quoteAll(env), " "), binary)
	x.run("new-session", "-d", "-s", x.name, "-x", "100", "-y", "30", script)
	t.Cleanup(func() { exec.Command("tmux", "-L", x.name, "kill-server").Run() })

	x.waitFor("Welcome to cairn")
	x.run("send-keys", "-t", x.name, "-l", "make out.txt")
	x.run("send-keys", "-t", x.name, "Enter")
	x.waitFor("Do you want to proceed?")
	x.run("send-keys", "-t", x.name, "1")
	s := x.waitFor("All done.")
	if !strings.Contains(s, "Bash(echo tmux-ok > out.txt)") {
		t.Errorf("the tool call is not shown:\n%s", s)
	}
	if b, _ := os.ReadFile(p.dir + "/out.txt"); !bytes.Equal(b, []byte("tmux-ok\n")) {
		t.Errorf("out.txt = %q", b)
	}
	x.run("send-keys", "-t", x.name, "C-c")
	x.waitFor("Press Ctrl+C again to exit")
	x.run("send-keys", "-t", x.name, "C-c")
	s = x.waitFor("cairn-exited-")
	if !strings.Contains(s, "cairn-exited-0") || !strings.Contains(s, "Resume this session with: cairn -r") {
		t.Errorf("cairn did not exit cleanly:\n%s", s)
	}
	if data := p.transcript(t); !bytes.Contains(data, []byte(`"by":"user"`)) {
		t.Error("the person's answer is not recorded with the call")
	}
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
