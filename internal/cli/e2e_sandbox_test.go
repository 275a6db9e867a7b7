package cli_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cairn-dev/cairn/internal/proctest"
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

// TestSandboxedNetworkThroughProxy: with allowedDomains, cairn's own
// binary bridges the sandbox to its filtering proxy: curl reaches an
// allowed name (localhost, resolved by the proxy on the host), is refused
// the same server by its address, and the model is told which host the
// proxy refused and which setting allows it.
func TestSandboxedNetworkThroughProxy(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap (bwrap) is not installed, so the sandbox cannot be tested here: apt-get install bubblewrap")
	}
	proctest.Command(t, "curl", "apt-get install curl")
	var hits atomic.Int32
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "fake-host-says-hi")
	}))
	defer host.Close()
	port := strconv.Itoa(host.Listener.Addr().(*net.TCPAddr).Port)
	p := newProject(t)
	settings := filepath.Join(p.dir, ".cairn", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, []byte(`{"sandbox": {"enabled": true, "network": {"allowedDomains": ["localhost"]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "Bash", `{"command":"curl -sS --noproxy '' http://localhost:`+port+`/"}`)}},
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_2", "Bash", `{"command":"curl -sSf --noproxy '' http://127.0.0.1:`+port+`/"}`)}},
		modeltest.Text("done"),
	)
	code, out, errOut := p.cairn(t, "-p", "go", "--permission-mode", "bypassPermissions")
	if strings.Contains(errOut, "the sandbox is enabled in the settings but") {
		t.Skip("the sandbox cannot run here: " + errOut)
	}
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, out, errOut)
	}
	reqs := p.srv.Requests()
	if len(reqs) < 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	if first := string(reqs[1].Body); !strings.Contains(first, "fake-host-says-hi") {
		t.Errorf("the allowed name was not reached: %s", first)
	}
	second := string(reqs[2].Body)
	if !strings.Contains(second, "The sandbox's network proxy refused 127.0.0.1") || !strings.Contains(second, "sandbox.network.allowedDomains") {
		t.Errorf("the refusal is not explained to the model: %s", second)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("the host was reached %d times, want once", n)
	}
}
