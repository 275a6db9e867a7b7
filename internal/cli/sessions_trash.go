package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/session"
)

func newSessionsTrashCmd(env Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "trash",
		Short: "List the sessions in the trash, which `cairn sessions restore ID` brings back",
		Long: "List the sessions retention moved to the trash, the most recently trashed first: " +
			"where each was, when it was last used and trashed, and whether `cairn sessions restore ID` can bring it back.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := env.Home()
			if err != nil {
				return err
			}
			list, err := session.Trash(cmd.Context(), home)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(env.Stdout, list)
			}
			if len(list) == 0 {
				fmt.Fprintf(env.Stdout, "The trash is empty (%s).\n", home.Trash())
				return nil
			}
			for _, t := range list {
				if t.SessionID == "" {
					fmt.Fprintf(env.Stdout, "?         %s: %s\n", t.Trash, t.Problem)
					continue
				}
				fmt.Fprintf(env.Stdout, "%s  trashed %s, last used %s\n    %s\n", t.SessionID, t.TrashedAt.Local().Format("2006-01-02 15:04"), t.LastActivity.Local().Format("2006-01-02"), t.Path)
				if t.Problem != "" {
					fmt.Fprintf(env.Stdout, "    %s\n", t.Problem)
				}
			}
			fmt.Fprintln(env.Stdout, "\nBring one back with: cairn sessions restore ID (the first characters of the id are enough)")
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document")
	return cmd
}
