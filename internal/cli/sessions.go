package cli

import "github.com/spf13/cobra"

func newSessionsCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List, inspect, search, export, clean up and restore sessions",
		Args:  args(cobra.NoArgs),
	}
	cmd.AddCommand(newSessionsShowCmd(env))
	cmd.AddCommand(newSessionsExportCmd(env))
	cmd.AddCommand(newSessionsListCmd(env))
	cmd.AddCommand(newSessionsSearchCmd(env))
	cmd.AddCommand(newSessionsCleanupCmd(env))
	cmd.AddCommand(newSessionsRestoreCmd(env))
	cmd.AddCommand(newSessionsTrashCmd(env))
	cmd.AddCommand(newSessionsRewindCmd(env))
	cmd.AddCommand(newSessionsSyncCmd(env))
	return cmd
}
