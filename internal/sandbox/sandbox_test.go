package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	s.network = true
	if args, _ := s.Args(proj); slices.Contains(args, "--unshare-net") {
		t.Error("allowed hosts still cut the network")
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
