package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/compact"
	"github.com/cairn-dev/cairn/internal/extension"
	"github.com/cairn-dev/cairn/internal/filemap"
	"github.com/cairn-dev/cairn/internal/gitinfo"
	"github.com/cairn-dev/cairn/internal/instructions"
	"github.com/cairn-dev/cairn/internal/memory"
	"github.com/cairn-dev/cairn/internal/prompt"
	"github.com/cairn-dev/cairn/internal/settings"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/transcript"
)

// contextReport is what `cairn context` and /context print: the next
// request's size as the auto-compaction trigger counts it, and a breakdown.
type contextReport struct {
	SessionID string `json:"sessionId"`
	Model     string `json:"model"`
	Window    struct {
		Size          int64 `json:"size"`
		Effective     int64 `json:"effective"`
		AutoCompactAt int64 `json:"autoCompactAt"`
		WarnAt        int64 `json:"warnAt"`
	} `json:"window"`
	Used             int64   `json:"used"`
	PercentUsed      float64 `json:"percentUsed"`
	UntilAutoCompact int64   `json:"untilAutoCompact"`
	// Source says how Used was found: the last response's reported usage
	// plus estimates, or estimates alone.
	Source    string `json:"source"`
	Breakdown struct {
		System       int64 `json:"system"`
		Tools        int64 `json:"tools"`
		Instructions int64 `json:"instructions"`
		Memory       int64 `json:"memory"`
		// Skills is the listing of the skills (and the commands the model
		// may run) the conversation carries, or the first prompt will.
		Skills      int64 `json:"skills"`
		Messages    int64 `json:"messages"`
		ToolResults int64 `json:"toolResults"`
	} `json:"breakdown"`
	// Layers is what each compaction layer freed since the last
	// compaction, and what that compaction did.
	Layers compact.Savings `json:"layers"`
}

func newContextCmd(env Env) *cobra.Command {
	var asJSON bool
	var modelName string
	cmd := &cobra.Command{
		Use:   "context [ID|PATH]",
		Short: "Show what the next request of a session would hold, in tokens, against the window",
		Long: "Show what the next request of a session would hold, in tokens, against the window. " +
			"Without a session, this project's newest (the one `cairn -c` continues).",
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			ref, err := sessionRef(cmd, env, a)
			if err != nil {
				return err
			}
			// Mapped: the report counts what the messages hold, and a
			// result's size is told without reading it, so the file's
			// contents stay out of the process (as a headless resume's).
			// A file cut shorter meanwhile is an error, not a crash.
			conv, err := loadSession(cmd, env, ref, transcript.LoadOptions{Map: true})
			if err != nil {
				return err
			}
			rep, err := guardedContextReport(cmd.Context(), env, conv, modelName, nil)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(env.Stdout, rep)
			}
			printContext(env.Stdout, rep)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document")
	cmd.Flags().StringVar(&modelName, "model", "", "the model whose window to measure against (default: the session's)")
	return cmd
}

// sessionRef is the session a command's arguments name: the one given,
// else this project's newest.
func sessionRef(cmd *cobra.Command, env Env, a []string) (string, error) {
	if len(a) > 0 {
		return a[0], nil
	}
	home, err := env.Home()
	if err != nil {
		return "", err
	}
	info, err := session.Latest(cmd.Context(), home, env.Cwd)
	if err != nil {
		return "", err
	}
	return info.Path, nil
}

// liveContextReport is /context of an open session: its conversation as
// the transcript has it, measured with what the session knows of its
// next request. Entries the session kept from its resume may be in the
// transcript's mapping, so the report is built under filemap.Guard
// (guardedContextReport).
func liveContextReport(ctx context.Context, env Env, a *agent.Agent) (*contextReport, error) {
	conv, err := a.Conversation(ctx)
	if err != nil {
		return nil, err
	}
	live, err := liveOf(ctx, a)
	if err != nil {
		return nil, err
	}
	return guardedContextReport(ctx, env, conv, a.ModelName(), live)
}

// guardedContextReport is buildContextReport under filemap.Guard: a
// conversation loaded mapped whose file was cut shorter since is an
// error naming it, not a crash.
func guardedContextReport(ctx context.Context, env Env, conv *transcript.Conversation, modelName string, live *liveSession) (rep *contextReport, err error) {
	err = filemap.Guard(func() error {
		rep, err = buildContextReport(ctx, env, conv, modelName, live)
		return err
	})
	return rep, err
}

// liveSession is what an open session knows of its next request: the
// size the trigger and the meter use, its system prompt and its tools.
type liveSession struct {
	used   int64
	system []model.SystemBlock
	specs  []model.ToolSpec
}

// liveOf measures an open session for its /context report.
func liveOf(ctx context.Context, a *agent.Agent) (*liveSession, error) {
	used, err := a.Used(ctx)
	if err != nil {
		return nil, err
	}
	system, err := a.System(ctx)
	if err != nil {
		return nil, err
	}
	return &liveSession{used: used, system: system, specs: a.ToolSpecs()}, nil
}

// buildContextReport measures conv's next request. live is the open
// session when there is one (/context): its size is then the meter's,
// and its tools and system prompt are counted as they are. Without it
// (`cairn context`), the tools are those a session here starts with
// (sessionToolSpecs) and the size the transcript's.
//
// Every number shared with /memory and the meter comes from one
// function: the tools from tokens.EstimateTools, the instructions from
// instructionTokens (or the reminders sent), the memory from
// memoryTokens, the skills from skillTokens (or the listings sent), the
// percentage from Window.PercentUsed.
func buildContextReport(ctx context.Context, env Env, conv *transcript.Conversation, modelName string, live *liveSession) (*contextReport, error) {
	rep := &contextReport{SessionID: conv.SessionID}
	cwd := env.Cwd
	for _, e := range conv.Entries {
		if e.CWD != "" {
			cwd = e.CWD
		}
		if m, ok, _ := e.DecodeMessage(); ok && m.Model != "" && m.Model != transcript.SyntheticModel && modelName == "" {
			rep.Model = m.Model
		}
	}
	if modelName != "" {
		rep.Model = modelName
	}
	if rep.Model == "" {
		rep.Model = env.Getenv("ANTHROPIC_MODEL")
	}
	if rep.Model == "" {
		rep.Model = DefaultAnthropicModel
	}
	home, err := env.Home()
	if err != nil {
		return nil, err
	}
	st, err := settings.Load(home.Dir, cwd)
	if err != nil {
		return nil, err
	}
	w, err := windowOf(env, rep.Model, st)
	if err != nil {
		return nil, err
	}
	rep.Window.Size, rep.Window.Effective, rep.Window.AutoCompactAt, rep.Window.WarnAt = w.Size, w.Effective(), w.AutoCompactAt(), w.WarnAt()

	rep.Breakdown.Memory = memoryTokens(env, home, st, cwd)
	var system []model.SystemBlock
	var specs []model.ToolSpec
	if live != nil {
		system, specs = live.system, live.specs
	} else {
		system, err = prompt.NewBuilder(prompt.Cairn(prompt.Options{Cwd: cwd, IsGitRepo: gitinfo.Root(cwd) != "", ModelName: rep.Model, TokenBudgets: true})...).Build(ctx)
		if err != nil {
			return nil, err
		}
		specs = sessionToolSpecs(home, cwd)
	}
	for _, b := range system {
		rep.Breakdown.System += tokens.Estimate(b.Text)
	}
	if live != nil { // the memory section is in the session's system prompt
		rep.Breakdown.System = max(0, rep.Breakdown.System-rep.Breakdown.Memory)
	}
	rep.Breakdown.Tools = tokens.EstimateTools(specs)
	// What the session sends: cleared results and collapsed spans as a
	// resume sends them.
	msgs := compact.Resumed(conv)
	for _, m := range msgs {
		for _, b := range m.Content {
			n := tokens.EstimateBlock(b)
			switch {
			case b.Type == model.BlockToolResult:
				rep.Breakdown.ToolResults += n
			case b.Type == model.BlockText && strings.HasPrefix(b.Text, "<system-reminder>") && strings.Contains(b.Text, "Contents of "):
				rep.Breakdown.Instructions += n
			case b.Type == model.BlockText && agent.IsSkillListing(b.Text):
				rep.Breakdown.Skills += n
			default:
				rep.Breakdown.Messages += n
			}
		}
	}
	if len(msgs) == 0 { // the first prompt will carry them
		at := env
		at.Cwd = cwd
		rep.Breakdown.Instructions = instructionTokens(instructions.Load(instructionOptions(at, home, userHomeOf(env))).Files)
		rep.Breakdown.Skills = skillTokens(home, cwd)
	}
	bd := rep.Breakdown
	estimate := bd.System + bd.Tools + bd.Instructions + bd.Memory + bd.Skills + bd.Messages + bd.ToolResults
	rep.Used, rep.Source = estimate, "estimate"
	switch {
	case live != nil:
		rep.Used = live.used
		if hasUsage(conv) {
			rep.Source = "usage+estimate"
		}
	case hasUsage(conv):
		rep.Used, rep.Source = conv.ContextTokens(), "usage+estimate"
	}
	rep.Layers = compact.SavingsOf(conv)
	rep.PercentUsed = w.PercentUsed(rep.Used)
	rep.UntilAutoCompact = max(0, w.AutoCompactAt()-rep.Used)
	return rep, nil
}

// instructionTokens is what the instruction files that load at a
// session's start weigh in its context: the first prompt's context
// reminder that carries them (agent.StartContext), 0 without any. It is
// the number /memory prints and /context shows before the first prompt.
func instructionTokens(files []instructions.File) int64 {
	if len(files) == 0 {
		return 0
	}
	return tokens.EstimateBlock(model.TextBlock(agent.StartContext(files, "2006-01-02")))
}

// skillTokens is what the listing of the skills and commands of the
// project in cwd weighs in a new session's context: the reminder its
// first prompt carries (agent.SkillListing), 0 without any.
func skillTokens(home session.Home, cwd string) int64 {
	listing := agent.SkillListing(extension.Load(extension.Options{ProjectDir: cwd, CairnHome: home.Dir}))
	if listing == "" {
		return 0
	}
	return tokens.EstimateBlock(model.TextBlock(listing))
}

// memoryTokens is what long-term memory weighs in a session's context:
// the system prompt's memory section with its index (0 when memory is
// off). /memory and /context both print it.
func memoryTokens(env Env, home session.Home, st *settings.Settings, cwd string) int64 {
	if !memoryEnabled(env, st) {
		return 0
	}
	return tokens.Estimate(memory.Prompt(memory.Dir(home, cwd)))
}

// sessionToolSpecs are the tools every session here starts with, as
// `cairn context` counts them for a session that is not open: cairn's
// own tools with the Task tool of this project's subagents and Snip.
// MCP servers' tools are not counted: they are known only once the
// servers answer.
func sessionToolSpecs(home session.Home, cwd string) []model.ToolSpec {
	ts, _ := withTask(tools.Core(), home, cwd)
	ts = append(ts, compact.NewSnip(compact.SnipConfig{}).Tool())
	specs := make([]model.ToolSpec, 0, len(ts))
	for _, t := range ts {
		specs = append(specs, t.Spec())
	}
	return specs
}

// userHomeOf is the person's home folder, where user-wide instruction
// files are looked for: $HOME of env, else the process's.
func userHomeOf(env Env) string {
	if env.Getenv != nil {
		if h := env.Getenv("HOME"); h != "" {
			return h
		}
	}
	h, _ := os.UserHomeDir()
	return h
}

// hasUsage reports whether any response of the conversation reported usage
// that counts (not a synthetic reply, not a preserved message).
func hasUsage(conv *transcript.Conversation) bool {
	for i := range conv.Entries {
		e := conv.Entries[i]
		if e.Type != transcript.TypeAssistant || conv.Preserved[e.UUID] {
			continue
		}
		if m, ok, _ := e.DecodeMessage(); ok && m.Usage != nil && m.Model != transcript.SyntheticModel {
			return true
		}
	}
	return false
}

func printContext(w io.Writer, r *contextReport) {
	fmt.Fprintf(w, "Session %s · %s\n", r.SessionID, r.Model)
	fmt.Fprintf(w, "Context: %s of %s tokens (%s of the effective window, %s)\n", tokens.Thousands(r.Used), tokens.Thousands(r.Window.Effective), tokens.Percent(r.PercentUsed), r.Source)
	fmt.Fprintf(w, "Auto-compaction at %s: %s tokens to go\n\n", tokens.Thousands(r.Window.AutoCompactAt), tokens.Thousands(r.UntilAutoCompact))
	rows := []struct {
		name string
		n    int64
	}{
		{"System prompt", r.Breakdown.System}, {"Tools", r.Breakdown.Tools}, {"Instructions", r.Breakdown.Instructions},
		{"Memory", r.Breakdown.Memory}, {"Skills", r.Breakdown.Skills}, {"Messages", r.Breakdown.Messages}, {"Tool results", r.Breakdown.ToolResults},
	}
	for _, row := range rows {
		fmt.Fprintf(w, "  %-14s %10s\n", row.name, tokens.Thousands(row.n))
	}
	printLayers(w, r.Layers)
	fmt.Fprintf(w, "\nWindow %s, effective %s (less the reply's reserve), warning at %s.\n", tokens.Thousands(r.Window.Size), tokens.Thousands(r.Window.Effective), tokens.Thousands(r.Window.WarnAt))
}

// printLayers says what each compaction layer freed, the layers that did
// nothing left out.
func printLayers(w io.Writer, l compact.Savings) {
	rows := []struct {
		name, unit string
		s          compact.Saving
	}{
		{"Offloaded", "result", l.Offload}, {"Snipped", "snip", l.Snip},
		{"Micro-compacted", "clearing", l.Micro}, {"Collapsed", "commit", l.Collapse},
	}
	header := false
	for _, row := range rows {
		if row.s.Count == 0 {
			continue
		}
		if !header {
			fmt.Fprintln(w, "\nFreed since the last compaction:")
			header = true
		}
		unit := row.unit
		if row.s.Count != 1 {
			unit += "s"
		}
		cost := ""
		if row.unit != "result" { // offloading changes no prefix already cached
			cost = fmt.Sprintf("; %s tokens of cache writes after", tokens.Thousands(row.s.Writes))
		}
		fmt.Fprintf(w, "  %-16s %9s  (%d %s%s)\n", row.name, tokens.Thousands(row.s.Tokens), row.s.Count, unit, cost)
	}
	if c := l.Compaction; c != nil {
		fmt.Fprintf(w, "\nLast compaction (%s): %s tokens before", c.Trigger, tokens.Thousands(c.PreTokens))
		if c.PostTokens > 0 {
			fmt.Fprintf(w, ", %s after", tokens.Thousands(c.PostTokens))
		}
		if c.Dropped > 0 {
			fmt.Fprintf(w, "; %s summarised away in all", tokens.Thousands(c.Dropped))
		}
		if c.Writes > 0 {
			fmt.Fprintf(w, "; the compacted prefix cost %s tokens of cache writes", tokens.Thousands(c.Writes))
		}
		fmt.Fprintln(w, ".")
	}
}
