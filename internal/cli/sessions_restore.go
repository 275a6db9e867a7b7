package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/session"
)

func newSessionsRestoreCmd(env Env) *cobra.Command {
	return &cobra.Command{
		Use:   "restore ID",
		Short: "Bring a session back from the trash to where it was",
		Long: "Bring a session back from the trash to where it was: its transcript, its " +
			"folder of tool results and its file history. ID may be the first characters " +
			"of the session id. The transcript counts as used now, so the next cleanup keeps it.",
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			home, err := env.Home()
			if err != nil {
				return err
			}
			r, err := session.Restore(cmd.Context(), home, a[0], env.Now())
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "Restored %s to %s\n", r.SessionID, r.Path)
			return nil
		},
	}
}
