package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/permission"
	"github.com/cairn-dev/cairn/internal/proctest"
	"github.com/cairn-dev/cairn/internal/sandbox"
	"github.com/cairn-dev/cairn/internal/settings"
	"github.com/cairn-dev/cairn/tool"
)

// sandboxRig is a project, a home folder with secrets, and the sandbox
// over them, with real bwrap. The home folder is not under /tmp (which
// the sandbox replaces with a private one), so that what hides the
// secrets is the sandbox's own doing.
type sandboxRig struct {
	env  *tool.Env
	home string
	sb   *sandbox.Sandbox
}

// TestMain lets the test binary, run inside the sandbox, be the network
// bridge, as cairn's own binary is.
func TestMain(m *testing.M) {
	sandbox.MaybeBridge()
	os.Exit(m.Run())
}

func newSandboxRig(t *testing.T, cfg sandbox.Config) *sandboxRig {
	t.Helper()
	return newSandboxRigDial(t, cfg, nil)
}

func newSandboxRigDial(t *testing.T, cfg sandbox.Config, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *sandboxRig {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap (bwrap) is not installed, so the sandbox cannot be tested here: apt-get install bubblewrap")
	}
	base := "/var/tmp"
	if fi, err := os.Stat(base); err != nil || !fi.IsDir() {
		base = ""
	}
	home, err := os.MkdirTemp(base, "cairn-rig-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	home, _ = filepath.EvalSymlinks(home)
	for name, content := range map[string]string{".ssh/id_rsa": "SECRET-KEY\n", ".bashrc": "# mine\n", ".aws/credentials": "SECRET-AWS\n"} {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Go's build cache stays where it is (the sandbox makes it writable);
	// HOME moves to the rig's.
	if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
		t.Setenv("GOCACHE", strings.TrimSpace(string(out)))
	}
	t.Setenv("HOME", home)
	env := newEnv(t)
	cfg.Enabled = true
	sb := sandbox.New(cfg, sandbox.Options{Writable: []string{env.ProjectDir}, Home: home, Dial: dial})
	if !sb.Active() {
		t.Skip("the sandbox cannot run here: " + sb.Unavailable)
	}
	t.Cleanup(func() { sb.Close() })
	return &sandboxRig{env: env, home: home, sb: sb}
}

// decide is what the permission check says for a Bash command in mode.
func (r *sandboxRig) decide(t *testing.T, mode permission.Mode, headless bool, input map[string]any) permission.Decision {
	t.Helper()
	chk, err := permission.FromSettings(&settings.Permissions{}, permission.Options{
		ProjectDir: r.env.ProjectDir, UserHome: r.home, Mode: mode, Headless: headless, Sandbox: r.sb,
	})
	if err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(input)
	return chk.Check(context.Background(), Bash{Sandbox: r.sb}, in)
}

// listener is a loopback TCP listener on the host; connected reports
// whether anything connected to it by now.
func listener(t *testing.T) (port int, connected func() bool) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().(*net.TCPAddr).Port, func() bool {
		// A connection made by a command that has returned is already
		// queued: accepting it needs no waiting.
		_ = l.(*net.TCPListener).SetDeadline(time.Now().Add(50 * time.Millisecond))
		c, err := l.Accept()
		if err == nil {
			c.Close()
		}
		return err == nil
	}
}

// TestSandboxHoldsInBypassMode: bypassPermissions allows everything, and
// still the operating system refuses writing ~/.bashrc, reading
// ~/.ssh/id_rsa and connecting to a host; writing the project works.
func TestSandboxHoldsInBypassMode(t *testing.T) {
	r := newSandboxRig(t, sandbox.Config{})
	port, connected := listener(t)
	bash := Bash{Sandbox: r.sb}
	for _, tc := range []struct {
		name, command string
		fails         bool
		leaks         string // output that must not appear
	}{
		{"write ~/.bashrc", "echo pwned >> ~/.bashrc", true, ""},
		{"read ~/.ssh/id_rsa", "cat ~/.ssh/id_rsa", true, "SECRET-KEY"},
		{"read ~/.aws/credentials", "cat " + filepath.Join(r.home, ".aws", "credentials"), true, "SECRET-AWS"},
		{"list ~/.ssh", "ls -A ~/.ssh | grep -c . || true", false, "id_rsa"},
		{"write /etc", "touch /etc/cairn-sandbox-test", true, ""},
		{"connect to a loopback host", "exec 3<>/dev/tcp/127.0.0.1/" + strconv.Itoa(port), true, ""},
		{"write the project", "echo ok > inside.txt && cat inside.txt", false, ""},
		{"write the private /tmp", "echo t > /tmp/cairn-sandbox-probe && cat /tmp/cairn-sandbox-probe", false, ""},
	} {
		in := map[string]any{"command": tc.command}
		if d := r.decide(t, permission.ModeBypass, false, in); d.Behavior != permission.Allow {
			t.Fatalf("%s: bypassPermissions gives %s (%s)", tc.name, d.Behavior, d.Reason)
		}
		res := call(t, bash, r.env, in)
		out := text(t, res)
		if res.IsError != tc.fails {
			t.Errorf("%s: error %v, want %v:\n%s", tc.name, res.IsError, tc.fails, out)
		}
		if tc.leaks != "" && strings.Contains(out, tc.leaks) {
			t.Errorf("%s: the output shows %q:\n%s", tc.name, tc.leaks, out)
		}
		if tc.fails && !strings.Contains(out, "sandbox") {
			t.Errorf("%s: the failure does not say the sandbox may be why:\n%s", tc.name, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(r.home, ".bashrc")); string(b) != "# mine\n" {
		t.Errorf("~/.bashrc is now %q", b)
	}
	if connected() {
		t.Error("the loopback listener on the host was reached from inside the sandbox")
	}
	if b, err := os.ReadFile(filepath.Join(r.env.ProjectDir, "inside.txt")); err != nil || string(b) != "ok\n" {
		t.Errorf("the project write did not reach the project: %q, %v", b, err)
	}
	if _, err := os.Stat("/tmp/cairn-sandbox-probe"); err == nil {
		t.Error("/tmp inside the sandbox is the host's /tmp, not a private one")
	}
	if _, err := os.Stat("/etc/cairn-sandbox-test"); err == nil {
		os.Remove("/etc/cairn-sandbox-test")
		t.Error("the sandbox wrote /etc")
	}
}

// fakeHosts is an HTTP and an HTTPS server on the host's loopback that
// count the requests reaching them, and a dialler for the sandbox's proxy
// that sends the names ending in ".test" to them (secure.test to the
// HTTPS one) and resolves other names as usual.
type fakeHosts struct {
	plain, tls *httptest.Server
	hits       atomic.Int32
}

func newFakeHosts(t *testing.T) *fakeHosts {
	t.Helper()
	f := &fakeHosts{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		fmt.Fprintf(w, "hello %s", r.Host)
	})
	f.plain, f.tls = httptest.NewServer(h), httptest.NewTLSServer(h)
	t.Cleanup(f.plain.Close)
	t.Cleanup(f.tls.Close)
	return f
}

func (f *fakeHosts) port() string { return strconv.Itoa(f.plain.Listener.Addr().(*net.TCPAddr).Port) }

func (f *fakeHosts) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	host, _, _ := net.SplitHostPort(addr)
	switch {
	case host == "secure.test":
		addr = f.tls.Listener.Addr().String()
	case strings.HasSuffix(host, ".test"):
		addr = f.plain.Listener.Addr().String()
	}
	return d.DialContext(ctx, network, addr)
}

// TestSandboxNetworkFiltered: with allowedDomains the sandbox still has
// no network of its own; curl reaches the allowed names through cairn's
// proxy (plain HTTP and HTTPS through CONNECT), and is refused, with a
// 403 naming the host and the setting, for every other name, for the
// address of an allowed name, and for a wildcard's own domain; a
// connection that skips the proxy fails at the operating-system level.
func TestSandboxNetworkFiltered(t *testing.T) {
	proctest.Command(t, "curl", "apt-get install curl")
	f := newFakeHosts(t)
	var cfg sandbox.Config
	cfg.Network.AllowedDomains = []string{"allowed.test", "*.wild.test", "secure.test", "localhost"}
	r := newSandboxRigDial(t, cfg, f.dial)
	bash := Bash{Sandbox: r.sb}
	port := f.port()
	for _, tc := range []struct {
		name, command string
		fails         bool
		want          string // in the output
		reaches       bool   // the fake host sees the request
	}{
		{"allowed name", "curl -sS --max-time 20 http://allowed.test:" + port + "/", false, "hello allowed.test:" + port, true},
		{"wildcard name", "curl -sS --max-time 20 http://api.wild.test:" + port + "/", false, "hello api.wild.test:" + port, true},
		{"allowed name over HTTPS", "curl -sSk --max-time 20 https://secure.test:443/", false, "hello secure.test", true},
		{"localhost, resolved by the proxy", "curl -sS --max-time 20 --noproxy '' http://localhost:" + port + "/", false, "hello localhost:" + port, true},
		{"other name", "curl -sS -f --max-time 20 http://evil.test:" + port + "/", true, "403", false},
		{"other name, the refusal's text", "curl -sS --max-time 20 http://evil.test:" + port + "/", false, "refused the connection to evil.test: the host is not in the setting sandbox.network.allowedDomains", false},
		{"other name over HTTPS", "curl -sSk --max-time 20 https://evil.test:443/", true, "CONNECT tunnel failed, response 403", false},
		{"the wildcard's own domain", "curl -sS -f --max-time 20 http://wild.test:" + port + "/", true, "403", false},
		{"the address of an allowed name", "curl -sS -f --max-time 20 --noproxy '' http://127.0.0.1:" + port + "/", true, "403", false},
		{"no proxy: curl", "curl -sS --max-time 20 --noproxy '*' http://127.0.0.1:" + port + "/", true, "Couldn't connect to server", false},
		{"no proxy: bash's /dev/tcp", "exec 3<>/dev/tcp/127.0.0.1/" + port, true, "Connection refused", false},
		{"no proxy: a name", "curl -sS --max-time 20 --noproxy '*' http://allowed.test:" + port + "/", true, "resolve host", false},
	} {
		before := f.hits.Load()
		res := call(t, bash, r.env, map[string]any{"command": tc.command})
		out := text(t, res)
		if res.IsError != tc.fails || !strings.Contains(out, tc.want) {
			t.Errorf("%s: error %v (want %v), output lacks %q:\n%s", tc.name, res.IsError, tc.fails, tc.want, out)
		}
		if reached := f.hits.Load() > before; reached != tc.reaches {
			t.Errorf("%s: the fake host reached: %v, want %v", tc.name, reached, tc.reaches)
		}
		if tc.fails && !strings.Contains(out, "sandbox") {
			t.Errorf("%s: the failure does not say the sandbox may be why:\n%s", tc.name, out)
		}
		if refused := strings.Contains(out, "The sandbox's network proxy refused"); refused != (tc.want == "403" || strings.Contains(tc.want, "403") || strings.Contains(tc.want, "refused the connection")) {
			t.Errorf("%s: the note naming the refused host: %v:\n%s", tc.name, refused, out)
		}
	}
	if d := r.sb.DeniedSince(0); !slices.Contains(d, "evil.test") || !slices.Contains(d, "127.0.0.1") || !slices.Contains(d, "wild.test") {
		t.Errorf("the proxy's refusals: %v", d)
	}
}

// TestSandboxBridgeKeepsTheCommand: under the network bridge the
// command's exit status, its working directory and its timeout are as
// without it.
func TestSandboxBridgeKeepsTheCommand(t *testing.T) {
	var cfg sandbox.Config
	cfg.Network.AllowedDomains = []string{"example.com"}
	r := newSandboxRig(t, cfg)
	bash := Bash{Sandbox: r.sb, KillGrace: time.Second}
	if err := os.Mkdir(filepath.Join(r.env.ProjectDir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := call(t, bash, r.env, map[string]any{"command": "cd sub && echo $HTTPS_PROXY && exit 3"})
	out := text(t, res)
	if want := filepath.Join(r.env.ProjectDir, "sub"); !res.IsError || !strings.Contains(out, "Exit code 3") || r.env.Cwd() != want {
		t.Errorf("exit 3 in sub: cwd %s (want %s):\n%s", r.env.Cwd(), want, out)
	}
	if !strings.Contains(out, "http://127.0.0.1:") {
		t.Errorf("HTTPS_PROXY is not the bridge's port:\n%s", out)
	}
	res = call(t, bash, r.env, map[string]any{"command": "sleep 60 & sleep 60", "timeout": 500})
	if out := text(t, res); !res.IsError || !strings.Contains(out, "timed out") {
		t.Errorf("timeout: %s", out)
	}
}

// TestSandboxGoTest: go test of a small project works in the sandbox.
func TestSandboxGoTest(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH")
	}
	r := newSandboxRig(t, sandbox.Config{})
	for name, content := range map[string]string{
		"go.mod":      "module example.com/tiny\n\ngo 1.21\n",
		"add.go":      "package tiny\n\nfunc Add(a, b int) int { return a + b }\n",
		"add_test.go": "package tiny\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"2+3\")\n\t}\n}\n",
	} {
		if err := os.WriteFile(filepath.Join(r.env.ProjectDir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res := call(t, Bash{Sandbox: r.sb}, r.env, map[string]any{"command": "GOTOOLCHAIN=local GOFLAGS=-mod=mod go test -count=1 ./...", "timeout": 300000})
	if out := text(t, res); res.IsError || !strings.Contains(out, "ok") {
		t.Errorf("go test in the sandbox failed:\n%s", out)
	}
}

// TestSandboxPermissions: sandboxed commands run without asking
// (autoAllowBashIfSandboxed), deny rules still deny, excluded commands
// run outside under the rules, and running outside the sandbox asks the
// person in every mode.
func TestSandboxPermissions(t *testing.T) {
	r := newSandboxRig(t, sandbox.Config{ExcludedCommands: []string{"docker", "touch:*"}})
	for _, tc := range []struct {
		mode     permission.Mode
		headless bool
		input    map[string]any
		want     permission.Behavior
	}{
		{permission.ModeDefault, false, map[string]any{"command": "npm install && cd .. && make"}, permission.Allow},
		{permission.ModeDefault, false, map[string]any{"command": "touch ../x"}, permission.Ask}, // excluded: the rules decide
		{permission.ModeDefault, false, map[string]any{"command": "docker ps"}, permission.Ask},
		{permission.ModeDefault, false, map[string]any{"command": "make", "dangerouslyDisableSandbox": true}, permission.Ask},
		{permission.ModeBypass, false, map[string]any{"command": "make", "dangerouslyDisableSandbox": true}, permission.Ask},
		{permission.ModeBypass, true, map[string]any{"command": "make", "dangerouslyDisableSandbox": true}, permission.Deny},
		{permission.ModePlan, false, map[string]any{"command": "make"}, permission.Deny},
	} {
		if d := r.decide(t, tc.mode, tc.headless, tc.input); d.Behavior != tc.want {
			t.Errorf("%v in %s: got %s, want %s (%s)", tc.input, tc.mode, d.Behavior, tc.want, d.Reason)
		}
	}
	// The excluded command really runs outside: it can write the home.
	res := call(t, Bash{Sandbox: r.sb}, r.env, map[string]any{"command": "touch ~/excluded-ran"})
	if _, err := os.Stat(filepath.Join(r.home, "excluded-ran")); res.IsError || err != nil {
		t.Errorf("the excluded command did not run outside the sandbox: %s", text(t, res))
	}
	// And dangerouslyDisableSandbox, once approved, too.
	res = call(t, Bash{Sandbox: r.sb}, r.env, map[string]any{"command": "echo approved >> ~/.bashrc", "dangerouslyDisableSandbox": true})
	if b, _ := os.ReadFile(filepath.Join(r.home, ".bashrc")); res.IsError || !strings.Contains(string(b), "approved") {
		t.Errorf("dangerouslyDisableSandbox did not run outside: %s", text(t, res))
	}
}

// TestSandboxTimeoutAndCwd: a sandboxed command that runs too long is
// stopped with everything it started, and a cd carries over as without
// the sandbox.
func TestSandboxTimeoutAndCwd(t *testing.T) {
	r := newSandboxRig(t, sandbox.Config{})
	bash := Bash{Sandbox: r.sb, KillGrace: time.Second}
	res := call(t, bash, r.env, map[string]any{"command": "sleep 60 & sleep 60", "timeout": 500})
	if out := text(t, res); !res.IsError || !strings.Contains(out, "timed out") {
		t.Errorf("timeout: %s", out)
	}
	if err := os.Mkdir(filepath.Join(r.env.ProjectDir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	res = call(t, bash, r.env, map[string]any{"command": "cd sub && pwd"})
	if want := filepath.Join(r.env.ProjectDir, "sub"); res.IsError || r.env.Cwd() != want {
		t.Errorf("cd sub: cwd %s, want %s (%s)", r.env.Cwd(), want, text(t, res))
	}
}

// TestSandboxWithoutAutoAllow: without autoAllowBashIfSandboxed the rules
// decide, and /tmp, the sandbox's own, is not outside the project.
func TestSandboxWithoutAutoAllow(t *testing.T) {
	no := false
	strict := newSandboxRig(t, sandbox.Config{AutoAllowBashIfSandboxed: &no})
	if d := strict.decide(t, permission.ModeDefault, false, map[string]any{"command": "make"}); d.Behavior != permission.Ask {
		t.Errorf("make without auto-allow: %s (%s)", d.Behavior, d.Reason)
	}
	chk, _ := permission.FromSettings(&settings.Permissions{Allow: []settings.Sourced{{Value: "Bash(touch:*)"}}}, permission.Options{
		ProjectDir: strict.env.ProjectDir, UserHome: strict.home, Sandbox: strict.sb,
	})
	for cmd, want := range map[string]permission.Behavior{"touch /tmp/x": permission.Allow, "touch ~/.profile": permission.Ask} {
		in, _ := json.Marshal(map[string]any{"command": cmd})
		if d := chk.Check(context.Background(), Bash{Sandbox: strict.sb}, in); d.Behavior != want {
			t.Errorf("%s with Bash(touch:*) in the sandbox: %s, want %s (%s)", cmd, d.Behavior, want, d.Reason)
		}
	}
}

// TestSandboxHidesEnvAbove: a .env file in a folder above the project, one
// in a project beside it and one in the home folder cannot be read in the sandbox (the path
// constraints take them for secrets); the project's own .env can.
func TestSandboxHidesEnvAbove(t *testing.T) {
	r := newSandboxRig(t, sandbox.Config{})
	proj := filepath.Join(r.home, "work", "proj")
	for _, d := range []string{proj, filepath.Join(r.home, "work", "other")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range map[string]string{
		filepath.Join(r.home, "work", ".env"):          "ABOVE=SECRET-ABOVE\n",
		filepath.Join(r.home, ".env.production"):       "HOME=SECRET-HOME\n",
		filepath.Join(proj, ".env"):                    "OWN=project-value\n",
		filepath.Join(r.home, "work", ".env.sample"):   "SAMPLE=shown\n",
		filepath.Join(r.home, "work", "other", ".env"): "BESIDE=SECRET-BESIDE\n",
	} {
		if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sb := sandbox.New(sandbox.Config{Enabled: true}, sandbox.Options{Writable: []string{proj}, Home: r.home})
	t.Cleanup(func() { sb.Close() })
	env := tool.NewEnv(proj)
	res := call(t, Bash{Sandbox: sb}, env, map[string]any{"command": "cat ../.env ~/.env.production ../other/.env; cat .env ../.env.sample"})
	out := text(t, res)
	if strings.Contains(out, "SECRET-") {
		t.Errorf("a .env file outside the project was read in the sandbox:\n%s", out)
	}
	if !strings.Contains(out, "project-value") || !strings.Contains(out, "SAMPLE=shown") {
		t.Errorf("the project's .env or a sample was hidden:\n%s", out)
	}
}
