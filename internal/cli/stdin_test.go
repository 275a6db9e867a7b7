package cli_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPipedStdinFollowsThePrompt: `git diff | cairn -p "review"` sends
// the prompt, a newline, then stdin as it came, as Claude Code does; stdin
// alone is the prompt, trimmed.
func TestPipedStdinFollowsThePrompt(t *testing.T) {
	p := newProject(t)
	t.Setenv("HOME", p.home)
	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"diff --git a/x b/x\n+new line\n", []string{"-p", "review"}, "user: review\ndiff --git a/x b/x\n+new line\n"},
		{"no newline at the end", []string{"-p", "review", "this"}, "user: review this\nno newline at the end"},
		{"", []string{"-p", "review"}, "user: review"},
		{"  the prompt itself \n", []string{"-p"}, "user: the prompt itself"},
	} {
		code, _, errOut := p.run(t, tc.stdin, tc.args...)
		if code != 0 {
			t.Fatalf("%q: exit %d, %s", tc.args, code, errOut)
		}
		if diff := cmp.Diff([]string{tc.want}, said(p.srv.Last())); diff != "" {
			t.Errorf("stdin %q, args %q: sent (-want +got):\n%s", tc.stdin, tc.args, diff)
		}
	}
}

// TestSilentStdinDoesNotHang: a stdin pipe that nobody writes to or
// closes (a script's inherited stdin) delays a run with a prompt argument
// only briefly; the prompt goes alone.
func TestSilentStdinDoesNotHang(t *testing.T) {
	p := newProject(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cmd := exec.Command(binary, "-p", "hello")
	cmd.Dir = p.dir
	cmd.Env = []string{"CAIRN_HOME=" + p.home, "ANTHROPIC_BASE_URL=" + p.srv.URL, "ANTHROPIC_API_KEY=test-key", "HOME=" + p.home, "PATH=" + os.Getenv("PATH")}
	cmd.Stdin = r
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	r.Close()
	if got := strings.Join(said(p.srv.Last()), " | "); got != "user: hello" {
		t.Errorf("sent %q", got)
	}
}
