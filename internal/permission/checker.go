package permission

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/cairn-dev/cairn/internal/sandbox"
	"github.com/cairn-dev/cairn/internal/settings"
	"github.com/cairn-dev/cairn/tool"
)

// Options are what a session's permissions are built from besides the
// settings files: the command-line flags and where the session runs.
type Options struct {
	// CairnHome holds the user's settings.json ($CAIRN_HOME).
	CairnHome string
	// UserHome is the user's home folder, for ~ in rules and paths.
	UserHome string
	// ProjectDir is the project; its .claude/ and .cairn/ settings apply.
	ProjectDir string
	// Cwd is the working directory; "" is ProjectDir.
	Cwd string
	// Mode is --permission-mode; "" takes permissions.defaultMode from
	// the settings, else ModeDefault.
	Mode Mode
	// AllowedTools and DisallowedTools are the values of --allowedTools
	// and --disallowedTools; each may hold several rules.
	AllowedTools, DisallowedTools []string
	// AdditionalDirectories are more folders the session may work in, on
	// top of the settings' permissions.additionalDirectories.
	AdditionalDirectories []string
	// Headless is set for `cairn -p`: what would ask is denied.
	Headless bool
	// Sandbox is the sandbox the Bash tool runs commands in (nil: none).
	Sandbox *sandbox.Sandbox
	// SettingsFiles are more settings files above the project's
	// (--settings), in order.
	SettingsFiles []string
	// Builtin are allow rules cairn adds itself (the memory folder, the
	// session's own saved files), each with why: a rule's Source is then
	// "cairn: " and why, so /permissions never credits them to a flag or
	// file the person did not write.
	Builtin []Builtin
}

// Builtin is an allow rule cairn adds itself, and why.
type Builtin struct{ Rule, Why string }

// Checker is the single entry point the agent and `cairn permissions
// check` share, so both decide alike. It is safe for concurrent use; the
// mode and working directory may change during a session.
type Checker struct {
	rules    Rules
	roots    []string // resolveRoots of the project and dirs
	project  string
	home     string
	dirs     []string
	headless bool
	sandbox  *sandbox.Sandbox
	warnings []string

	mu   sync.Mutex
	mode Mode
	cwd  string
	// grants are the rules Grant added, by grant; granted is rules with
	// them added to the allow rules, compiled (when grants is not empty).
	grants  map[int][]Rule
	nextID  int
	granted Rules
}

// New loads the project's settings files (the user's, then .claude/,
// then .cairn/, as settings.Paths lists them) and builds a Checker with
// the flags in opts. Rules that do not parse are skipped with a warning.
func New(opts Options) (*Checker, error) {
	perms, err := settings.LoadPermissions(opts.CairnHome, opts.ProjectDir, opts.SettingsFiles...)
	if err != nil {
		return nil, err
	}
	return FromSettings(perms, opts)
}

// FromSettings builds a Checker from settings already read.
func FromSettings(perms *settings.Permissions, opts Options) (*Checker, error) {
	c := &Checker{project: opts.ProjectDir, home: opts.UserHome, headless: opts.Headless, cwd: opts.Cwd, sandbox: opts.Sandbox}
	if c.cwd == "" {
		c.cwd = c.project
	}
	mode, err := c.pickMode(perms, opts.Mode)
	if err != nil {
		return nil, err
	}
	c.mode = mode
	c.warnings = append(c.warnings, perms.Warnings...)
	c.rules.Allow = c.sourced(perms.Allow, "allow")
	c.rules.Ask = c.sourced(perms.Ask, "ask")
	c.rules.Deny = c.sourced(perms.Deny, "deny")
	for _, b := range opts.Builtin {
		r, err := ParseRule(b.Rule)
		if err != nil {
			c.warnings = append(c.warnings, fmt.Sprintf("cairn's own rule %s (%s): %v; it is left out", b.Rule, b.Why, err))
			continue
		}
		r.Source, r.Root = "cairn: "+b.Why, c.project
		c.rules.Allow = append(c.rules.Allow, r)
	}
	c.rules.Allow = append(c.rules.Allow, c.flag(opts.AllowedTools, "--allowedTools")...)
	c.rules.Deny = append(c.rules.Deny, c.flag(opts.DisallowedTools, "--disallowedTools")...)
	c.rules = c.rules.Compile()
	for _, d := range perms.AdditionalDirectories {
		c.dirs = append(c.dirs, c.dir(d.Value, settingsRoot(d.File)))
	}
	for _, d := range opts.AdditionalDirectories {
		c.dirs = append(c.dirs, c.dir(d, c.cwd))
	}
	// The project's and its folders' own symbolic links are resolved once
	// (they are the session's frame, not what a command changes).
	c.roots = resolveRoots(clean(c.project, ""), c.dirs)
	return c, nil
}

func (c *Checker) pickMode(perms *settings.Permissions, flag Mode) (Mode, error) {
	mode := flag
	if mode == "" && perms.DefaultMode != "" {
		m, err := ParseMode(perms.DefaultMode)
		if err != nil {
			c.warnings = append(c.warnings, fmt.Sprintf("permissions.defaultMode in %s: %v; using default", perms.DefaultModeFile, err))
		}
		mode = m
	}
	if mode == "" {
		mode = ModeDefault
	}
	if mode == ModeBypass && perms.DisableBypass {
		return "", fmt.Errorf("bypassPermissions mode is disabled by permissions.disableBypassPermissionsMode in %s; choose another --permission-mode", perms.DisableBypassFile)
	}
	return mode, nil
}

// sourced parses the rules of one list (allow, ask, deny) of the
// settings files. An allow rule that does not parse is left out, which
// only allows less; an ask or deny rule that does not parse is kept as
// broken, covering every call of its tool, which never allows more.
func (c *Checker) sourced(vs []settings.Sourced, list string) []Rule {
	var out []Rule
	for _, v := range vs {
		r, err := ParseRule(v.Value)
		if err != nil {
			if list == "allow" {
				c.warnings = append(c.warnings, fmt.Sprintf("%s: %v; the rule is ignored until it is fixed", v.Where(), err))
				continue
			}
			r = broken(v.Value, err)
			every := "every call of every tool"
			if r.Tool != "" {
				every = "every " + r.Tool + " call"
			}
			verb := map[string]string{"ask": "asks before", "deny": "denies"}[list]
			c.warnings = append(c.warnings, fmt.Sprintf("%s: %v; until it is fixed, this %s rule %s %s", v.Where(), err, list, verb, every))
		}
		r.Source, r.Root, r.Line = v.File, settingsRoot(v.File), v.Line
		out = append(out, r)
	}
	return out
}

// flag parses the rules of a command-line flag.
func (c *Checker) flag(values []string, name string) []Rule {
	var out []Rule
	for _, v := range values {
		for _, s := range SplitRules(v) {
			r, err := ParseRule(s)
			if err != nil && name == "--allowedTools" {
				c.warnings = append(c.warnings, fmt.Sprintf("%s: %v; the rule is ignored", name, err))
				continue
			}
			if err != nil {
				r = broken(s, err)
				c.warnings = append(c.warnings, fmt.Sprintf("%s: %v; this rule denies every %s call", name, err, cmp.Or(r.Tool, "tool's")))
			}
			r.Source, r.Root = name, c.project
			out = append(out, r)
		}
	}
	return out
}

// dir resolves an additional directory: ~ is the home folder, a relative
// one is relative to base.
func (c *Checker) dir(d, base string) string {
	p := place{home: c.home}
	return p.abs(d, base)
}

// settingsRoot is the folder "/path" rules of a settings file are
// relative to: the folder holding its .claude/ or .cairn/ (the project,
// or the home folder for the user's file).
func settingsRoot(file string) string {
	return filepath.Dir(filepath.Dir(file))
}

// AddDirectory makes dir (relative to the working directory) one more
// folder the session may work in, as --add-dir does, from the next call
// decided on; it returns the folder, absolute. The sandbox, built when
// the session started, does not change.
func (c *Checker) AddDirectory(dir string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.dir(dir, c.cwd)
	dirs := append(slices.Clip(c.dirs), d)
	c.dirs, c.roots = dirs, resolveRoots(clean(c.project, ""), dirs)
	return d
}

// Roots returns the project and the additional directories, absolute.
func (c *Checker) Roots() []string {
	c.mu.Lock()
	roots := c.roots
	c.mu.Unlock()
	var out []string
	for i := 0; i < len(roots); i += 2 {
		out = append(out, roots[i])
	}
	return out
}

// UseSandbox tells the checker that Bash commands run in sb (see
// Request.Sandbox). Call it before the checker is used.
func (c *Checker) UseSandbox(sb *sandbox.Sandbox) { c.sandbox = sb }

// Warnings are the problems found in the settings and flags (rules that
// do not parse, an unknown defaultMode); none stops the checker.
func (c *Checker) Warnings() []string { return append([]string(nil), c.warnings...) }

// Rules returns the rules in force, with the grants (Grant) of the
// moment among the allow rules.
func (c *Checker) Rules() Rules {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.grants) > 0 {
		return c.granted
	}
	return c.rules
}

// Mode returns the current mode.
func (c *Checker) Mode() Mode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mode
}

// SetMode changes the mode (a plan approved, the user switching modes).
func (c *Checker) SetMode(m Mode) {
	c.mu.Lock()
	c.mode = m
	c.mu.Unlock()
}

// SetCwd changes the working directory relative paths are resolved
// against (a cd that carried over between Bash calls).
func (c *Checker) SetCwd(dir string) {
	c.mu.Lock()
	c.cwd = dir
	c.mu.Unlock()
}

// Grant adds the allow rules specs (each may hold several, as
// --allowedTools takes them) until end is called: a custom command's
// allowed-tools, in force for the turn the command starts (as Claude
// Code lets those tools run without asking in that turn). source names
// where they are written, for the decisions they take. Deny and ask
// rules still decide first, as for any allow rule. A rule that does not
// parse is left out (which only allows less) and named in err; end is
// never nil. Grants may overlap; each end takes away only its own
// rules, and calling it again does nothing.
func (c *Checker) Grant(source string, specs []string) (end func(), err error) {
	var rules []Rule
	var bad []string
	for _, v := range specs {
		for _, s := range SplitRules(v) {
			r, err := ParseRule(s)
			if err != nil {
				bad = append(bad, fmt.Sprintf("%q is not a permission rule (%v)", s, err))
				continue
			}
			r.Source, r.Root = source, c.project
			rules = append(rules, r)
		}
	}
	if len(bad) > 0 {
		err = fmt.Errorf("%s: %s; left out, so the turn allows less (fix the rule)", source, strings.Join(bad, "; "))
	}
	if len(rules) == 0 {
		return func() {}, err
	}
	c.mu.Lock()
	if c.grants == nil {
		c.grants = map[int][]Rule{}
	}
	id := c.nextID
	c.nextID++
	c.grants[id] = rules
	c.regrant()
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			delete(c.grants, id)
			c.regrant()
			c.mu.Unlock()
		})
	}, err
}

// regrant rebuilds granted from the rules and the grants; c.mu is held.
func (c *Checker) regrant() {
	if len(c.grants) == 0 {
		c.granted = Rules{}
		return
	}
	ids := make([]int, 0, len(c.grants))
	for id := range c.grants {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	r := c.rules
	r.Allow = slices.Clone(r.Allow)
	for _, id := range ids {
		r.Allow = append(r.Allow, c.grants[id]...)
	}
	c.granted = r.Compile()
}

// Request builds the request Check decides for a call of t with input:
// t's own answers for it (ReadOnly, Destructive, tool.TouchedPaths) under
// the session's rules (with the grants in force), mode and folders.
func (c *Checker) Request(t tool.Tool, input json.RawMessage) Request {
	c.mu.Lock()
	mode, cwd, dirs, roots, rules := c.mode, c.cwd, c.dirs, c.roots, c.rules
	if len(c.grants) > 0 {
		rules = c.granted
	}
	c.mu.Unlock()
	return Request{
		Tool: t.Spec().Name, Input: input, Paths: tool.TouchedPaths(t, input),
		ReadOnly: t.ReadOnly(input), Destructive: t.Destructive(input),
		Mode: mode, Rules: rules,
		ProjectDir: c.project, AdditionalDirectories: dirs,
		Cwd: cwd, Home: c.home, Headless: c.headless, Sandbox: c.sandbox,
		resolvedRoots: roots,
	}
}

// Check decides a call of t with input, as Request describes it.
func (c *Checker) Check(ctx context.Context, t tool.Tool, input json.RawMessage) Decision {
	return Decide(ctx, c.Request(t, input))
}

// Explain decides one call as Check does and, when a path constraint
// decided, says which path fell outside which folders (see Explain).
func (c *Checker) Explain(ctx context.Context, t tool.Tool, input json.RawMessage) (Decision, *PathCheck) {
	return Explain(ctx, c.Request(t, input))
}
