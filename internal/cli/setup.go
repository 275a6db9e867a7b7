package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/compact"
	"github.com/cairn-dev/cairn/internal/governance"
	"github.com/cairn-dev/cairn/internal/hook"
	"github.com/cairn-dev/cairn/internal/mcp"
	"github.com/cairn-dev/cairn/internal/permission"
	"github.com/cairn-dev/cairn/internal/sandbox"
	"github.com/cairn-dev/cairn/internal/settings"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
)

// setup is a session assembled from the command line, the environment and
// the settings files — shared by headless runs and the terminal UI, which
// differ only in who answers a permission question and where messages go.
type setup struct {
	home     session.Home
	settings *settings.Settings
	choice   *modelChoice
	checker  *permission.Checker
	hooks    *hook.Config
	gov      *governance.Governance
	refused  *denials
	opts     agent.Options
	// sandbox runs Bash commands; nil when the settings do not enable it.
	sandbox *sandbox.Sandbox
	// mcp are the MCP servers, started in the background; mcpConfigs
	// configure them.
	mcp        *mcp.Starting
	mcpConfigs []mcp.Config
	// mcpTimeout bounds connecting to one server (MCP_TIMEOUT).
	mcpTimeout time.Duration
	// mcpStarted is when the servers started; mcpGrace is how long after
	// it a headless run waits for them when its prompt does not need them
	// (CAIRN_MCP_GRACE_MS).
	mcpStarted time.Time
	mcpGrace   time.Duration
	// mcpSaid are the MCP warnings a headless run has printed already.
	mcpMu   sync.Mutex
	mcpSaid map[string]bool
	// structured is the --json-schema answer's tool; nil without one.
	structured *tools.StructuredOutput
	// warnings are what the user should read before the session starts.
	warnings []string
	// ctx ends the session when a hook answers "continue": false.
	ctx  context.Context
	stop func()
}

// assemble builds the session's parts. headless turns the permission
// checker's questions into refusals; messages go to out. Call stop when
// the session ends.
func assemble(ctx context.Context, env Env, f *agentFlags, headless bool, out io.Writer) (*setup, error) {
	home, err := env.Home()
	if err != nil {
		return nil, err
	}
	extra, removeExtra, err := f.ext.settingsFiles()
	if err != nil {
		return nil, err
	}
	st, err := settings.Load(home.Dir, env.Cwd, extra...)
	if err != nil {
		removeExtra()
		return nil, err
	}
	s := &setup{home: home, settings: st}
	// Retention runs at most once a day, beside the session; it is stopped
	// (safely: every move can resume) when the session ends.
	stopSweep := startSweep(ctx, env, home)
	ok := false
	defer func() {
		if !ok {
			stopSweep()
			removeExtra()
		}
	}()
	if s.choice, err = chooseModel(env, f.provider, f.model, st); err != nil {
		return nil, err
	}
	userHome, _ := os.UserHomeDir()
	instr, mem, memRules, ctxWarnings := sessionContextOptions(env, home, userHome, st, s.choice)
	builtin := builtinRules(memRules, "the long-term memory folder")
	builtin = append(builtin, builtinRules(sessionReadRules(home, env.Cwd), "the session's own saved results and shell output")...)
	builtin = append(builtin, builtinRules(skillReadRules(home), "the skills' files")...)
	if err := checkDirs(env.Cwd, f.addDirs); err != nil {
		return nil, err
	}
	s.checker, err = permission.New(permission.Options{
		CairnHome: home.Dir, UserHome: userHome, ProjectDir: env.Cwd, Cwd: env.Cwd,
		Mode: permission.Mode(f.permissionMode), AllowedTools: f.allowed, DisallowedTools: f.disallowed,
		AdditionalDirectories: f.addDirs, Headless: headless, SettingsFiles: extra, Builtin: builtin,
	})
	if err != nil {
		return nil, err
	}
	sb, sw, err := newSandbox(st, s.checker, userHome)
	if err != nil {
		return nil, err
	}
	s.sandbox = sb
	s.warnings = append(s.warnings, sw...)
	var hw []string
	s.hooks, hw = hook.Load(st.Files)
	s.warnings = append(append(append(s.warnings, s.checker.Warnings()...), ctxWarnings...), hw...)
	// A hook answering "continue": false ends the run through this cause.
	var halt context.CancelCauseFunc
	s.ctx, halt = context.WithCancelCause(ctx)
	s.stop = func() { halt(nil); stopSweep(); removeExtra() }
	s.refused = &denials{}
	s.gov = governance.New(governance.Options{
		Hooks: s.hooks, ProjectDir: env.Cwd, Cwd: env.Cwd, Checker: s.checker, Refused: s.refused, Messages: out,
		Halt: halt,
	})
	entrypoint := "cli"
	if headless {
		entrypoint = "sdk-cli"
	}
	s.opts = agent.Options{
		Home: home, Cwd: env.Cwd, FitGC: true,
		Model: s.choice.Model, ModelName: s.choice.Name, MaxTokens: s.choice.MaxTokens, Window: s.choice.Window,
		Tools:      withSandbox(tools.Core(), sb),
		Middleware: agent.Middleware{Gate: governance.PermissionGate(s.checker, s.refused)},
		Continue:   f.cont, Resume: f.resume, Fork: f.fork, SessionID: f.sessionID,
		MaxTurns: f.maxTurns, AppendSystemPrompt: f.appendSystem,
		PermissionMode: string(s.checker.Mode()), PlanModes: newPlanModes(s.checker, nil), Entrypoint: entrypoint,
		Mode:               func() string { return string(s.checker.Mode()) },
		ContextManagement:  contextManagement(env, s.choice),
		DisableAutoCompact: truthy(env.Getenv("CAIRN_DISABLE_AUTO_COMPACT")),
		EarlyCompactAt:     earlyCompactAt(env),
		Warn:               func(w string) { fmt.Fprintln(out, "warning:", w) },
		Now:                env.Now,
		Instructions:       instr, Memory: mem,
	}
	s.loadExtensions(env)
	if err := s.headlessOptions(f); err != nil {
		return nil, err
	}
	var aw []string
	s.opts.Tools, aw = withTask(s.opts.Tools, home, env.Cwd)
	s.warnings = append(s.warnings, aw...)
	if collapseEnabled(env, st) {
		s.opts.Collapse = &compact.CollapseConfig{}
	}
	if err := s.withTeamStore(ctx, env, f, out); err != nil {
		return nil, err
	}
	if !s.hooks.Empty() {
		g := s.gov
		s.opts.Middleware = agent.Middleware{
			Gate: g, AfterTool: g.AfterTool, BeforePrompt: g.BeforePrompt, Stop: g,
			PreCompact: g.PreCompact, PostCompact: g.PostCompact,
			SubagentStart: func(ctx context.Context, a agent.Subagent) []engine.Attachment {
				return g.SubagentStart(ctx, hookSubagent(a))
			},
			SubagentStop: func(ctx context.Context, a agent.Subagent, res *engine.Result, again bool) string {
				return g.SubagentStop(ctx, hookSubagent(a), res, again)
			},
		}
	}
	// The MCP servers come last, so no failure after them leaves them
	// running: they close with the session.
	configs, mo, mw, err := mcpConfigsWith(env, home, &f.ext, extra)
	if err != nil {
		return nil, err
	}
	s.warnings = append(s.warnings, mw...)
	// The servers start in the background. The terminal UI opens at once
	// and their tools join at the first turn after all of them have
	// connected or failed; a headless run gives them a short grace before
	// its first request, waits for them longer only if the prompt needs
	// them (awaitMCP), and otherwise takes the tools of the servers still
	// starting at its next request once they are ready.
	s.mcpConfigs, s.mcpTimeout = configs, mo.Timeout
	if s.mcpTimeout <= 0 {
		s.mcpTimeout = mcp.DefaultTimeout
	}
	s.mcpStarted = time.Now()
	s.mcp = mcp.Start(ctx, configs, mo)
	s.opts.Late = lateMCP(s.mcp)
	if headless {
		var w string
		if s.mcpGrace, w = mcpGrace(env.Getenv); w != "" {
			s.warnings = append(s.warnings, w)
		}
		s.opts.LateEachRequest = true
		s.opts.Late = s.reportLate(lateInSteps(s.mcp), out)
	}
	closeMCP := s.mcp.Close
	stop := s.stop
	s.stop = func() { stop(); closeMCP(); _ = sb.Close() }
	ok = true
	return s, nil
}

// lateMCP brings the tools of servers started in the background, once
// all have connected or failed.
func lateMCP(st *mcp.Starting) func() ([]tool.Tool, string, bool) {
	return func() ([]tool.Tool, string, bool) {
		servers := st.Servers()
		if servers == nil {
			return nil, "", false
		}
		return servers.Tools(), servers.Instructions(), true
	}
}

// collapseEnabled reports whether context collapse (SPEC C3) is on:
// CAIRN_CONTEXT_COLLAPSE=1 or "contextCollapse": true in the settings. It
// is off by default: its folds are model requests of their own.
func collapseEnabled(env Env, st *settings.Settings) bool {
	if v := env.Getenv("CAIRN_CONTEXT_COLLAPSE"); v != "" {
		return truthy(v)
	}
	var on bool
	raw, ok := st.Raw["contextCollapse"]
	return ok && json.Unmarshal(raw, &on) == nil && on
}

// builtinRules are rules cairn adds itself, for why.
func builtinRules(rules []string, why string) []permission.Builtin {
	out := make([]permission.Builtin, len(rules))
	for i, r := range rules {
		out[i] = permission.Builtin{Rule: r, Why: why}
	}
	return out
}

// sessionReadRules let the model read back what the session saved beside
// its transcript — large tool results, background shells' output — in
// every mode: they are the session's own files, outside the project.
func sessionReadRules(home session.Home, cwd string) []string {
	dir := home.ProjectDir(cwd)
	return []string{"Read(/" + dir + "/*/tool-results/**)", "Read(/" + dir + "/*/shells/**)"}
}

// sessionStart runs the SessionStart hooks for the opened session.
func (s *setup) sessionStart(ctx context.Context, f *agentFlags, ag *agent.Agent) error {
	s.gov.Attach(ag)
	source := hook.SourceStartup
	if f.cont || f.resume != "" {
		source = hook.SourceResume
	}
	return s.gov.SessionStart(ctx, source, s.choice.Name)
}

func hookSubagent(a agent.Subagent) hook.Subagent {
	return hook.Subagent{ID: a.ID, Type: a.Type, TranscriptPath: a.TranscriptPath}
}
