package cli_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
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
	proctest.Command(t, "bwrap", "the sandbox cannot be tested here (apt-get install bubblewrap)")
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
		skipOrFail(t, "the sandbox cannot run here: "+errOut)
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
	proctest.Command(t, "bwrap", "the sandbox cannot be tested here (apt-get install bubblewrap)")
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
		skipOrFail(t, "the sandbox cannot run here: "+errOut)
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

// TestAddDirWidensTheSandbox: in the terminal UI, /add-dir makes the
// folder writable for the sandboxed Bash commands that follow, though
// the sandbox was already in use: the command before /add-dir cannot
// write there, the one after it can.
func TestAddDirWidensTheSandbox(t *testing.T) {
	proctest.Command(t, "bwrap", "this test runs Bash in cairn's sandbox (apt-get install bubblewrap)")
	p := newProject(t)
	other := t.TempDir()
	put(t, filepath.Join(p.dir, ".cairn", "settings.json"), `{"sandbox": {"enabled": true}}`)
	write := func(id, name string) modeltest.Reply {
		cmd := "echo " + name + " > " + filepath.Join(other, name+".txt")
		return modeltest.Reply{Content: []model.Block{modeltest.ToolUse(id, "Bash", fmt.Sprintf(`{"command":%q}`, cmd))}}
	}
	p.srv.Enqueue(write("toolu_1", "before"), modeltest.Text("First done."), write("toolu_2", "after"), modeltest.Text("Second done."))
	x := p.openUI(t, "--permission-mode", "bypassPermissions")
	x.send("write before")
	s := x.waitFor("First done.")
	if strings.Contains(s, "the sandbox is enabled in the settings but") {
		skipOrFail(t, "the sandbox cannot run here:\n"+s)
	}
	if _, err := os.Stat(filepath.Join(other, "before.txt")); err == nil {
		t.Fatal("the sandboxed command wrote a folder not yet added: the sandbox is not in force")
	}
	x.send("/add-dir " + other)
	x.waitFor("to the folders this session may work in")
	x.send("write after")
	x.waitFor("Second done.")
	if b, err := os.ReadFile(filepath.Join(other, "after.txt")); err != nil || string(b) != "after\n" {
		t.Errorf("after /add-dir the sandboxed command could not write the folder: %q, %v\nits result: %s", b, err, p.srv.Last().Body)
	}
}
