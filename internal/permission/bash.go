package permission

import (
	"encoding/json"
	"fmt"
	"iter"
	"path"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/internal/shellsafe"
)

// bashCheck decides one Bash call. Every simple command of the line —
// in substitutions, bodies and wrappers too — must be allowed on its own,
// and the line's redirections and cd targets must stay where the mode and
// rules allow.
type bashCheck struct {
	req         Request
	p           place
	line        string
	script      *shellsafe.Script
	all         []*shellsafe.Command
	cwds        []string // the directories commands may run in: cwd and every cd target
	byRule      map[*shellsafe.Command]Rule
	used        []string // the allow rules that allowed commands
	wrote       bool     // acceptEdits allowed a write inside the project
	unsandboxed bool     // the call asks to run outside the sandbox
	// dirsOf are the directories each command may run in; cwdUnknown is
	// set when the line may end up somewhere only known at run time.
	dirsOf     map[*shellsafe.Command]dirs
	cwdUnknown bool
	parent     map[*shellsafe.Command]*shellsafe.Command // wrappers of commands they run
}

func decideBash(req Request, p place) (Decision, hint) {
	var in struct {
		Command        string `json:"command"`
		DisableSandbox bool   `json:"dangerouslyDisableSandbox"`
	}
	if json.Unmarshal(req.Input, &in) != nil || strings.TrimSpace(in.Command) == "" {
		d := ask("The Bash call has no command to check; its input must be a JSON object with a \"command\" string.")
		return d, hint{action: "run Bash", rule: "Bash"}
	}
	b := &bashCheck{req: req, p: p, line: in.Command, script: shellsafe.Parse(in.Command), byRule: map[*shellsafe.Command]Rule{}}
	b.unsandboxed = in.DisableSandbox
	if sb := req.Sandbox; sb.Active() && !b.unsandboxed && !sb.Excluded(in.Command) {
		// In the sandbox /tmp is the session's own.
		b.p.roots = append(slices.Clip(b.p.roots), "/tmp")
	}
	b.all = b.script.All()
	b.parent = make(map[*shellsafe.Command]*shellsafe.Command)
	for _, c := range b.all {
		for _, ic := range c.Inner {
			b.parent[ic] = c
		}
	}
	b.trackDirs()
	return b.decide()
}

func (b *bashCheck) decide() (Decision, hint) {
	h := hint{action: "run `" + clip(b.line) + "`", rule: b.lineRule()}
	if d, ok := b.denied(); ok {
		return d, h
	}
	sb := b.req.Sandbox
	if sb.Active() && b.unsandboxed {
		// In every mode: the sandbox holds under bypassPermissions too.
		h.rule, h.fix = "", "No rule allows it: run the command inside the sandbox, or have the person run it."
		return ask("`%s` asks to run outside the sandbox (dangerouslyDisableSandbox): that needs the person's approval, in every permission mode.", clip(b.line)), h
	}
	if b.req.Mode == ModePlan && !b.readOnly() {
		return planDenied(h.action), h
	}
	if d, ok := b.asked(); ok {
		return d, h
	}
	if sb.AutoAllow() && !sb.Excluded(b.line) {
		return Decision{Allow, "The command runs in " + sb.Describe() + "; autoAllowBashIfSandboxed lets sandboxed commands run without asking.", ""}, h
	}
	if b.req.Mode == ModeBypass {
		return Decision{Allow, "bypassPermissions mode allows every command that no deny rule denies.", ""}, h
	}
	// Path constraints come before allow rules (SPEC G7).
	if pc, why := b.pathProblem(); pc != nil {
		if pc.AllowWith != "" {
			h.rule = pc.AllowWith
		}
		h.path = pc
		return ask("%s", why), h
	}
	if r, ok := wholeTool(b.req.Rules.Allow); ok {
		return Decision{Allow, fmt.Sprintf("Allowed by the rule %s%s.", r, from(r)), r.String()}, h
	}
	if c, why := b.firstProblem(); why != "" {
		if c != nil {
			h.rule = "Bash(" + c.Text() + ")"
			if !c.Literal() {
				h.rule = "Bash(" + strings.TrimSpace(c.Source) + ")"
			}
		}
		return ask("%s", why), h
	}
	if b.req.Destructive && len(b.used) == 0 {
		return ask("Running `%s` needs confirmation: the Bash tool reports it as destructive.", clip(b.line)), h
	}
	if len(b.used) == 0 && b.wrote {
		return Decision{Allow, "Every command of the line is read-only, and acceptEdits mode allows its writes inside the project.", ""}, h
	}
	if len(b.used) == 0 {
		return Decision{Allow, "Every command of the line is read-only and stays inside the project.", ""}, h
	}
	return Decision{Allow, fmt.Sprintf("Allowed: every command of the line is read-only or allowed by %s.", strings.Join(b.used, ", ")), b.used[0]}, h
}

// denied applies the deny rules: a Bash rule matching any command of the
// line, a Read or Edit rule matching a file the line reads or writes.
func (b *bashCheck) denied() (Decision, bool) {
	if r, ok := wholeTool(b.req.Rules.Deny); ok {
		return b.deny(r, "every Bash command"), true
	}
	for r := range bashRules(b.req.Rules.Deny) {
		bp := b.req.Rules.pattern(r.Specifier)
		for _, c := range b.all {
			if bp.match(c, false) == yes {
				return b.deny(r, "`"+c.Text()+"`"), true
			}
		}
	}
	for _, f := range b.files() {
		tool := "Read"
		if f.write {
			tool = "Edit"
		}
		for _, r := range b.req.Rules.Deny {
			if r.Tool == tool && r.Specifier != "" && matchForms(b.p, r, f.path, true) {
				return b.deny(r, f.path), true
			}
		}
	}
	return Decision{}, false
}

func (b *bashCheck) deny(r Rule, what string) Decision {
	return Decision{Deny, fmt.Sprintf("Permission to run `%s` is denied: the rule %s%s matches %s.", clip(b.line), r, from(r), what), r.String()}
}

// asked applies the ask rules, and asks when a deny rule might match a
// command whose words are only known at run time.
func (b *bashCheck) asked() (Decision, bool) {
	for r := range bashRules(b.req.Rules.Deny) {
		bp := b.req.Rules.pattern(r.Specifier)
		for _, c := range b.all {
			if bp.match(c, false) == maybe {
				return Decision{Ask, fmt.Sprintf("`%s` may match the deny rule %s%s once its words are known; it needs confirmation.", strings.TrimSpace(c.Source), r, from(r)), r.String()}, true
			}
		}
	}
	if b.req.Mode == ModeBypass {
		return Decision{}, false
	}
	if r, ok := wholeTool(b.req.Rules.Ask); ok {
		return Decision{Ask, fmt.Sprintf("The rule %s%s asks before every Bash command.", r, from(r)), r.String()}, true
	}
	for r := range bashRules(b.req.Rules.Ask) {
		bp := b.req.Rules.pattern(r.Specifier)
		for _, c := range b.all {
			if bp.match(c, false) != no {
				return Decision{Ask, fmt.Sprintf("The rule %s%s asks before running `%s`.", r, from(r), c.Text()), r.String()}, true
			}
		}
	}
	return Decision{}, false
}

// readOnly reports whether the whole line only reads.
func (b *bashCheck) readOnly() bool {
	c := b.script.Classify(shellsafe.Options{Dir: b.p.cwd})
	return c.ReadOnly && !b.req.Destructive
}

// firstProblem returns the first thing that keeps the line from being
// allowed without asking, and the command it is in (nil for the line).
func (b *bashCheck) firstProblem() (*shellsafe.Command, string) {
	if len(b.script.Whole) > 0 {
		return nil, fmt.Sprintf("`%s` needs confirmation: %s.", clip(b.line), b.script.Whole[0])
	}
	if len(b.script.Commands) == 0 && len(b.script.Redirects) == 0 {
		return nil, fmt.Sprintf("`%s` runs no command cairn can check; it needs confirmation.", clip(b.line))
	}
	for _, c := range b.script.Commands {
		if bad, why := b.command(c); why != "" {
			return bad, why
		}
	}
	for _, r := range b.script.Redirects {
		if why := b.redirect(r, false); why != "" {
			return nil, why
		}
	}
	for _, c := range b.all {
		if why := b.cd(c); why != "" {
			return c, why
		}
	}
	return nil, ""
}

// command checks one command and what it runs; it returns the command at
// fault and why.
func (b *bashCheck) command(c *shellsafe.Command) (*shellsafe.Command, string) {
	if r, ok := b.allowRule(c); ok {
		b.byRule[c] = r
		if !contains(b.used, r.String()) {
			b.used = append(b.used, r.String())
		}
		return b.redirects(c, true)
	}
	switch {
	case c.Dynamic:
		return c, fmt.Sprintf("`%s` needs confirmation: %s.", strings.TrimSpace(c.Source), c.Reason)
	case len(c.Inner) > 0:
		return b.wrapper(c)
	}
	if why := b.auto(c); why != "" {
		return c, why
	}
	return b.redirects(c, false)
}

// wrapper checks a command that runs others (timeout 5 npm test): the
// commands it runs must be allowed, and the wrapper must add nothing
// (sudo does).
func (b *bashCheck) wrapper(c *shellsafe.Command) (*shellsafe.Command, string) {
	if c.Via == shellsafe.Privileged {
		return c, fmt.Sprintf("`%s` needs confirmation: %s runs the command as another user.", strings.TrimSpace(c.Source), c.Name())
	}
	if !c.Literal() || riskyAssigns(c) {
		return c, fmt.Sprintf("`%s` needs confirmation: some of its words are only known when it runs.", strings.TrimSpace(c.Source))
	}
	if w := c.WrapperClass(); !w.ReadOnly {
		return c, fmt.Sprintf("`%s` needs confirmation: %s.", strings.TrimSpace(c.Source), w.Why)
	}
	for _, ic := range c.Inner {
		if bad, why := b.command(ic); why != "" {
			return bad, why
		}
	}
	return b.redirects(c, false)
}

// allowRule returns the allow rule that allows the command itself.
func (b *bashCheck) allowRule(c *shellsafe.Command) (Rule, bool) {
	for r := range bashRules(b.req.Rules.Allow) {
		if b.req.Rules.pattern(r.Specifier).match(c, true) == yes {
			return r, true
		}
	}
	return Rule{}, false
}

// auto checks a command no rule allows: it runs without asking only when
// it is read-only, fully known, and every path it names is inside the
// project (plan, default and acceptEdits modes alike).
func (b *bashCheck) auto(c *shellsafe.Command) string {
	src := strings.TrimSpace(c.Source)
	bare := *c
	bare.Redirects = nil
	class := shellsafe.ClassifyCommand(&bare)
	switch {
	case class.Destructive:
		return fmt.Sprintf("`%s` needs confirmation: %s.", src, class.Why)
	case !class.ReadOnly:
		return fmt.Sprintf("`%s` needs permission: %s. Allow it with a rule such as Bash(%s).", src, class.Why, ruleFor(c))
	case !c.Literal():
		return fmt.Sprintf("`%s` needs confirmation: %s is only known when it runs.", src, c.Args[c.FirstDynamic()].Value)
	case riskyAssigns(c):
		return fmt.Sprintf("`%s` needs confirmation: its assignments change what it runs.", src)
	}
	if isCd(c) {
		return "" // b.cd checks where it goes
	}
	for _, a := range c.Args[1:] {
		if p := b.outside(a); p != "" {
			return fmt.Sprintf("`%s` needs permission: it reads %s, outside the project %s.", src, p, b.p.project)
		}
	}
	return ""
}

// ruleFor suggests a rule for a command: its first two words as a prefix.
func ruleFor(c *shellsafe.Command) string {
	argv := c.Argv()[:c.FirstDynamic()]
	if len(argv) > 2 {
		argv = argv[:2]
	}
	return strings.Join(argv, " ") + ":*"
}

// outside returns the path a word names when it is outside the project
// from any directory the line may run in; "" when it is inside or not a
// path.
func (b *bashCheck) outside(w shellsafe.Word) string {
	v := w.Value
	if strings.HasPrefix(v, "-") {
		_, val, ok := strings.Cut(v, "=")
		if !ok {
			return ""
		}
		v = val
	}
	if w.Glob {
		v = globBase(v)
	}
	pathLike := strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~") || v == ".." ||
		strings.HasPrefix(v, "../") || strings.Contains(v, "/../") || strings.HasSuffix(v, "/..")
	for _, dir := range b.cwds {
		p := b.p.abs(v, dir)
		if p == "" {
			if strings.HasPrefix(v, "~") {
				return v
			}
			continue
		}
		if (pathLike || exists(p)) && !b.p.inside(p) {
			return p
		}
	}
	return ""
}

// globBase is the part of a pattern before its first wildcard, cut back
// to a folder.
func globBase(v string) string {
	i := strings.IndexAny(v, "*?[")
	if i < 0 {
		return v
	}
	v = v[:i]
	if j := strings.LastIndexByte(v, '/'); j >= 0 {
		return v[:j+1]
	}
	return "."
}

// redirects checks a command's redirections; byRule is set when a rule
// allowed the command (Claude Code matches rules without redirections,
// so the rule covers writing inside the project).
func (b *bashCheck) redirects(c *shellsafe.Command, byRule bool) (*shellsafe.Command, string) {
	for _, r := range c.Redirects {
		if why := b.redirect(r, byRule); why != "" {
			return c, why
		}
	}
	return nil, ""
}

// redirect checks one redirection.
func (b *bashCheck) redirect(r shellsafe.Redirect, byRule bool) string {
	if r.Target == "" || (r.Write && isDevice(r.Target)) {
		return ""
	}
	if r.Dynamic {
		return fmt.Sprintf("`%s` needs confirmation: the redirection target %s is only known when it runs.", clip(b.line), r.Target)
	}
	p := b.p.abs(r.Target, b.p.cwd)
	for _, dir := range b.cwds {
		if q := b.p.abs(r.Target, dir); q != "" && !b.p.inside(q) {
			p = q
		}
	}
	if p == "" {
		return fmt.Sprintf("`%s` needs confirmation: it redirects to %s.", clip(b.line), r.Target)
	}
	inside := b.p.inside(p)
	if !r.Write {
		if inside || b.allowedPath("Read", p) {
			return ""
		}
		return fmt.Sprintf("`%s` needs permission: it reads %s, outside the project %s.", clip(b.line), p, b.p.project)
	}
	editRule := b.allowedPath("Edit", p)
	switch {
	case !inside && !editRule:
		return fmt.Sprintf("`%s` needs permission: it writes %s, outside the project %s. Allow it with a rule such as %s.", clip(b.line), p, b.p.project, suggestPath("Edit", b.p, p))
	case r.Truncate && exists(p) && !byRule && !editRule:
		return fmt.Sprintf("`%s` needs confirmation: '%s' overwrites the existing file %s.", clip(b.line), r.Op, p)
	case inside && !byRule && !editRule && b.req.Mode != ModeAcceptEdits:
		return fmt.Sprintf("`%s` needs permission: it writes %s.", clip(b.line), p)
	case !byRule && !editRule:
		b.wrote = true
	}
	return ""
}

// allowedPath reports whether an allow rule for tool (Read, Edit) covers
// path.
func (b *bashCheck) allowedPath(tool string, p string) bool {
	for _, r := range b.req.Rules.Allow {
		if r.Tool == tool && (r.Specifier == "" || matchForms(b.p, r, p, false)) {
			return true
		}
	}
	return false
}

// cd checks that a cd stays inside the project.
func (b *bashCheck) cd(c *shellsafe.Command) string {
	if !isCd(c) {
		return ""
	}
	if _, ok := b.byRule[c]; ok {
		return ""
	}
	for _, t := range b.cdTargets(c) {
		if t == "" {
			return fmt.Sprintf("`%s` needs confirmation: where it changes directory to is only known when it runs.", strings.TrimSpace(c.Source))
		}
		if !b.p.inside(t) {
			return fmt.Sprintf("`%s` needs permission: it changes directory to %s, outside the project %s.", strings.TrimSpace(c.Source), t, b.p.project)
		}
	}
	return ""
}

func isCd(c *shellsafe.Command) bool {
	switch path.Base(c.Name()) {
	case "cd", "pushd", "chdir":
		return true
	}
	return false
}

// cdTargetsFrom returns where a cd may go from each of the directories
// from ("" when unknown: cd -, cd $VAR, pushd +N).
func (b *bashCheck) cdTargetsFrom(c *shellsafe.Command, from []string) []string {
	var ops []shellsafe.Word
	for _, a := range c.Args[1:] {
		if a.Value == "-" || !strings.HasPrefix(a.Value, "-") || a.Dynamic {
			ops = append(ops, a)
		}
	}
	if len(ops) == 0 {
		return []string{b.p.home}
	}
	t := ops[0]
	if t.Glob || t.Value == "-" || path.Base(c.Name()) == "pushd" && strings.HasPrefix(t.Value, "+") {
		return []string{""}
	}
	var out []string
	for _, dir := range from {
		v, ok := shellsafe.Expand(t, b.lookup(dir))
		if !ok {
			return []string{""}
		}
		out = append(out, b.p.absLogical(v, dir)) // cd -L, bash's default
	}
	return out
}

// cdTargets returns where a cd may go from the directories it may run in.
func (b *bashCheck) cdTargets(c *shellsafe.Command) []string {
	ds, ok := b.dirsOf[c]
	if !ok || len(ds.list) == 0 {
		return b.cdTargetsFrom(c, []string{b.p.cwd})
	}
	out := b.cdTargetsFrom(c, ds.list)
	if ds.unknown {
		out = append(out, "")
	}
	return out
}

// maxDirs bounds the directories a line's paths are checked from; a
// line that changes directory more often is not followed further and
// its cd commands ask (they are checked from the first maxDirs only).
const maxDirs = 16

// file is a file a line reads or writes, for Read and Edit deny rules.
type file struct {
	path  string
	write bool
}

// Commands whose operands are files they read or write.
var (
	fileReaders = map[string]bool{
		"cat": true, "head": true, "tail": true, "less": true, "more": true, "grep": true, "egrep": true,
		"fgrep": true, "rg": true, "ag": true, "wc": true, "sort": true, "uniq": true, "cut": true, "nl": true,
		"od": true, "hexdump": true, "xxd": true, "strings": true, "diff": true, "cmp": true, "file": true,
		"stat": true, "sha256sum": true, "sha1sum": true, "md5sum": true, "base64": true, "jq": true,
		"tac": true, "sed": true, "awk": true, "source": true, ".": true, "cp": true, "scp": true, "rsync": true,
		"tar": true, "zip": true, "curl": true,
	}
	fileWriters = map[string]bool{
		"rm": true, "rmdir": true, "mv": true, "cp": true, "tee": true, "touch": true, "truncate": true,
		"shred": true, "ln": true, "chmod": true, "chown": true, "mkdir": true, "install": true, "unlink": true,
	}
)

// files returns the files the line names for reading or writing: its
// redirections and the operands of commands that read or write files.
func (b *bashCheck) files() []file {
	var out []file
	add := func(target string, write bool) {
		for _, dir := range b.cwds {
			if p := b.p.abs(target, dir); p != "" {
				out = append(out, file{p, write})
			}
		}
	}
	for _, r := range b.script.AllRedirects() {
		if r.Target != "" && !r.Dynamic {
			add(r.Target, r.Write)
		}
	}
	for _, c := range b.all {
		name := path.Base(c.Name())
		if !fileReaders[name] && !fileWriters[name] {
			continue
		}
		for _, a := range c.Args[1:] {
			if a.Dynamic || strings.HasPrefix(a.Value, "-") {
				continue
			}
			v := a.Value
			if a.Glob {
				v = globBase(v)
			}
			if fileReaders[name] {
				add(v, false)
			}
			if fileWriters[name] {
				add(v, true)
			}
		}
	}
	return out
}

// bashRules yields the rules for Bash that have a specifier.
func bashRules(rules []Rule) iter.Seq[Rule] {
	return func(yield func(Rule) bool) {
		for _, r := range rules {
			if r.Tool == "Bash" && !r.whole() && !yield(r) {
				return
			}
		}
	}
}

// wholeTool returns a rule naming the whole Bash tool.
func wholeTool(rules []Rule) (Rule, bool) {
	for _, r := range rules {
		if r.coversCall("Bash", kindOther) && r.whole() {
			return r, true
		}
	}
	return Rule{}, false
}

func isDevice(target string) bool {
	switch target {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty":
		return true
	}
	return strings.HasPrefix(target, "/dev/fd/")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
