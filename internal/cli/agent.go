package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/permission"
	"github.com/cairn-dev/cairn/internal/settings"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
)

// agentFlags are the flags of `cairn` and `cairn -p`, Claude Code's names.
type agentFlags struct {
	print          bool
	outputFormat   string
	verbose        bool
	cont           bool
	resume         string
	fork           bool
	sessionID      string
	model          string
	provider       string
	maxTurns       int
	appendSystem   string
	permissionMode string
	allowed        []string
	disallowed     []string
}

func addAgentFlags(root *cobra.Command, env Env) {
	f := &agentFlags{}
	fl := root.Flags()
	fl.BoolVarP(&f.print, "print", "p", false, "run headless: answer the prompt (argument or stdin) and exit")
	fl.StringVar(&f.outputFormat, "output-format", "text", "text, json or stream-json")
	fl.BoolVar(&f.verbose, "verbose", false, "say more on stderr")
	fl.BoolVarP(&f.cont, "continue", "c", false, "continue the newest session of this project")
	fl.StringVarP(&f.resume, "resume", "r", "", "resume a session by id or transcript path")
	fl.BoolVar(&f.fork, "fork-session", false, "with --continue or --resume: continue in a new session, leaving the old one as it was")
	fl.StringVar(&f.sessionID, "session-id", "", "the id (a UUID) of the new session")
	fl.StringVar(&f.model, "model", "", "the model to use")
	fl.StringVar(&f.provider, "provider", "", "anthropic or openai (default: whichever API's variables are set)")
	fl.IntVar(&f.maxTurns, "max-turns", 0, "stop after this many model requests (0: no limit)")
	fl.StringVar(&f.appendSystem, "append-system-prompt", "", "text added to the end of the system prompt")
	fl.StringVar(&f.permissionMode, "permission-mode", "", "default, acceptEdits, plan or bypassPermissions")
	fl.StringSliceVar(&f.allowed, "allowedTools", nil, `permission rules to allow, e.g. "Bash(npm test:*)" Edit`)
	fl.StringSliceVar(&f.disallowed, "disallowedTools", nil, "permission rules to deny")
	root.Args = args(cobra.ArbitraryArgs)
	root.RunE = func(cmd *cobra.Command, a []string) error { return runAgent(cmd.Context(), env, f, a) }
}

func runAgent(ctx context.Context, env Env, f *agentFlags, a []string) error {
	switch f.outputFormat {
	case "text", "json", "stream-json":
	default:
		return usagef("--output-format must be text, json or stream-json, not %q", f.outputFormat)
	}
	if f.sessionID != "" {
		if _, err := uuid.Parse(f.sessionID); err != nil {
			return usagef("--session-id %q is not a UUID", f.sessionID)
		}
	}
	if f.permissionMode != "" {
		if _, err := permission.ParseMode(f.permissionMode); err != nil {
			return usageError{err}
		}
	}
	if f.fork && !f.cont && f.resume == "" {
		return usagef("--fork-session needs --continue or --resume: it copies an existing session")
	}
	prompt := strings.Join(a, " ")
	if !f.print {
		// The terminal UI is not built yet: run headless and say so.
		fmt.Fprintln(env.Stderr, "cairn: the interactive UI is not available yet; running headless as with -p")
	}
	if prompt == "" && env.Stdin != nil {
		if file, ok := env.Stdin.(*os.File); !ok || !isTerminal(file) {
			b, err := io.ReadAll(env.Stdin)
			if err != nil {
				return fmt.Errorf("read the prompt from stdin: %w", err)
			}
			prompt = strings.TrimSpace(string(b))
		}
	}
	if prompt == "" {
		return usagef("no prompt: give it as an argument (cairn -p \"fix the failing test\") or on stdin")
	}

	home, err := env.Home()
	if err != nil {
		return err
	}
	st, err := settings.Load(home.Dir, env.Cwd)
	if err != nil {
		return err
	}
	// Retention runs at most once a day, beside the session; it is stopped
	// (safely: every move can resume) when the session ends.
	stopSweep := startSweep(ctx, env, home)
	defer stopSweep()
	choice, err := chooseModel(env, f.provider, f.model, st)
	if err != nil {
		return err
	}
	userHome, _ := os.UserHomeDir()
	checker, err := permission.New(permission.Options{
		CairnHome: home.Dir, UserHome: userHome, ProjectDir: env.Cwd, Cwd: env.Cwd,
		Mode: permission.Mode(f.permissionMode), AllowedTools: f.allowed, DisallowedTools: f.disallowed,
		Headless: true,
	})
	if err != nil {
		return err
	}
	for _, w := range checker.Warnings() {
		fmt.Fprintln(env.Stderr, "warning:", w)
	}
	refused := &denials{}
	ag, err := agent.Open(ctx, agent.Options{
		Home: home, Cwd: env.Cwd,
		Model: choice.Model, ModelName: choice.Name, MaxTokens: choice.MaxTokens, Window: choice.Window,
		Tools:    tools.Core(),
		Gate:     gateWith(checker, refused),
		Continue: f.cont, Resume: f.resume, Fork: f.fork, SessionID: f.sessionID,
		MaxTurns: f.maxTurns, AppendSystemPrompt: f.appendSystem,
		PermissionMode: string(checker.Mode()), Entrypoint: "sdk-cli",
		Now: env.Now,
	})
	if err != nil {
		return err
	}
	for _, w := range ag.Warnings {
		fmt.Fprintln(env.Stderr, "warning:", w)
	}
	out := newPrinter(env, f.outputFormat, f.verbose, ag, choice, refused)
	out.init(checker)
	var runErr error
	if name, rest, ok := slashCommand(prompt); ok {
		runErr = runSlash(ctx, env, out, ag, name, rest)
	} else {
		runErr = out.run(ctx, prompt)
	}
	if err := ag.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("finish writing the transcript %s: %w", ag.Path(), err)
	}
	return runErr
}

// gateWith asks the permission checker about each call, records the
// decision on the call's result line, and keeps the refused calls for the
// result's permission_denials.
func gateWith(c *permission.Checker, refused *denials) func(context.Context, tool.Tool, model.Block) engine.Verdict {
	return func(ctx context.Context, t tool.Tool, call model.Block) engine.Verdict {
		d := c.Check(ctx, call.Name, call.Input, t.ReadOnly(call.Input), t.Destructive(call.Input))
		v := engine.Verdict{Allow: d.Behavior == permission.Allow, Reason: d.Reason, Record: d.Record(c.Mode())}
		if !v.Allow {
			refused.add(call)
		}
		return v
	}
}

// denials collects refused calls; safe for concurrent use.
type denials struct {
	mu    sync.Mutex
	calls []map[string]any
}

func (d *denials) add(call model.Block) {
	d.mu.Lock()
	d.calls = append(d.calls, map[string]any{"tool_name": call.Name, "tool_use_id": call.ID, "tool_input": json.RawMessage(call.Input)})
	d.mu.Unlock()
}

func (d *denials) list() []map[string]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]map[string]any{}, d.calls...)
}

// errReported is returned after the printer has already described the
// failure on stdout; only the exit code remains to set.
var errReported = errors.New("the turn failed")

// slashCommand splits "/name args" into its parts.
func slashCommand(prompt string) (name, rest string, ok bool) {
	if !strings.HasPrefix(prompt, "/") || strings.HasPrefix(prompt, "//") {
		return "", "", false
	}
	name, rest, _ = strings.Cut(prompt[1:], " ")
	if name == "" || strings.ContainsAny(name, "/\\") {
		return "", "", false // a path, not a command
	}
	return name, strings.TrimSpace(rest), true
}

// runSlash runs a slash command given as the prompt of a headless run.
func runSlash(ctx context.Context, env Env, out *printer, ag *agent.Agent, name, rest string) error {
	switch name {
	case "context":
		conv, err := ag.Conversation(ctx)
		if err != nil {
			return err
		}
		rep, err := buildContextReport(ctx, env, conv, ag.ModelName())
		if err != nil {
			return err
		}
		var b strings.Builder
		printContext(&b, rep)
		return out.finishText(b.String())
	case "compact", "summary":
		return fmt.Errorf("/%s is not available in this version of cairn yet", name)
	}
	return usagef("unknown command /%s; headless runs know /context, /compact and /summary", name)
}

// startSweep runs the daily retention sweep in the background and returns
// a function that stops it and waits.
func startSweep(ctx context.Context, env Env, home session.Home) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := session.MaybeSweep(ctx, home, env.Now(), env.Cwd); err != nil && ctx.Err() == nil {
			fmt.Fprintln(env.Stderr, "warning: session cleanup:", err)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// isTerminal reports whether f is a terminal (a character device).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
