// Package sandbox runs Bash commands inside an operating-system sandbox
// (SPEC G6): on Linux, under bubblewrap (bwrap), the command sees the
// whole file system read-only except the project, the added directories
// and a private temporary folder; the folders that hold credentials
// (~/.ssh, ~/.aws, ~/.gnupg and the like) are empty; and it has no
// network unless the settings allow hosts. This holds in every
// permission mode, bypassPermissions included: it does not depend on
// what the permission rules say.
//
// The settings are Claude Code's (key "sandbox"): enabled,
// autoAllowBashIfSandboxed, excludedCommands, network.allowedDomains.
// With allowedDomains not empty the command gets the host's whole
// network: cairn does not filter by host yet.
//
// Where bwrap is missing or cannot make namespaces, [New] says why in
// [Sandbox.Unavailable] and commands run as they would without it.
package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/internal/shellsafe"
)

// Config is the "sandbox" settings key.
type Config struct {
	Enabled bool `json:"enabled"`
	// AutoAllowBashIfSandboxed lets Bash commands that run in the sandbox
	// run without asking (deny and ask rules still apply). Claude Code's
	// default is true.
	AutoAllowBashIfSandboxed *bool `json:"autoAllowBashIfSandboxed,omitempty"`
	// ExcludedCommands run outside the sandbox, under the permission
	// rules alone: "docker" or "docker:*" covers every docker command.
	ExcludedCommands []string `json:"excludedCommands,omitempty"`
	Network          struct {
		AllowedDomains []string `json:"allowedDomains,omitempty"`
	} `json:"network"`
}

// AutoAllow reports whether sandboxed commands run without asking.
func (c Config) AutoAllow() bool {
	return c.AutoAllowBashIfSandboxed == nil || *c.AutoAllowBashIfSandboxed
}

// Parse reads the "sandbox" setting; raw may be nil (not set).
func Parse(raw json.RawMessage, file string) (Config, error) {
	var c Config
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return c, nil
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return Config{}, fmt.Errorf("setting \"sandbox\" in %s: %v; it must look like {\"enabled\": true, \"excludedCommands\": [\"docker\"], \"network\": {\"allowedDomains\": [\"github.com\"]}}", file, err)
	}
	return c, nil
}

// Options say where the sandbox is.
type Options struct {
	// Writable are the folders commands may write: the project and the
	// added directories.
	Writable []string
	// Home is the user's home folder, whose secret folders are hidden.
	Home string
	// Bwrap is the bwrap program; "" looks for it on PATH.
	Bwrap string
}

// Sandbox runs commands sandboxed. Its methods are safe for concurrent
// use. A nil *Sandbox runs nothing sandboxed.
type Sandbox struct {
	cfg  Config
	opts Options
	// Unavailable says why the sandbox cannot run here ("" when it can).
	Unavailable string

	once    sync.Once
	tmp     string // the private temporary folder, made on first use
	tmpErr  error
	caches  []string
	network bool
}

// Hidden are the folders and files below the home folder that sandboxed
// commands cannot read.
var Hidden = []string{
	".ssh", ".aws", ".gnupg", ".config/gcloud", ".azure", ".kube", ".docker",
	".password-store", ".local/share/keyrings", "Library/Keychains", ".config/gh",
	".netrc", ".git-credentials", ".npmrc", ".pypirc", ".cargo/credentials.toml",
	".config/op", ".vault-token",
}

// New returns the sandbox of cfg, or nil when it is not enabled. When bwrap
// is missing or cannot make namespaces here, the sandbox's Unavailable
// says so and Active is false.
func New(cfg Config, opts Options) *Sandbox {
	if !cfg.Enabled {
		return nil
	}
	s := &Sandbox{cfg: cfg, opts: opts, network: len(cfg.Network.AllowedDomains) > 0}
	if s.opts.Bwrap == "" {
		p, err := exec.LookPath("bwrap")
		if err != nil {
			s.Unavailable = "the sandbox is enabled in the settings but bubblewrap (bwrap) is not installed (apt-get install bubblewrap); Bash commands run without it"
			return s
		}
		s.opts.Bwrap = p
	}
	if why := probe(s.opts.Bwrap); why != "" {
		s.Unavailable = "the sandbox is enabled in the settings but bwrap cannot run here (" + why + "; user namespaces may be off: sysctl kernel.unprivileged_userns_clone=1); Bash commands run without it"
	}
	return s
}

// probeCache remembers, per bwrap, whether it can make a sandbox.
var probeCache sync.Map

// probe runs bwrap once to see whether it can make the namespaces.
func probe(bwrap string) string {
	if v, ok := probeCache.Load(bwrap); ok {
		return v.(string)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
		"--unshare-user", "--unshare-pid", "--unshare-net", "--die-with-parent", "--", "true").CombinedOutput()
	why := ""
	if err != nil {
		why = strings.TrimSpace(string(out))
		if why == "" {
			why = err.Error()
		}
	}
	probeCache.Store(bwrap, why)
	return why
}

// Active reports whether commands run sandboxed.
func (s *Sandbox) Active() bool { return s != nil && s.Unavailable == "" }

// AutoAllow reports whether sandboxed commands run without asking.
func (s *Sandbox) AutoAllow() bool { return s.Active() && s.cfg.AutoAllow() }

// Network reports whether sandboxed commands have the network (because
// the settings allow hosts).
func (s *Sandbox) Network() bool { return s != nil && s.network }

// Excluded reports whether a command line runs outside the sandbox: one
// of its commands is one of the settings' excludedCommands.
func (s *Sandbox) Excluded(line string) bool {
	if s == nil || len(s.cfg.ExcludedCommands) == 0 {
		return false
	}
	for _, c := range shellsafe.Parse(line).All() {
		argv := c.Argv()
		for _, e := range s.cfg.ExcludedCommands {
			e = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(e), ":*"), " *")
			words, ok := shellsafe.Words(e)
			if !ok || len(words) == 0 || len(argv) < len(words) {
				continue
			}
			head := slices.Clone(argv[:len(words)])
			head[0] = filepath.Base(head[0])
			if slices.Equal(head, words) {
				return true
			}
		}
	}
	return false
}

// Describe says in one sentence what the sandbox allows, for the model
// and for people.
func (s *Sandbox) Describe() string {
	net := "no network"
	if s.network {
		net = "the network (the settings allow hosts: " + strings.Join(s.cfg.Network.AllowedDomains, ", ") + "; cairn does not filter by host)"
	}
	return fmt.Sprintf("cairn's sandbox: the file system is read-only except %s and a private /tmp, credential folders (~/.ssh, ~/.aws, ~/.gnupg …) are hidden, and it has %s",
		strings.Join(s.opts.Writable, ", "), net)
}

// Command returns the command that runs argv (a program and its
// arguments) in dir inside the sandbox, with env.
func (s *Sandbox) Command(dir string, env []string, argv ...string) (*exec.Cmd, error) {
	args, err := s.Args(dir)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(s.opts.Bwrap, append(append(args, "--"), argv...)...)
	cmd.Dir = dir
	cmd.Env = s.env(env)
	return cmd, nil
}

// Args are bwrap's arguments for a command run in dir, up to the "--".
func (s *Sandbox) Args(dir string) ([]string, error) {
	s.once.Do(s.setup)
	if s.tmpErr != nil {
		return nil, s.tmpErr
	}
	args := []string{
		"--ro-bind", "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
		"--bind", s.tmp, "/tmp",
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--die-with-parent",
	}
	if !s.network {
		args = append(args, "--unshare-net")
	}
	for _, c := range s.caches {
		args = append(args, "--bind", c, c)
	}
	for _, w := range s.opts.Writable {
		if fi, err := os.Stat(w); err == nil && fi.IsDir() {
			args = append(args, "--bind", w, w)
		}
	}
	// Hidden last, so that a project holding the home folder still has
	// them hidden.
	if s.opts.Home != "" {
		for _, h := range Hidden {
			p := filepath.Join(s.opts.Home, h)
			fi, err := os.Stat(p)
			switch {
			case err != nil:
			case fi.IsDir():
				args = append(args, "--tmpfs", p)
			default:
				args = append(args, "--ro-bind", "/dev/null", p)
			}
		}
	}
	return append(args, "--chdir", dir), nil
}

// setup makes the private temporary folder and finds the build caches
// commands must be able to write (Go's, so that go test works).
func (s *Sandbox) setup() {
	s.tmp, s.tmpErr = os.MkdirTemp("", "cairn-sandbox-tmp-")
	if s.tmpErr != nil {
		s.tmpErr = fmt.Errorf("cannot make the sandbox's private temporary folder: %w", s.tmpErr)
		return
	}
	if c := goCache(s.opts.Home); c != "" {
		if err := os.MkdirAll(c, 0o755); err == nil {
			s.caches = append(s.caches, c)
		}
	}
}

// goCache is Go's build cache folder: $GOCACHE, else the user cache
// folder's go-build.
func goCache(home string) string {
	if c := os.Getenv("GOCACHE"); c != "" && c != "off" && filepath.IsAbs(c) {
		return c
	}
	if x := os.Getenv("XDG_CACHE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "go-build")
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".cache", "go-build")
}

// env is the command's environment inside: TMPDIR is the private /tmp.
func (s *Sandbox) env(env []string) []string {
	out := make([]string, 0, len(env)+1)
	for _, e := range env {
		if !strings.HasPrefix(e, "TMPDIR=") {
			out = append(out, e)
		}
	}
	return append(out, "TMPDIR=/tmp")
}

// Close removes the private temporary folder.
func (s *Sandbox) Close() error {
	if s == nil || s.tmp == "" {
		return nil
	}
	return os.RemoveAll(s.tmp)
}

// Blocked reports whether a failed command's output looks like the
// sandbox stopped it: a read-only file system, a denied path, no
// network, a hidden credential folder.
func (s *Sandbox) Blocked(output string) bool {
	if s == nil {
		return false
	}
	if s.opts.Home != "" {
		for _, h := range Hidden {
			if strings.Contains(output, filepath.Join(s.opts.Home, h)) || strings.Contains(output, "~/"+h) {
				return true
			}
		}
	}
	return blocked(output)
}

func blocked(output string) bool {
	for _, m := range []string{
		"Read-only file system", "Permission denied", "Operation not permitted",
		"Network is unreachable", "Could not resolve host", "Temporary failure in name resolution",
		"Name or service not known", "network is unreachable", "no such host", "Couldn't connect to server",
		"Connection refused",
	} {
		if strings.Contains(output, m) {
			return true
		}
	}
	return false
}
