package cli_test

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// startUI starts `cairn args…` in the project in a tmux terminal of
// width×height cells (the test skips without tmux) and ends it with the
// test. extraEnv is more of cairn's environment.
func (p *project) startUI(t *testing.T, width, height int, extraEnv []string, args ...string) tmux {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	name := fmt.Sprintf("cairn-%s-%d", regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "-"), os.Getpid())
	x := tmux{t: t, name: name}
	env := append(append([]string{"CAIRN_HOME=" + p.home, "ANTHROPIC_BASE_URL=" + p.srv.URL, "ANTHROPIC_API_KEY=test-key", "HOME=" + p.home, "TERM=xterm-256color"}, p.env...), extraEnv...)
	script := fmt.Sprintf("cd %q && env -i PATH=%q %s %q %s; echo cairn-exited-$?; sleep 60", p.dir, os.Getenv("PATH"), strings.Join(quoteAll(env), " "), binary, strings.Join(quoteAll(args), " "))
	x.run("new-session", "-d", "-s", x.name, "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), script)
	t.Cleanup(func() { exec.Command("tmux", "-L", x.name, "kill-server").Run() })
	return x
}

// keys types text (literally) then presses each of the named keys.
func (x tmux) keys(text string, named ...string) {
	x.t.Helper()
	if text != "" {
		x.run("send-keys", "-t", x.name, "-l", text)
	}
	for _, k := range named {
		x.run("send-keys", "-t", x.name, k)
	}
}
