package permission

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/cairn-dev/cairn/internal/sandbox"
	"github.com/cairn-dev/cairn/tool"
)

// Behavior is what happens to a call.
type Behavior string

const (
	Allow Behavior = "allow"
	Ask   Behavior = "ask"
	Deny  Behavior = "deny"
)

// Request is one tool call to decide, with everything the decision
// depends on.
type Request struct {
	// Tool is the tool's name; Input its JSON input.
	Tool  string
	Input json.RawMessage
	// ReadOnly and Destructive are the tool's own answers for this input
	// (tool.Tool). For Bash the command line is also read here, and the
	// stricter answer wins.
	ReadOnly, Destructive bool
	// Paths are the files and folders the call reads or writes, as its
	// tool says (tool.TouchedPaths); nil for a tool that names none. A
	// call that writes a path is an edit: Edit(…) rules cover it, and
	// acceptEdits allows it inside the project. One that only reads is a
	// read, which Read(…) rules cover. Every path is decided, and the
	// strictest answer wins.
	Paths []tool.PathUse
	Mode  Mode
	Rules Rules
	// ProjectDir is the project's root; AdditionalDirectories are more
	// folders the session may work in (permissions.additionalDirectories).
	ProjectDir            string
	AdditionalDirectories []string
	// Cwd is the working directory relative paths are resolved against;
	// "" is ProjectDir. Home is the user's home folder, for ~.
	Cwd, Home string
	// Headless is set when no one can answer a question: what would ask
	// is denied, with a reason the model can act on.
	Headless bool
	// Sandbox is the sandbox Bash commands run in; nil or inactive when
	// they run without one.
	Sandbox *sandbox.Sandbox

	// resolvedRoots are ProjectDir and AdditionalDirectories, absolute,
	// paired with their symbolic links resolved; Checker resolves them
	// once. Nil: every decision resolves them.
	resolvedRoots []string
}

// Decision is the answer for one call. Its JSON form is what
// `cairn permissions check --json` prints.
type Decision struct {
	Behavior Behavior `json:"decision"`
	// Reason says why, in a sentence a person or the model can act on.
	Reason string `json:"reason"`
	// Rule is the rule that decided, as written in settings; "" when the
	// mode or a safety check decided.
	Rule string `json:"rule"`
}

// Decide decides a call: deny rules first (a deny matching any part of
// a Bash line denies the line), then plan mode, then ask rules, then
// bypassPermissions, then allow rules, then the mode's default. Task is
// allowed by default, plan mode included: the calls of the subagent it
// starts are decided one by one. It never blocks; a cancelled ctx
// denies.
func Decide(ctx context.Context, req Request) Decision {
	d, _ := Explain(ctx, req)
	return d
}

// Explain decides a call as Decide does, and when a path constraint
// decided, also says which path fell outside which folders and which
// rule would allow it (nil otherwise).
func Explain(ctx context.Context, req Request) (Decision, *PathCheck) {
	if err := ctx.Err(); err != nil {
		return Decision{Behavior: Deny, Reason: "the permission check was cancelled: " + err.Error()}, nil
	}
	if req.Mode == "" {
		req.Mode = ModeDefault
	}
	p := newPlace(req)
	if req.Tool == "Bash" {
		d, h := decideBash(req, p)
		return finish(req, d, h), h.path
	}
	c := describe(req, p)
	d, pc := decidePath(req, p, c)
	h := toolHint(req, p, c)
	for _, more := range otherPaths(req, p) {
		r := req
		r.ReadOnly = req.ReadOnly || more.kind == kindRead
		if md, mpc := decidePath(r, p, more); stricter(md.Behavior, d.Behavior) {
			d, pc, h = md, mpc, toolHint(r, p, more)
		}
	}
	return finish(req, d, h), pc
}

// decidePath decides a call for one path it touches (or for none): the
// rules and the mode, then, when an allow rule allowed it, the path
// constraints (toolPaths).
func decidePath(req Request, p place, c call) (Decision, *PathCheck) {
	d := decideTool(req, p, c)
	if d.Behavior == Allow && req.Mode != ModeBypass {
		return toolPaths(req, p, c, d)
	}
	return d, nil
}

// toolPaths applies the path constraints to a call, for one path it
// touches, that an allow rule allowed: a rule for the whole tool (Edit,
// Read) says which tool may run, not where; writing outside the project
// and its folders, or reading a secret there, needs a rule that names
// the place.
func toolPaths(req Request, p place, c call, d Decision) (Decision, *PathCheck) {
	r, ok := firstRule(req.Rules.Allow, req, p, c, false)
	if !ok || !r.whole() || c.path == "" {
		return d, nil
	}
	if named, ok := namingRule(req.Rules.Allow, req, p, c); ok {
		return Decision{Allow, fmt.Sprintf("Allowed by the rule %s%s.", named, from(named)), named.String()}, nil
	}
	pc := &PathCheck{Path: c.path, Command: req.Tool}
	if real := p.realPath(c.path); real != c.path {
		pc.Resolved = real
	}
	switch {
	case c.kind == kindEdit && !p.inside(c.path):
		pc.Access, pc.Outside, pc.AllowWith = "write", p.rootsGiven(), suggestPath("Edit", p, c.path)
		return ask("Writing %s needs permission: it is outside the project %s and its additional directories, and the rule %s%s does not name it. Allow it with a rule such as %s, or add the folder with --add-dir.", c.path, p.project, r, from(r), pc.AllowWith), pc
	case c.kind == kindRead && p.secret(c.path):
		pc.Access, pc.Outside, pc.AllowWith = "read", p.rootsGiven(), suggestPath("Read", p, c.path)
		return ask("Reading %s needs permission: it may hold secrets (credentials, keys or .env files outside the project), and the rule %s%s does not name it. Allow it with a rule such as %s.", c.path, r, from(r), pc.AllowWith), pc
	}
	return d, nil
}

// namingRule is the first allow rule that matches the call and names
// its place (Edit(//etc/**)), whatever rules for the whole tool come
// before it.
func namingRule(rules []Rule, req Request, p place, c call) (Rule, bool) {
	for _, r := range rules {
		if !r.whole() && matches(r, req, p, c, false) {
			return r, true
		}
	}
	return Rule{}, false
}

// stricter reports whether a is a stricter answer than b: deny, then
// ask, then allow.
func stricter(a, b Behavior) bool {
	rank := func(x Behavior) int {
		switch x {
		case Deny:
			return 2
		case Ask:
			return 1
		}
		return 0
	}
	return rank(a) > rank(b)
}

// pathCall is what a call does to one path it touches.
func pathCall(req Request, p place, u tool.PathUse) call {
	c := call{kind: kindRead, path: p.abs(u.Path, p.cwd)}
	c.action = "read " + orTool(c.path, req.Tool)
	if u.Write {
		c.kind = kindEdit
		c.action = "edit " + orTool(c.path, req.Tool)
	}
	return c
}

// mainPath is the path a call is described by: the first it writes, or
// the first it reads.
func mainPath(paths []tool.PathUse) (tool.PathUse, bool) {
	for _, u := range paths {
		if u.Write {
			return u, true
		}
	}
	if len(paths) > 0 {
		return paths[0], true
	}
	return tool.PathUse{}, false
}

// otherPaths are the calls for the paths besides the one the call is
// described by (mainPath).
func otherPaths(req Request, p place) []call {
	if len(req.Paths) < 2 {
		return nil
	}
	main, _ := mainPath(req.Paths)
	var out []call
	skipped := false
	for _, u := range req.Paths {
		if u == main && !skipped {
			skipped = true
			continue
		}
		out = append(out, pathCall(req, p, u))
	}
	return out
}

// call is what a tool call touches, as far as rules are concerned.
type call struct {
	kind   kind
	path   string // absolute; file tools
	url    string // WebFetch
	host   string
	action string // "edit /p/a.go", for messages
}

type kind int

const (
	kindOther kind = iota
	kindEdit
	kindRead
	kindWeb
	kindMCP
	// kindDelegate is a call that hands work to a subagent (Task), whose
	// own calls are each decided here as the session's are.
	kindDelegate
)

// describe finds what the call touches.
func describe(req Request, p place) call {
	var in map[string]any
	_ = json.Unmarshal(req.Input, &in)
	str := func(k string) string { s, _ := in[k].(string); return s }
	c := call{action: "use " + req.Tool}
	main, touches := mainPath(req.Paths)
	switch {
	case touches:
		c = pathCall(req, p, main)
	case req.Tool == "WebFetch" || req.Tool == "WebSearch":
		c.kind = kindWeb
		c.url = firstNonEmpty(str("url"), str("query"))
		if u, err := url.Parse(c.url); err == nil {
			c.host = strings.ToLower(u.Hostname())
		}
		c.action = "fetch " + c.url
		if req.Tool == "WebSearch" {
			c.action = "search the web for " + fmt.Sprintf("%q", c.url)
		}
	case strings.HasPrefix(req.Tool, "mcp__"):
		c.kind = kindMCP
	case req.Tool == "Task":
		c.kind = kindDelegate
		c.action = "start a " + firstNonEmpty(str("subagent_type"), "general-purpose") + " subagent"
	}
	return c
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func orTool(path, tool string) string {
	if path == "" {
		return "with " + tool
	}
	return path
}

// decideTool decides a call of any tool but Bash.
func decideTool(req Request, p place, c call) Decision {
	if r, ok := firstRule(req.Rules.Deny, req, p, c, true); ok {
		return Decision{Deny, fmt.Sprintf("Permission to %s is denied by the rule %s%s.", c.action, r, from(r)), r.String()}
	}
	if req.Mode == ModePlan && !req.ReadOnly && c.kind != kindDelegate {
		return planDenied(c.action)
	}
	if req.Mode != ModeBypass {
		if r, ok := firstRule(req.Rules.Ask, req, p, c, true); ok {
			return Decision{Ask, fmt.Sprintf("The rule %s%s asks before %s.", r, from(r), gerund(c.action)), r.String()}
		}
	}
	if req.Mode == ModeBypass {
		return Decision{Allow, "bypassPermissions mode allows every call that no deny rule denies.", ""}
	}
	if r, ok := firstRule(req.Rules.Allow, req, p, c, false); ok {
		return Decision{Allow, fmt.Sprintf("Allowed by the rule %s%s.", r, from(r)), r.String()}
	}
	return byMode(req, p, c)
}

// byMode is the mode's answer when no rule decided.
func byMode(req Request, p place, c call) Decision {
	switch {
	case c.kind == kindWeb:
		return ask("%s needs permission: network access asks unless a rule such as WebFetch(domain:%s) allows it.", capital(c.action), orHost(c.host))
	case c.kind == kindDelegate:
		return Decision{Allow, fmt.Sprintf("%s runs no command itself: each call its subagent makes is checked as this session's are.", req.Tool), ""}
	case c.kind == kindMCP:
		return ask("The MCP tool %s needs permission: MCP tools ask unless a rule such as %s allows them.", req.Tool, req.Tool)
	case req.Destructive:
		return ask("%s needs confirmation: %s reports this call as destructive.", capital(c.action), req.Tool)
	case req.ReadOnly && c.path != "" && !p.inside(c.path):
		return ask("Reading %s needs permission: it is outside the project %s.", c.path, p.project)
	case req.ReadOnly:
		return Decision{Allow, fmt.Sprintf("%s is read-only and stays inside the project.", req.Tool), ""}
	case c.kind == kindEdit && c.path != "" && !p.inside(c.path):
		return ask("Writing %s needs permission: it is outside the project %s and its additional directories.", c.path, p.project)
	case c.kind == kindEdit && c.path != "" && (req.Mode == ModeAcceptEdits):
		return Decision{Allow, "acceptEdits mode allows file edits inside the project.", ""}
	case c.kind == kindEdit:
		return ask("%s needs permission: file edits ask in %s mode.", capital(c.action), req.Mode)
	}
	return ask("%s needs permission: %s is not read-only.", capital(c.action), req.Tool)
}

func ask(format string, args ...any) Decision {
	return Decision{Behavior: Ask, Reason: fmt.Sprintf(format, args...)}
}

func planDenied(action string) Decision {
	return Decision{Deny, fmt.Sprintf("Not allowed to %s: cairn is in plan mode, where only read-only tools run until the plan is approved. Finish the plan and present it for approval with ExitPlanMode instead.", action), ""}
}

func orHost(h string) string {
	if h == "" {
		return "example.com"
	}
	return h
}

// from names the file a rule came from, and its line; for a broken
// rule, also why it covers what it does.
func from(r Rule) string {
	var s string
	switch {
	case r.Source == "":
	case strings.HasPrefix(r.Source, "cairn: "):
		s = " (" + r.Source + ")"
	case r.Line > 0:
		s = fmt.Sprintf(" in %s line %d", r.Source, r.Line)
	default:
		s = " in " + r.Source
	}
	if r.Broken != "" {
		what := "every tool"
		if r.Tool != "" {
			what = "every " + r.Tool + " call"
		}
		s += fmt.Sprintf(" (which cannot be read: %s; until it is fixed, it covers %s. Fix the rule)", r.Broken, what)
	}
	return s
}

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// gerund turns "edit x" into "editing x" for messages.
func gerund(action string) string {
	verb, rest, _ := strings.Cut(action, " ")
	switch verb {
	case "use":
		verb = "using"
	case "edit":
		verb = "editing"
	case "read":
		verb = "reading"
	case "fetch":
		verb = "fetching"
	case "run":
		verb = "running"
	case "search":
		verb = "searching"
	}
	return verb + " " + rest
}

// firstRule returns the first rule of rules that matches the call. deny
// is set for deny and ask rules: a path then matches when any of its
// forms does; for allow rules every form must.
func firstRule(rules []Rule, req Request, p place, c call, deny bool) (Rule, bool) {
	for _, r := range rules {
		if matches(r, req, p, c, deny) {
			return r, true
		}
	}
	return Rule{}, false
}

func matches(r Rule, req Request, p place, c call, deny bool) bool {
	if !r.coversCall(req.Tool, c.kind) {
		return false
	}
	if r.whole() {
		return true
	}
	switch c.kind {
	case kindEdit, kindRead:
		return matchForms(p, r, c.path, deny)
	case kindWeb:
		return matchWeb(r.Specifier, c)
	case kindDelegate:
		// Task(reviewer) names the kind of subagent, whatever else the
		// input says; no subagent_type is the general-purpose one.
		return wildcard(r.Specifier).MatchString(subagentType(req.Input))
	}
	return matchInput(r.Specifier, req.Input)
}

// subagentType is the kind of subagent a Task call starts.
func subagentType(input json.RawMessage) string {
	var in struct {
		Type string `json:"subagent_type"`
	}
	_ = json.Unmarshal(input, &in)
	return firstNonEmpty(in.Type, "general-purpose")
}

// matchForms matches a path rule against every form of a path: any form
// for a deny, all for an allow.
func matchForms(p place, r Rule, path string, any bool) bool {
	if path == "" {
		return false
	}
	fs := p.forms(path)
	n := 0
	for _, f := range fs {
		if p.matchPath(r, f) {
			n++
		}
	}
	if any {
		return n > 0
	}
	return n == len(fs)
}

// matchWeb: domain:example.com is that host exactly; domain:*.example.com
// its subdomains; domain:* every host. Any other specifier is a wildcard
// pattern on the URL.
func matchWeb(spec string, c call) bool {
	d, ok := strings.CutPrefix(spec, "domain:")
	if !ok {
		return wildcard(spec).MatchString(c.url)
	}
	d = strings.ToLower(strings.TrimSpace(d))
	switch {
	case c.host == "":
		return false
	case d == "*":
		return true
	case strings.HasPrefix(d, "*."):
		return strings.HasSuffix(c.host, d[1:])
	}
	return c.host == d
}

// matchInput matches the specifier of a rule for another tool (Task(Explore),
// Skill(name)) against the input's top-level strings.
func matchInput(spec string, input json.RawMessage) bool {
	var in map[string]any
	if json.Unmarshal(input, &in) != nil {
		return false
	}
	re := wildcard(spec)
	for _, v := range in {
		if s, ok := v.(string); ok && re.MatchString(s) {
			return true
		}
	}
	return false
}

// suggestPath is the rule that would allow a path: relative to the
// project when inside it, absolute (//) otherwise.
func suggestPath(tool string, p place, path string) string {
	if rel, err := filepath.Rel(p.project, path); err == nil && within(path, p.project) {
		return tool + "(/" + filepath.ToSlash(rel) + ")"
	}
	return tool + "(/" + filepath.ToSlash(path) + ")"
}
