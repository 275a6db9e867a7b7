package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/governance"
	"github.com/cairn-dev/cairn/internal/hook"
	"github.com/cairn-dev/cairn/internal/settings"
	"github.com/cairn-dev/cairn/internal/tui"
)

func newHooksCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hooks",
		Short: "Inspect the hooks configured for this project",
	}
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "Show every hook a session here runs: its event, matcher, command and settings file",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := env.Home()
			if err != nil {
				return err
			}
			st, err := settings.Load(home.Dir, env.Cwd)
			if err != nil {
				return err
			}
			cfg, warnings := hook.Load(st.Files)
			rep := hooksReport{Hooks: cfg.List(), Files: st.Files, Warnings: warnings}
			if rep.Hooks == nil {
				rep.Hooks = []hook.Listed{}
			}
			if rep.Files == nil {
				rep.Files = []string{}
			}
			if rep.Warnings == nil {
				rep.Warnings = []string{}
			}
			if asJSON {
				return writeJSON(env.Stdout, rep)
			}
			printHooks(env.Stdout, rep)
			return nil
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print one JSON document")
	cmd.AddCommand(list)
	return cmd
}

type hooksReport struct {
	Hooks []hook.Listed `json:"hooks"`
	// Files are the settings files read, lowest priority first.
	Files    []string `json:"files"`
	Warnings []string `json:"warnings"`
}

func printHooks(w io.Writer, rep hooksReport) {
	if len(rep.Hooks) == 0 {
		fmt.Fprintln(w, `No hooks are configured. Add them under "hooks" in a settings file (.claude/settings.json, .cairn/settings.json or the user's).`)
	}
	var last hook.Event
	for _, h := range rep.Hooks {
		if h.Event != last {
			fmt.Fprintf(w, "%s\n", h.Event)
			last = h.Event
		}
		matcher := h.Matcher
		if matcher == "" {
			matcher = "*"
		}
		timeout := ""
		if h.Timeout > 0 {
			timeout = fmt.Sprintf(", timeout %s", h.Timeout)
		}
		fmt.Fprintf(w, "  [%s] %s\n      from %s%s\n", matcher, h.Command, h.File, timeout)
	}
	for _, warning := range rep.Warnings {
		fmt.Fprintln(w, "warning:", warning)
	}
}

// notifying wraps the UI's Asker so that the Notification hooks hear of
// each question put to the person, in the background: the question
// never waits for them.
func notifying(g *governance.Governance, ask func(context.Context, tui.Question) tui.Answer) func(context.Context, tui.Question) tui.Answer {
	return func(ctx context.Context, q tui.Question) tui.Answer {
		what := "cairn needs your permission to use " + q.Tool
		if q.Tool == "" || strings.EqualFold(q.Tool, "ExitPlanMode") {
			what = "cairn needs your attention"
		}
		go g.Notify(ctx, hook.NotifyPermission, what)
		return ask(ctx, q)
	}
}
