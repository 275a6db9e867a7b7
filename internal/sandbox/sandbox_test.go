package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	c, err := Parse([]byte(`{"enabled": true, "autoAllowBashIfSandboxed": false, "excludedCommands": ["docker"], "network": {"allowedDomains": ["github.com"]}}`), "s.json")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Enabled || c.AutoAllow() || !cmp.Equal(c.ExcludedCommands, []string{"docker"}) || !cmp.Equal(c.Network.AllowedDomains, []string{"github.com"}) {
		t.Errorf("got %+v", c)
	}
	if c, _ := Parse(nil, ""); c.Enabled || !c.AutoAllow() {
		t.Errorf("unset: %+v; want disabled, auto-allow by default", c)
	}
	if _, err := Parse([]byte(`{"enabled": "yes"}`), "s.json"); err == nil || !strings.Contains(err.Error(), "s.json") {
		t.Errorf("a wrong kind: %v; want an error naming the file", err)
	}
	if New(Config{}, Options{}) != nil {
		t.Error("a disabled sandbox is not nil")
	}
}

func TestExcluded(t *testing.T) {
	s := &Sandbox{cfg: Config{ExcludedCommands: []string{"docker", "npm run:*", "git push *"}}}
	for line, want := range map[string]bool{
		"docker ps":              true,
		"/usr/bin/docker ps":     true,
		"make && docker build .": true,
		"npm run build":          true,
		"npm test":               false,
		"git push origin main":   true,
		"git status":             false,
		"dockerd":                false,
		"echo docker":            false,
		"timeout 5 docker ps":    true,
	} {
		if got := s.Excluded(line); got != want {
			t.Errorf("Excluded(%q) = %v, want %v", line, got, want)
		}
	}
}

// TestArgs: the project is writable, the secrets below the home folder are
// hidden after it (so a project holding the home folder hides them too),
// and the network is cut unless hosts are allowed.
func TestArgs(t *testing.T) {
	home := t.TempDir()
	proj := filepath.Join(home, "proj")
	for _, d := range []string{proj, filepath.Join(home, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".netrc"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOCACHE", filepath.Join(home, "gocache"))
	s := &Sandbox{cfg: Config{Enabled: true}, opts: Options{Writable: []string{home}, Home: home, Bwrap: "bwrap"}}
	t.Cleanup(func() { s.Close() })
	args, err := s.Args(proj)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(args, " ")
	for _, want := range []string{
		"--ro-bind / /", "--bind " + s.tmp + " /tmp", "--unshare-net", "--bind " + home + " " + home,
		"--tmpfs " + filepath.Join(home, ".ssh"), "--ro-bind /dev/null " + filepath.Join(home, ".netrc"),
		"--bind " + filepath.Join(home, "gocache"), "--chdir " + proj,
	} {
		if !strings.Contains(line, want) {
			t.Errorf("bwrap arguments lack %q:\n%s", want, line)
		}
	}
	if strings.Index(line, "--tmpfs "+filepath.Join(home, ".ssh")) < strings.Index(line, "--bind "+home+" "+home) {
		t.Error("the secrets are hidden before the home folder is bound, which shows them again")
	}
	if slices.Contains(args, filepath.Join(home, ".aws")) {
		t.Error("a missing secret folder is mounted over")
	}
}

// TestArgsWithHosts: allowed hosts do not give the sandbox the host's
// network: it stays cut, and the proxy's folder and the bridge are
// mounted read-only; the command runs under the bridge.
func TestArgsWithHosts(t *testing.T) {
	var cfg Config
	cfg.Enabled = true
	cfg.Network.AllowedDomains = []string{"example.com"}
	proj := t.TempDir()
	s := &Sandbox{cfg: cfg, network: true, opts: Options{Writable: []string{proj}, Bwrap: "bwrap", Self: "/usr/bin/true"}}
	t.Cleanup(func() { s.Close() })
	cmd, err := s.Command(proj, nil, "bash", "-c", "true")
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(cmd.Args, " ")
	for _, want := range []string{
		"--unshare-net", "--ro-bind " + s.netDir + " " + netDirIn, "--ro-bind /usr/bin/true " + bridgeIn,
		"-- " + bridgeIn + " " + BridgeCommand + " " + sockIn + " -- bash -c true",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("bwrap's command lacks %q:\n%s", want, line)
		}
	}
	if fi, err := os.Stat(filepath.Join(s.netDir, "proxy.sock")); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("the proxy's socket: %v, %v", fi, err)
	}
	dir := s.netDir
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Close left the network folder: %v", err)
	}
	if _, err := s.Args(proj); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Args after Close: %v; want an error saying the sandbox is closed", err)
	}
}

// TestCloseRacesArgs: Close while commands are being set up (run with
// -race) neither races nor leaves the private folder behind.
func TestCloseRacesArgs(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	proj := t.TempDir()
	s := &Sandbox{cfg: Config{Enabled: true}, opts: Options{Writable: []string{proj}, Bwrap: "bwrap"}}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range 20 {
				if _, err := s.Args(proj); err != nil && !strings.Contains(err.Error(), "closed") {
					t.Error(err)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-start
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()
	close(start)
	wg.Wait()
	if ents, _ := os.ReadDir(os.Getenv("TMPDIR")); len(ents) != 0 {
		t.Errorf("Close left %v behind", ents)
	}
}

// TestEnvFilesAbove: .env files in the folders above the project, beside
// it and in the home folder are hidden; those inside a writable folder,
// folders named .env and examples are not.
func TestEnvFilesAbove(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	proj := filepath.Join(home, "work", "proj")
	added := filepath.Join(root, "added")
	for _, d := range []string{proj, added, filepath.Join(home, "work", ".env.d"), filepath.Join(root, ".env"), filepath.Join(home, "work", "other")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{
		filepath.Join(home, ".env"), filepath.Join(home, "work", ".env.local"), filepath.Join(home, "work", ".env.example"),
		filepath.Join(proj, ".env"), filepath.Join(added, ".env"), filepath.Join(home, "work", "notes.env"),
		filepath.Join(home, "work", "other", ".env"),
	} {
		if err := os.WriteFile(f, []byte("SECRET=1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := &Sandbox{cfg: Config{Enabled: true}, opts: Options{Writable: []string{proj, added}, Home: home, Bwrap: "bwrap"}}
	t.Cleanup(func() { s.Close() })
	args, err := s.Args(proj)
	if err != nil {
		t.Fatal(err)
	}
	var hidden []string
	for i := range args {
		if args[i] == "/dev/null" && i+1 < len(args) {
			hidden = append(hidden, args[i+1])
		}
	}
	want := []string{filepath.Join(home, ".env"), filepath.Join(home, "work", ".env.local"), filepath.Join(home, "work", "other", ".env")}
	if d := cmp.Diff(want, hidden); d != "" {
		t.Errorf("hidden files (-want +got):\n%s", d)
	}
}

// TestUnavailable: without bwrap the sandbox says why, once, and is not
// active.
func TestUnavailable(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	s := New(Config{Enabled: true}, Options{})
	if s.Active() || !strings.Contains(s.Unavailable, "bubblewrap (bwrap) is not installed") {
		t.Errorf("no bwrap: active %v, %q", s.Active(), s.Unavailable)
	}
	fake := filepath.Join(t.TempDir(), "bwrap")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s = New(Config{Enabled: true}, Options{Bwrap: fake})
	if s.Active() || !strings.Contains(s.Unavailable, "No permissions to creating new namespace") {
		t.Errorf("bwrap without namespaces: active %v, %q", s.Active(), s.Unavailable)
	}
}

// TestAddWritable: a folder added after the sandbox's first command is
// bound writable for the commands after it, once, and named in Describe.
func TestAddWritable(t *testing.T) {
	proj, added := t.TempDir(), t.TempDir()
	s := &Sandbox{cfg: Config{Enabled: true}, opts: Options{Writable: []string{proj}, Bwrap: "bwrap"}}
	t.Cleanup(func() { s.Close() })
	bound := func() bool {
		t.Helper()
		args, err := s.Args(proj)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(strings.Join(args, " "), "--bind "+added+" "+added)
	}
	if bound() {
		t.Fatal("a folder not yet added is writable")
	}
	s.AddWritable(added + "/")
	s.AddWritable(added)
	if !bound() {
		t.Error("the added folder is not bound for the next command")
	}
	if n := strings.Count(s.Describe(), added); n != 1 {
		t.Errorf("Describe names the added folder %d times: %s", n, s.Describe())
	}
}
