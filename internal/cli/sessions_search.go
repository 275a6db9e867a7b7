package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/session"
)

func newSessionsSearchCmd(env Env) *cobra.Command {
	var all, asJSON, fromStore bool
	cmd := &cobra.Command{
		Use:   "search QUERY...",
		Short: "Search the text of this project's sessions (every project's with --all)",
		Long: "Search the text of this project's sessions (every project's with --all). " +
			"The words of QUERY may come quoted or not: `search fix login` is `search \"fix login\"`.",
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			query := strings.Join(a, " ")
			if strings.TrimSpace(query) == "" {
				return usagef("the search query is empty; give the text to look for")
			}
			home, err := env.Home()
			if err != nil {
				return err
			}
			var matches []session.Match
			if fromStore {
				matches, err = storeSearch(cmd.Context(), env, query, all)
			} else {
				matches, err = session.Search(cmd.Context(), home, session.SearchOptions{
					Query: query, Cwd: env.Cwd, All: all, Warn: warner(env),
				})
			}
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(env.Stdout, matches)
			}
			if len(matches) == 0 {
				fmt.Fprintf(env.Stdout, "No matches for %q.\n", query)
				return nil
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			sessions := map[string]bool{}
			for _, m := range matches {
				sessions[m.Path] = true
				when := "-"
				if !m.Timestamp.IsZero() {
					when = m.Timestamp.UTC().Format("2006-01-02 15:04")
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", shortID(m.SessionID), when, m.Snippet)
			}
			tw.Flush()
			fmt.Fprintf(env.Stdout, "%d %s in %d %s.\n", len(matches), plural(len(matches), "match", "matches"),
				len(sessions), plural(len(sessions), "session", "sessions"))
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "search the sessions of every project")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document")
	cmd.Flags().BoolVar(&fromStore, "store", false, "search the team store's sessions of this project (every project's with --all)")
	return cmd
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
