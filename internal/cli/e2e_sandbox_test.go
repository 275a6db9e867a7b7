package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
)

// TestSandboxedBashInBypassMode: with the sandbox enabled in the project's
// settings, a Bash call in bypassPermissions cannot write the home folder,
// but writes the project and a folder added with --add-dir; the model is
// told the sandbox may be why a command failed.
func TestSandboxedBashInBypassMode(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap (bwrap) is not installed, so the sandbox cannot be tested here: apt-get install bubblewrap")
	}
	p := newProject(t)
	extra := t.TempDir()
	bashrc := filepath.Join(p.home, ".bashrc")
	for path, content := range map[string]string{
		filepath.Join(p.dir, ".cairn", "settings.json"): `{"sandbox": {"enabled": true}}`,
		bashrc: "# mine\n",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := "echo ok > inside.txt; echo ok > " + filepath.Join(extra, "added.txt") + "; echo pwned >> " + bashrc + "; touch /etc/cairn-sandbox-e2e"
	p.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "Bash", `{"command":"`+cmd+`"}`)}},
		modeltest.Text("done"),
	)
	code, out, errOut := p.cairn(t, "-p", "go", "--permission-mode", "bypassPermissions", "--add-dir", extra)
	if strings.Contains(errOut, "the sandbox is enabled in the settings but") {
		t.Skip("the sandbox cannot run here: " + errOut)
	}
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(bashrc); string(b) != "# mine\n" {
		t.Errorf("~/.bashrc was written in bypassPermissions: %q", b)
	}
	for _, f := range []string{filepath.Join(p.dir, "inside.txt"), filepath.Join(extra, "added.txt")} {
		if b, err := os.ReadFile(f); err != nil || string(b) != "ok\n" {
			t.Errorf("%s: %q, %v", f, b, err)
		}
	}
	if _, err := os.Stat("/etc/cairn-sandbox-e2e"); err == nil {
		os.Remove("/etc/cairn-sandbox-e2e")
		t.Error("the sandboxed command wrote /etc")
	}
	body := string(p.srv.Last().Body)
	if !strings.Contains(body, "Read-only file system") || !strings.Contains(body, "it may have failed because of that") {
		t.Errorf("the model is not told the sandbox may be why the command failed: %s", body)
	}
}
