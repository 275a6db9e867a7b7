package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/history"
	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/hook"
	"github.com/cairn-dev/cairn/internal/mcp"
	"github.com/cairn-dev/cairn/internal/middleware"
	"github.com/cairn-dev/cairn/internal/permission"
	"github.com/cairn-dev/cairn/internal/pricing"
	"github.com/cairn-dev/cairn/internal/settings"
	"github.com/cairn-dev/cairn/internal/tui"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// interactive reports whether the terminal UI can run: stdout is a
// terminal (the UI reads keys from the terminal even when stdin is not).
func interactive(env Env) bool {
	f, ok := env.Stdout.(*os.File)
	return ok && isTerminal(f)
}

// runInteractive runs a session in the terminal UI: assembled as a
// headless run is, but with the permission checker's questions asked of
// the person, and with what a headless run prints on stderr shown in the
// UI.
func runInteractive(ctx context.Context, env Env, f *agentFlags, prompt string) error {
	notices := tui.NewNotices()
	stderr := env.Stderr
	env.Stderr = notices // retries, hook messages and warnings go to the UI
	s, err := assemble(ctx, env, f, false, notices)
	if err != nil {
		return err
	}
	defer s.stop()
	ctx = s.ctx
	home, checker, opts := s.home, s.checker, s.opts
	warnings := s.warnings
	asker := tui.NewAsker()
	ask := notifying(s.gov, asker.Ask) // Notification hooks hear of each question
	gate := &askingGate{inner: middleware.CheckFunc(opts.Middleware.Gate), checker: checker, ask: ask, project: env.Cwd}
	opts.Middleware.Gate = middleware.GateFunc(gate.gate)
	opts.PlanModes = newPlanModes(checker, ask) // the person approves plans
	pick := f.pick
	// The UI draws a resumed result when it comes into view, not all of
	// them at start: the conversation can stay in the transcript's pages,
	// as a headless run's does (the UI reads a result under filemap.Guard).
	opts.MapTranscript = true
	ag, err := agent.Open(ctx, opts)
	if err != nil {
		return err
	}
	warnings = append(warnings, ag.Warnings...)
	if err := s.sessionStart(ctx, f, ag); err != nil {
		ag.Close()
		return err
	}
	gov := s.gov
	open := func(ctx context.Context, ref string) (tui.Session, error) {
		if ref == "" { // /clear ends this session
			gov.SessionEnd(ctx, hook.EndClear)
		}
		o := opts
		o.Continue, o.Resume, o.Fork, o.SessionID = false, ref, false, ""
		a, err := agent.Open(ctx, o)
		if err != nil {
			return nil, err
		}
		gov.Attach(a)
		return a, nil
	}
	var starting func() []string
	if s.mcp != nil && len(s.mcp.Pending()) > 0 {
		starting = s.mcp.Pending
		go announceMCP(ctx, s.mcp, notices)
	}
	hist := history.NewWriter(home.Dir, env.Now)
	defer hist.Close()
	last, runErr := tui.Run(ctx, tui.Options{
		Session: ag, Open: open, Home: home, Cwd: env.Cwd, History: hist,
		Asker: asker, Notices: notices, Warnings: warnings, Commands: uiCommands(ag), StatusLine: statusLineOf(s.settings, env.Cwd, notices),
		Context: func(ctx context.Context, s tui.Session) (string, error) {
			a, ok := s.(*agent.Agent)
			if !ok {
				return "", fmt.Errorf("no context report for this session")
			}
			rep, err := liveContextReport(ctx, env, a)
			if err != nil {
				return "", err
			}
			var b strings.Builder
			printContext(&b, rep)
			return b.String(), nil
		},
		Memory: func(ctx context.Context) (string, error) {
			rep, err := buildExplain(ctx, env)
			if err != nil {
				return "", err
			}
			var b strings.Builder
			printExplain(&b, rep)
			return b.String(), nil
		},
		Summary: func(ctx context.Context, s tui.Session) (string, error) {
			a, ok := s.(*agent.Agent)
			if !ok {
				return "", fmt.Errorf("no session memory for this session")
			}
			return a.Summary(ctx)
		},
		Permissions: func() string { return permissionsReport(checker, gate) },
		Status:      func(sess tui.Session) string { return statusReport(env, s, sess) },
		AddDir:      func(dir string) (string, error) { return addDir(env, s, dir) },
		Export:      exportText,
		MCP:         func(context.Context) (string, error) { return mcpStartingText(s.mcp), nil },
		Hooks:       func() string { return hooksText(s) },
		Agents:      func() string { return agentsText(env, home.Dir) },
		Doctor:      func(ctx context.Context) (string, error) { return doctor(ctx, env, s, s.mcp), nil },
		Cost:        pricing.Cost, Spent: s.choice.cost,
		Prompt: prompt, PickResume: pick, Starting: starting, Theme: themeOf(env, s.settings, warnTo(notices)),
		Now: env.Now,
	})
	gov.SessionEnd(ctx, hook.EndExit)
	if last != nil {
		if err := last.Close(); err != nil && runErr == nil {
			runErr = fmt.Errorf("finish writing the transcript %s: %w", last.Path(), err)
		}
		if a, ok := last.(*agent.Agent); !ok || !a.Discarded() {
			fmt.Fprintf(stderr, "Resume this session with: cairn -r %s\n", last.ID())
		}
	}
	return runErr
}

// themeOf is the terminal UI's theme: none of its colours when NO_COLOR
// is set (no-color.org), else the settings' "theme" as Claude Code names
// them ("light", "light-daltonized", "light-ansi" are light; "dark" and
// its kin, or none, dark).
func themeOf(env Env, st *settings.Settings, warn func(string)) string {
	if env.Getenv("NO_COLOR") != "" {
		return tui.ThemePlain
	}
	name, err := st.String("theme")
	if err != nil {
		warn(err.Error())
	}
	switch {
	case strings.HasPrefix(name, "light"):
		return tui.ThemeLight
	case name == "", strings.HasPrefix(name, "dark"):
	default:
		warn(fmt.Sprintf("unknown theme %q in the settings: use \"dark\" or \"light\"; the UI stays dark", name))
	}
	return tui.ThemeDark
}

// warnTo writes a warning to w.
func warnTo(w io.Writer) func(string) {
	return func(s string) { fmt.Fprintln(w, "warning:", s) }
}

// announceMCP tells the UI when the servers starting in the background
// have all connected or failed: which failed, and which are ready.
func announceMCP(ctx context.Context, st *mcp.Starting, notices *tui.Notices) {
	servers := st.Wait(ctx)
	if servers == nil {
		return
	}
	for _, w := range servers.Warnings() {
		fmt.Fprintln(notices, "warning:", w)
	}
	var ready []string
	for _, s := range servers.Status() {
		if s.Err == nil {
			ready = append(ready, fmt.Sprintf("%s (%d tools)", s.Name, len(s.Tools)))
		}
	}
	if len(ready) > 0 {
		fmt.Fprintf(notices, "MCP servers ready: %s; their tools join the session with the next prompt\n", strings.Join(ready, ", "))
	}
}

// askingGate asks the person about the calls the permission checker
// would ask about; the rest it leaves to the gate it wraps. "Don't ask
// again" rules are written to the project's local settings by the UI and
// apply at once. Safe for concurrent use.
type askingGate struct {
	inner   func(context.Context, tool.Tool, model.Block) engine.Verdict
	checker *permission.Checker
	// ask puts a question to the person (tui.Asker.Ask).
	ask     func(context.Context, tui.Question) tui.Answer
	project string

	mu     sync.Mutex
	always []permission.Rule
}

func (g *askingGate) gate(ctx context.Context, t tool.Tool, call model.Block) engine.Verdict {
	v := g.inner(ctx, t, call)
	rec, ok := v.Record.(permission.Record)
	if v.Allow || !ok || (rec.Decision != permission.Ask && rec.By != "headless") || g.checker.Mode() == permission.ModeDontAsk {
		return v // dontAsk mode never asks: what would ask stays denied
	}
	mode := g.checker.Mode()
	asked := permission.Decision{Behavior: permission.Ask, Reason: rec.Reason, Rule: rec.Rule}
	if r, ok := g.allowedAlways(ctx, t, call); ok && rec.Rule == "" {
		return engine.Verdict{Allow: true, Record: permission.Record{Decision: permission.Allow, By: "user", Rule: r,
			Reason: "Allowed by " + r + ", which the user added in this session.", Mode: mode}}
	}
	q := tui.Question{Tool: call.Name, Input: call.Input, Reason: rec.Reason}
	if rec.Rule == "" { // an ask rule asks whatever allow rules say
		q.Rule = tui.SuggestRule(t, call.Input, g.project)
	}
	ans := g.ask(ctx, q)
	if ans.Allow {
		if ans.Always && ans.Rule != "" {
			for _, s := range permission.SplitRules(ans.Rule) {
				if r, err := permission.ParseRule(s); err == nil {
					r.Source, r.Root = tui.LocalSettings(g.project), g.project
					g.mu.Lock()
					g.always = append(g.always, r)
					g.mu.Unlock()
				}
			}
		}
		return engine.Verdict{Allow: true, Record: asked.Answered(mode, true)}
	}
	if ans.Note != "" && ctx.Err() == nil { // the person said what to do instead: go on with it
		reason := "The user did not allow this " + call.Name + " call, so it did not run. The user said: " + ans.Note
		return engine.Verdict{Reason: reason, Record: asked.Answered(mode, false)}
	}
	// A plain refusal (No, Esc) ends the turn: the person takes the
	// control back, as in Claude Code, and no further request is made.
	reason := "The user did not allow this " + call.Name + " call, so it did not run, and took the control back. Wait for the user's direction instead of retrying it."
	return engine.Verdict{Reason: reason, Record: asked.Answered(mode, false), EndTurn: true}
}

// allowedAlways reports whether a rule added in this session allows the
// call.
func (g *askingGate) allowedAlways(ctx context.Context, t tool.Tool, call model.Block) (string, bool) {
	g.mu.Lock()
	rules := append([]permission.Rule(nil), g.always...)
	g.mu.Unlock()
	if len(rules) == 0 {
		return "", false
	}
	req := g.checker.Request(t, call.Input)
	req.Rules = permission.Rules{Allow: rules}
	d := permission.Decide(ctx, req)
	return d.Rule, d.Behavior == permission.Allow && d.Rule != ""
}

// permissionsReport is /permissions: the mode and the rules in force,
// with where each was written — a settings file (and line), a flag,
// cairn itself, or this session's "don't ask again" answers.
func permissionsReport(c *permission.Checker, g *askingGate) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Permission mode: %s\n", c.Mode())
	rules := c.Rules()
	allow := slices.Clone(rules.Allow)
	if g != nil {
		g.mu.Lock()
		for _, r := range g.always {
			r.Source, r.Line = "this session (\"don't ask again\"; saved to "+r.Source+")", 0
			allow = append(allow, r)
		}
		g.mu.Unlock()
	}
	for _, group := range []struct {
		name  string
		rules []permission.Rule
	}{{"Allow", allow}, {"Ask", rules.Ask}, {"Deny", rules.Deny}} {
		fmt.Fprintf(&b, "\n%s (%d)\n", group.name, len(group.rules))
		for _, r := range group.rules {
			src := r.Source
			if r.Line > 0 {
				src = fmt.Sprintf("%s line %d", r.Source, r.Line)
			}
			fmt.Fprintf(&b, "  %-40s %s\n", r.String(), src)
		}
	}
	b.WriteString("\nRules added with \"don't ask again\" go to .cairn/settings.local.json.")
	return b.String()
}
