package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/settings"
	"github.com/cairn-dev/cairn/session"
)

func newSessionsCleanupCmd(env Env) *cobra.Command {
	var (
		olderThan      int
		dryRun, asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Move sessions idle longer than cleanupPeriodDays (default 30) to the trash",
		Long: "Move sessions idle longer than cleanupPeriodDays (default 30) to the trash, " +
			"and delete what has been in the trash longer than trashRetentionDays (default 30). " +
			"A session counts as idle only when both the last activity recorded in it and its file's " +
			"modification time are older than the cutoff; sessions open in another process stay. " +
			"`cairn sessions restore ID` brings a trashed session back.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("older-than") && olderThan < 0 {
				return usagef("--older-than must be 0 or more days, not %d", olderThan)
			}
			home, err := env.Home()
			if err != nil {
				return err
			}
			s, err := settings.Load(home.Dir, env.Cwd)
			if err != nil {
				return fmt.Errorf("nothing was cleaned up: %w", err)
			}
			opts := cleanupOptions(s, env.Now())
			if cmd.Flags().Changed("older-than") {
				opts.MaxAge = time.Duration(olderThan) * 24 * time.Hour
				opts.KeepSessions = false
			} else if opts.KeepSessions {
				fmt.Fprintf(env.Stderr, "warning: cleanupPeriodDays is 0 in %s, so no session is expired; use --older-than DAYS to clean up anyway\n", s.Source["cleanupPeriodDays"])
			}
			opts.DryRun = dryRun
			rep, err := session.Cleanup(cmd.Context(), home, opts)
			if err != nil {
				return err
			}
			if asJSON {
				if err := writeJSON(env.Stdout, rep); err != nil {
					return err
				}
			} else {
				printCleanup(env.Stdout, rep, opts)
			}
			for _, e := range rep.Errors {
				fmt.Fprintln(env.Stderr, "warning:", e)
			}
			if len(rep.Errors) > 0 {
				return fmt.Errorf("cleanup finished with %d %s (see above)", len(rep.Errors), plural(len(rep.Errors), "problem", "problems"))
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&olderThan, "older-than", 0, "expire sessions idle longer than this many days instead of cleanupPeriodDays")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show what would happen and change nothing")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document")
	return cmd
}

// printCleanup tells a person what cleanup did, or would do.
func printCleanup(w io.Writer, rep *session.CleanupReport, opts session.CleanupOptions) {
	verb := map[bool][2]string{false: {"Moved", "Deleted"}, true: {"Would move", "Would delete"}}[rep.DryRun]
	if len(rep.Trashed) > 0 {
		fmt.Fprintf(w, "%s %d %s to the trash (bring one back with `cairn sessions restore ID`):\n",
			verb[0], len(rep.Trashed), plural(len(rep.Trashed), "session", "sessions"))
		for _, s := range rep.Trashed {
			fmt.Fprintf(w, "  %s  last active %s  %s\n", s.SessionID, day(s.LastActivity, s.Modified), s.Path)
		}
	}
	for _, k := range rep.Kept {
		fmt.Fprintf(w, "Kept %s: %s\n", k.SessionID, k.Reason)
	}
	if len(rep.Purged) > 0 {
		fmt.Fprintf(w, "%s %d %s from the trash for good:\n", verb[1], len(rep.Purged), plural(len(rep.Purged), "session", "sessions"))
		for _, p := range rep.Purged {
			fmt.Fprintf(w, "  %s  trashed %s\n", p.SessionID, p.TrashedAt.UTC().Format("2006-01-02"))
		}
	}
	if len(rep.Trashed)+len(rep.Kept)+len(rep.Purged) == 0 {
		if opts.KeepSessions {
			fmt.Fprintln(w, "Nothing to clean up.")
			return
		}
		fmt.Fprintf(w, "Nothing to clean up: no session has been idle since before %s.\n", rep.Cutoff.Format("2006-01-02"))
	}
}

// day is the date of t, or of fallback when t is unknown.
func day(t, fallback time.Time) string {
	if t.IsZero() {
		t = fallback
	}
	return t.UTC().Format("2006-01-02")
}

// cleanupOptions turns cleanupPeriodDays and trashRetentionDays into
// cleanup options at now. cleanupPeriodDays 0 means sessions are not kept
// at all (Claude Code then writes none), so there is nothing to expire:
// sessions are left alone.
func cleanupOptions(s *settings.Settings, now time.Time) session.CleanupOptions {
	return session.CleanupOptions{
		Now:          now,
		MaxAge:       time.Duration(s.CleanupPeriodDays) * 24 * time.Hour,
		KeepSessions: s.CleanupPeriodDays == 0,
		TrashAge:     time.Duration(s.TrashRetentionDays) * 24 * time.Hour,
	}
}

// sweepOptions gives the daily sweep the options of the settings of the
// project at cwd, read only when a sweep is due; invalid settings are an
// error naming the file.
func sweepOptions(home session.Home, cwd string, now time.Time) func() (session.CleanupOptions, error) {
	return func() (session.CleanupOptions, error) {
		s, err := settings.Load(home.Dir, cwd)
		if err != nil {
			return session.CleanupOptions{}, err
		}
		return cleanupOptions(s, now), nil
	}
}
