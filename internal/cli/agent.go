package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/compact"
	"github.com/cairn-dev/cairn/internal/governance"
	"github.com/cairn-dev/cairn/internal/hook"
	"github.com/cairn-dev/cairn/internal/permission"
	"github.com/cairn-dev/cairn/internal/tokens"
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
	pick           bool // -r without an id: pick the session from a list
	fork           bool
	sessionID      string
	model          string
	provider       string
	maxTurns       int
	appendSystem   string
	permissionMode string
	// skipPermissions is --dangerously-skip-permissions.
	skipPermissions bool
	allowed         []string
	disallowed      []string
	addDirs         []string
	// ext are the headless hosts' flags (headless.go).
	ext extFlags
}

func addAgentFlags(root *cobra.Command, env Env) {
	f := &agentFlags{}
	fl := root.Flags()
	fl.BoolVarP(&f.print, "print", "p", false, "run headless: answer the prompt (argument or stdin) and exit")
	fl.StringVar(&f.outputFormat, "output-format", "text", "text, json or stream-json")
	fl.BoolVar(&f.verbose, "verbose", false, "say more on stderr")
	fl.BoolVarP(&f.cont, "continue", "c", false, "continue the newest session of this project")
	fl.StringVarP(&f.resume, "resume", "r", "", "resume a session by `ID` (or its first characters) or transcript path; alone, pick it from a list")
	fl.BoolVar(&f.fork, "fork-session", false, "with --continue or --resume: continue in a new session, leaving the old one as it was")
	fl.StringVar(&f.sessionID, "session-id", "", "the id (a UUID) of the new session")
	fl.StringVar(&f.model, "model", "", "the model to use")
	fl.StringVar(&f.provider, "provider", "", "anthropic or openai (default: whichever API's variables are set)")
	fl.IntVar(&f.maxTurns, "max-turns", 0, "stop after this many model requests (0: no limit)")
	fl.StringVar(&f.appendSystem, "append-system-prompt", "", "text added to the end of the system prompt")
	fl.StringVar(&f.permissionMode, "permission-mode", "", "default, acceptEdits, plan, bypassPermissions or dontAsk (never ask: deny what would ask)")
	fl.BoolVar(&f.skipPermissions, "dangerously-skip-permissions", false, "the same as --permission-mode bypassPermissions: allow every call no deny rule denies")
	fl.StringArrayVar(&f.allowed, "allowedTools", nil, "permission `rules` to allow, comma- or space-separated, e.g. \"Bash(npm test:*) Edit\" (also --allowed-tools)")
	fl.StringArrayVar(&f.disallowed, "disallowedTools", nil, "permission `rules` to deny, as --allowedTools (also --disallowed-tools)")
	fl.StringArrayVar(&f.addDirs, "add-dir", nil, "another directory the session may work in, as the project (repeatable)")
	addExtensionFlags(fl, &f.ext)
	root.Args = args(cobra.ArbitraryArgs)
	root.RunE = func(cmd *cobra.Command, a []string) error {
		f.pick = cmd.Flags().Changed("resume") && f.resume == ""
		return runAgent(cmd.Context(), env, f, a)
	}
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
	if f.skipPermissions {
		if f.permissionMode != "" && f.permissionMode != string(permission.ModeBypass) {
			return usagef("--dangerously-skip-permissions is --permission-mode bypassPermissions; it cannot go with --permission-mode %s", f.permissionMode)
		}
		f.permissionMode = string(permission.ModeBypass)
	}
	if f.permissionMode != "" {
		if _, err := permission.ParseMode(f.permissionMode); err != nil {
			return usageError{err}
		}
	}
	if f.fork && !f.cont && f.resume == "" && !f.pick {
		return usagef("--fork-session needs --continue or --resume: it copies an existing session")
	}
	if f.resume != "" {
		// A mistyped id stops here, before the UI opens or a prompt is
		// read: it is never taken for the prompt or a new session.
		home, err := env.Home()
		if err != nil {
			return err
		}
		if f.resume, err = findSession(ctx, env, home, f.resume, env.Stderr); err != nil {
			return err
		}
	}
	if err := f.ext.check(f); err != nil {
		return err
	}
	prompt := strings.Join(a, " ")
	if !f.print && interactive(env) {
		return runInteractive(ctx, env, f, prompt)
	}
	if !f.print {
		fmt.Fprintln(env.Stderr, "cairn: stdout is not a terminal, so the interactive UI cannot run; running headless as with -p")
	}
	if f.pick {
		return usagef("--resume without a session id opens the session picker, which needs a terminal; give the id (cairn sessions list shows them)")
	}
	if !f.ext.streamInput() {
		var err error
		if prompt, err = headlessPrompt(env, prompt); err != nil {
			return err
		}
	}
	if prompt == "" && !f.ext.streamInput() {
		return usagef("no prompt: give it as an argument (cairn -p \"fix the failing test\") or on stdin")
	}

	s, err := assemble(ctx, env, f, true, env.Stderr)
	if err != nil {
		return err
	}
	defer s.stop()
	ctx = s.ctx
	for _, w := range s.warnings {
		fmt.Fprintln(env.Stderr, "warning:", w)
	}
	// A headless run ends with its turn: a notes update still running then
	// is given a moment, not the interactive 15 s, before it is dropped
	// (the next run updates the notes again).
	s.opts.SessionMemory.Wait = 3 * time.Second
	// It sends what it resumes and shows none of it: the conversation can
	// stay in the transcript's pages.
	s.opts.MapTranscript = true
	ag, err := agent.Open(ctx, s.opts)
	if err != nil {
		return err
	}
	for _, w := range ag.Warnings {
		fmt.Fprintln(env.Stderr, "warning:", w)
	}
	s.awaitMCP(ctx, f, prompt, ag, env.Stderr)
	runErr := s.sessionStart(ctx, f, ag)
	if runErr == nil {
		out := newPrinter(env, f.outputFormat, f.verbose, ag, s.choice, s.refused)
		out.budget, out.structured = f.ext.maxBudgetUSD, s.structured
		out.init(s.checker)
		turn := func(ctx context.Context, prompt string) error {
			if name, rest, ok := slashCommand(prompt); ok && !isExtension(ag, name) {
				return runSlash(ctx, env, out, ag, name, rest)
			}
			return out.run(ctx, prompt)
		}
		if f.ext.streamInput() {
			runErr = runStream(ctx, env, out, ag, turn)
			if prompt != "" {
				fmt.Fprintln(env.Stderr, "warning: with --input-format stream-json the prompts come from stdin; the prompt argument is ignored")
			}
		} else {
			runErr = turn(ctx, prompt)
		}
	}
	var stopped hookStopped
	if errors.As(context.Cause(ctx), &stopped) {
		runErr = stopped
	}
	s.gov.SessionEnd(ctx, hook.EndOther)
	if err := ag.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("finish writing the transcript %s: %w", ag.Path(), err)
	}
	return runErr
}

// denials collects refused calls for the result's permission_denials.
type denials = governance.Denials

// hookStopped ends a run whose hook answered "continue": false.
type hookStopped = governance.HookStopped

// gateWith asks the permission checker about each call, records the
// decision on the call's result line, and keeps the refused calls for the
// result's permission_denials.
func gateWith(c *permission.Checker, refused *denials) func(context.Context, tool.Tool, model.Block) engine.Verdict {
	return governance.PermissionGate(c, refused).Check
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
		rep, err := liveContextReport(ctx, env, ag)
		if err != nil {
			return err
		}
		var b strings.Builder
		printContext(&b, rep)
		return out.finishText(b.String())
	case "compact":
		rep, err := ag.Compact(ctx, rest)
		if noGain := (*compact.NoGainError)(nil); errors.As(err, &noGain) {
			return out.finishText("N" + strings.TrimPrefix(noGain.Error(), "n") + ".\n") // the session is as it was
		}
		if rep != nil {
			out.compacted(rep)
		}
		if err != nil {
			return fmt.Errorf("compaction failed: %w", err)
		}
		return out.finishText(fmt.Sprintf("Compacted: %s (%s → %s tokens).\n", rep.Summary, tokens.Thousands(rep.PreTokens), tokens.Thousands(rep.PostTokens)))
	case "pin":
		pin, err := ag.Pin(ctx, rest)
		if err != nil {
			return err
		}
		return out.finishText(compact.PinnedSay(pin, 0) + "\n")
	case "summary":
		notes, err := ag.Summary(ctx)
		if err != nil {
			return err
		}
		return out.finishText(notes)
	}
	return usagef("unknown command /%s; headless runs know /context, /compact, /pin, /summary and the custom commands and skills of .claude/commands, .claude/skills and their kin (cairn memory explain lists them)", name)
}

// contextManagement reports whether requests may ask the server to clear
// old tool results: only Anthropic's API does, and CAIRN_DISABLE_CONTEXT_
// MANAGEMENT=1 turns it off for compatible servers that lack the beta.
func contextManagement(env Env, c *modelChoice) bool {
	return c.Provider == "anthropic" && !truthy(env.Getenv("CAIRN_DISABLE_CONTEXT_MANAGEMENT"))
}

// earlyCompactAt reads CAIRN_EARLY_COMPACT_AT: the context size, in
// tokens, at which the session compacts to its notes before the
// auto-compaction threshold; "off" (or 0, or a negative number) never
// does; unset or unreadable is cairn's default.
func earlyCompactAt(env Env) int64 {
	v := strings.TrimSpace(env.Getenv("CAIRN_EARLY_COMPACT_AT"))
	if v == "" {
		return 0
	}
	if strings.EqualFold(v, "off") {
		return -1
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0
	}
	if n <= 0 {
		return -1
	}
	return n
}

// truthy reads an environment flag: 1, true, yes or on.
func truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// startSweep runs the daily retention sweep in the background and returns
// a function that stops it and waits.
func startSweep(ctx context.Context, env Env, home session.Home) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := session.MaybeSweep(ctx, home, env.Now(), sweepOptions(home, env.Cwd, env.Now())); err != nil && ctx.Err() == nil {
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
