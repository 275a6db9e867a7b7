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
// The sandbox never has the host's network. With allowedDomains not
// empty, cairn runs a filtering proxy on the host ([Hosts] says which
// names pass) on a Unix socket the sandbox sees, and the command runs
// under the bridge ([Bridge]), cairn's own binary, which carries
// connections from a loopback port inside to that socket and points
// HTTP_PROXY, HTTPS_PROXY and ALL_PROXY at the port. A program that
// ignores the proxy variables reaches nothing.
//
// Where bwrap is missing or cannot make namespaces, [New] says why in
// [Sandbox.Unavailable] and commands run as they would without it.
package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
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
	// Self is the program run as the bridge (with [BridgeCommand]) when
	// hosts are allowed; "" is the running program, which must then call
	// [MaybeBridge] first thing.
	Self string
	// Dial, when set, is how the proxy connects to the allowed hosts
	// (tests resolve names of their own); nil is a net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Sandbox runs commands sandboxed. Its methods are safe for concurrent
// use. A nil *Sandbox runs nothing sandboxed.
type Sandbox struct {
	cfg  Config
	opts Options
	// Unavailable says why the sandbox cannot run here ("" when it can).
	Unavailable string

	network bool

	mu       sync.Mutex // guards what follows
	ready    bool       // setup ran
	closed   bool
	tmp      string // the private temporary folder, made on first use
	setupErr error
	caches   []string
	netDir   string // on the host: the proxy's socket and the bridge's mount point
	proxy    *proxy
	self     string
}

// Where the network folder (the proxy's socket, the bridge program) is
// inside the sandbox.
const (
	netDirIn = "/tmp/.cairn-net"
	sockIn   = netDirIn + "/proxy.sock"
	bridgeIn = netDirIn + "/bridge"
)

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
		net = "network access only to the hosts the settings allow (" + strings.Join(s.cfg.Network.AllowedDomains, ", ") + "), through cairn's proxy (HTTP_PROXY and HTTPS_PROXY are set; programs that ignore them reach nothing)"
	}
	s.mu.Lock()
	writable := strings.Join(s.opts.Writable, ", ")
	s.mu.Unlock()
	return fmt.Sprintf("cairn's sandbox: the file system is read-only except %s and a private /tmp, credential folders (~/.ssh, ~/.aws, ~/.gnupg …) are hidden, and it has %s",
		writable, net)
}

// AddWritable makes dir (absolute) writable for the commands started
// from now on, as the folders of Options.Writable are: /add-dir during a
// session. A command already running keeps the mounts it started with.
func (s *Sandbox) AddWritable(dir string) {
	if s == nil {
		return
	}
	dir = filepath.Clean(dir)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.opts.Writable, dir) {
		s.opts.Writable = append(slices.Clip(s.opts.Writable), dir)
	}
}

// Command returns the command that runs argv (a program and its
// arguments) in dir inside the sandbox, with env.
func (s *Sandbox) Command(dir string, env []string, argv ...string) (*exec.Cmd, error) {
	args, err := s.Args(dir)
	if err != nil {
		return nil, err
	}
	if s.network {
		argv = append([]string{bridgeIn, BridgeCommand, sockIn, "--"}, argv...)
	}
	cmd := exec.Command(s.opts.Bwrap, append(append(args, "--"), argv...)...)
	cmd.Dir = dir
	cmd.Env = s.env(env)
	return cmd, nil
}

// Args are bwrap's arguments for a command run in dir, up to the "--".
func (s *Sandbox) Args(dir string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("the sandbox is closed (cairn is ending)")
	}
	if !s.ready {
		s.ready = true
		s.setup()
	}
	if s.setupErr != nil {
		return nil, s.setupErr
	}
	args := []string{
		"--ro-bind", "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
		"--bind", s.tmp, "/tmp",
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--unshare-net",
		"--die-with-parent",
	}
	for _, c := range s.caches {
		args = append(args, "--bind", c, c)
	}
	for _, w := range s.opts.Writable {
		if fi, err := os.Stat(w); err == nil && fi.IsDir() {
			args = append(args, "--bind", w, w)
		}
	}
	if s.network {
		// After the writable folders (one may be /tmp), and read-only, so
		// that a command cannot take the socket's place for the commands
		// after it.
		args = append(args, "--ro-bind", s.netDir, netDirIn, "--ro-bind", s.self, bridgeIn)
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
	for _, p := range s.envFilesAbove() {
		args = append(args, "--ro-bind", "/dev/null", p)
	}
	return append(args, "--chdir", dir), nil
}

// IsEnvFile reports whether a file's base name is a .env file's (".env",
// ".env.local" …, not ".env.example", ".env.sample" or ".env.template"),
// which may hold secrets.
func IsEnvFile(base string) bool {
	return base == ".env" || strings.HasPrefix(base, ".env.") &&
		!strings.HasSuffix(base, ".example") && !strings.HasSuffix(base, ".sample") && !strings.HasSuffix(base, ".template")
}

// envFilesAbove are the .env files in the folders above the writable
// folders (up to /), in the folders beside them (other projects in the
// same parent folder) and in the home folder, that lie outside every
// writable folder: the path constraints take them for secrets, so the
// sandbox hides them. Folders named .env (often a Python environment) are
// left alone. Called with s.mu held.
func (s *Sandbox) envFilesAbove() []string {
	var dirs []string
	seen := map[string]bool{}
	add := func(d string) {
		if !seen[d] && !s.writable(d) {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	if s.opts.Home != "" {
		add(filepath.Clean(s.opts.Home))
	}
	for _, w := range s.opts.Writable {
		parent := filepath.Dir(filepath.Clean(w))
		for d := parent; ; d = filepath.Dir(d) {
			add(d)
			if d == filepath.Dir(d) {
				break
			}
		}
		if parent == filepath.Dir(parent) {
			continue // beside a folder of / is all of /
		}
		ents, _ := os.ReadDir(parent)
		for i, e := range ents {
			if i == maxBeside {
				break
			}
			if e.IsDir() {
				add(filepath.Join(parent, e.Name()))
			}
		}
	}
	var out []string
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !IsEnvFile(e.Name()) {
				continue
			}
			p := filepath.Join(d, e.Name())
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				out = append(out, p)
			}
		}
	}
	return out
}

// maxBeside is how many folders beside a writable folder are looked in
// for .env files.
const maxBeside = 256

// writable reports whether p is one of the writable folders or below one.
// Called with s.mu held.
func (s *Sandbox) writable(p string) bool {
	for _, w := range s.opts.Writable {
		w = filepath.Clean(w)
		if p == w || strings.HasPrefix(p, w+string(filepath.Separator)) || w == "/" {
			return true
		}
	}
	return false
}

// setup makes the private temporary folder, finds the build caches
// commands must be able to write (Go's, so that go test works) and, when
// hosts are allowed, starts the proxy. Called with s.mu held.
func (s *Sandbox) setup() {
	var err error
	s.tmp, err = os.MkdirTemp("", "cairn-sandbox-tmp-")
	if err != nil {
		s.setupErr = fmt.Errorf("cannot make the sandbox's private temporary folder: %w", err)
		return
	}
	if s.network {
		if err := s.startNetwork(); err != nil {
			s.setupErr = err
			return
		}
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

// startNetwork starts the filtering proxy on a Unix socket in a folder
// of its own and readies the bridge's mount point beside it.
func (s *Sandbox) startNetwork() error {
	s.self = s.opts.Self
	if s.self == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("cannot find cairn's own program to run as the sandbox's network bridge: %w", err)
		}
		s.self = exe
	}
	dir, err := os.MkdirTemp("", "cairn-sandbox-net-")
	if err != nil {
		return fmt.Errorf("cannot make the sandbox's network folder: %w", err)
	}
	s.netDir = dir
	if err := os.WriteFile(filepath.Join(dir, "bridge"), nil, 0o600); err != nil {
		return fmt.Errorf("cannot make the sandbox's network folder: %w", err)
	}
	s.proxy, err = startProxy(filepath.Join(dir, "proxy.sock"), Hosts(s.cfg.Network.AllowedDomains), s.opts.Dial)
	return err
}

// Close stops the proxy and removes the private temporary folder. Later
// commands cannot start.
func (s *Sandbox) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	var errs []error
	if s.proxy != nil {
		errs = append(errs, s.proxy.close())
		s.proxy = nil
	}
	for _, d := range []string{s.tmp, s.netDir} {
		if d != "" {
			errs = append(errs, os.RemoveAll(d))
		}
	}
	s.tmp, s.netDir = "", ""
	return errors.Join(errs...)
}

// Denials is how many connections the sandbox's proxy refused so far;
// with [Sandbox.DeniedSince] it tells which hosts a command was refused.
func (s *Sandbox) Denials() int {
	if p := s.netProxy(); p != nil {
		return p.refusals()
	}
	return 0
}

// DeniedSince are the hosts the proxy refused after the first n
// refusals, each once: the hosts to name to the model, with the setting
// to change. Commands running at the same time share the count.
func (s *Sandbox) DeniedSince(n int) []string {
	if p := s.netProxy(); p != nil {
		return p.deniedSince(n)
	}
	return nil
}

func (s *Sandbox) netProxy() *proxy {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proxy
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
		"Connection refused", "sandbox.network.allowedDomains", "CONNECT tunnel failed, response 403",
		"403 Forbidden",
	} {
		if strings.Contains(output, m) {
			return true
		}
	}
	return false
}
