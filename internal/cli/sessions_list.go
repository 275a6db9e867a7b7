package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/session"
)

func newSessionsListCmd(env Env) *cobra.Command {
	var all, asJSON, fromStore bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List this project's sessions (every project's with --all), newest first",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := env.Home()
			if err != nil {
				return err
			}
			var infos []session.Info
			if fromStore {
				infos, err = storeList(cmd.Context(), env, all)
			} else {
				infos, err = session.List(cmd.Context(), home, session.ListOptions{Cwd: env.Cwd, All: all, Warn: warner(env)})
			}
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(env.Stdout, infos)
			}
			if len(infos) == 0 {
				if all {
					fmt.Fprintf(env.Stdout, "No sessions under %s yet.\n", home.Projects())
				} else {
					fmt.Fprintf(env.Stdout, "No sessions for %s yet; `cairn sessions list --all` shows every project's.\n", env.Cwd)
				}
				return nil
			}
			printSessions(env.Stdout, infos, all, env.Now())
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "list the sessions of every project")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document")
	cmd.Flags().BoolVar(&fromStore, "store", false, "list the team store's sessions of this project (every project's with --all)")
	return cmd
}

// warner prints warnings to stderr.
func warner(env Env) func(string) {
	return func(s string) { fmt.Fprintln(env.Stderr, "warning:", s) }
}

// printSessions renders a listing for people: short ids, ages, counts,
// sizes and first prompts in aligned columns.
func printSessions(w io.Writer, infos []session.Info, withProject bool, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := "ID\tMODIFIED\tMSGS\tSIZE\t"
	if withProject {
		header += "PROJECT\t"
	}
	fmt.Fprintln(tw, header+"FIRST PROMPT")
	for _, in := range infos {
		row := fmt.Sprintf("%s\t%s\t%d\t%s\t", shortID(in.SessionID), ago(now, in.Modified), in.Messages, humanBytes(in.Bytes))
		if withProject {
			row += clip(in.Project, 40, true) + "\t"
		}
		prompt := in.FirstPrompt
		if prompt == "" {
			prompt = "(no prompt)"
		}
		if in.Title != "" {
			// A name given with /rename comes first, as Claude Code's
			// picker shows it.
			prompt = in.Title + " · " + prompt
		}
		fmt.Fprintln(tw, row+clip(prompt, 60, false))
	}
	tw.Flush()
}

// shortID is the first block of a UUID, enough to tell sessions apart by
// eye; other names are kept whole.
func shortID(id string) string {
	if len(id) == 36 && id[8] == '-' {
		return id[:8]
	}
	return id
}

// ago renders t relative to now, switching to a date after a week.
func ago(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < 0:
		return t.UTC().Format("2006-01-02 15:04")
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	case d < 7*24*time.Hour:
		return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
	}
	return t.UTC().Format("2006-01-02")
}

func humanBytes(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000*1000:
		return fmt.Sprintf("%.0f KB", float64(n)/1e3)
	case n < 1000*1000*1000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.1f GB", float64(n)/1e9)
}

// clip shortens s to n characters with "…"; fromLeft keeps the end (the
// telling part of a path).
func clip(s string, n int, fromLeft bool) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	if fromLeft {
		return "…" + string(r[len(r)-n+1:])
	}
	return string(r[:n-1]) + "…"
}
