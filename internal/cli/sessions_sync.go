package cli

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/transcript"
	"github.com/cairn-dev/cairn/transcript/pgstore"
)

func newSessionsSyncCmd(env Env) *cobra.Command {
	var all, asJSON bool
	cmd := &cobra.Command{
		Use:   "sync [ID|--all]",
		Short: "Send the team store what it lacks of this project's sessions (one, or all with --all)",
		Args:  args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if all == (len(a) == 1) {
				return usagef("give a session id or --all")
			}
			ctx := cmd.Context()
			ts, remote, err := connectedStore(ctx, env)
			if err != nil {
				return err
			}
			defer ts.close()
			home, err := env.Home()
			if err != nil {
				return err
			}
			var paths []string
			if all {
				infos, err := session.List(ctx, home, session.ListOptions{Cwd: env.Cwd, Warn: warner(env)})
				if err != nil {
					return err
				}
				for _, in := range infos {
					paths = append(paths, in.Path)
				}
			} else {
				p, err := home.Find(env.Cwd, a[0])
				if err != nil {
					return err
				}
				paths = []string{p}
			}
			type synced struct {
				SessionID string   `json:"sessionId"`
				Pushed    int      `json:"pushed"`
				Files     int      `json:"files"`
				Kept      []string `json:"kept,omitempty"`
				Error     string   `json:"error,omitempty"`
			}
			out := []synced{}
			failed := 0
			for _, p := range paths {
				id := trimJSONL(pathBase(p))
				n, err := syncOne(cmd, p, remote, id)
				r := synced{SessionID: id, Pushed: n}
				if err == nil {
					var rep pgstore.SidecarReport
					rep, err = pgstore.SyncSidecars(ctx, sidecarsOf(home, filepath.Dir(p)), remote, id)
					r.Files, r.Kept = rep.Copied, rep.Kept
				}
				if err != nil {
					r.Error = err.Error()
					failed++
				}
				out = append(out, r)
			}
			if asJSON {
				if err := writeJSON(env.Stdout, out); err != nil {
					return err
				}
			} else {
				for _, r := range out {
					switch {
					case r.Error != "":
						fmt.Fprintf(env.Stdout, "%s: not sent: %s\n", r.SessionID, r.Error)
					case r.Pushed == 0 && r.Files == 0:
						fmt.Fprintf(env.Stdout, "%s: the team store has it all\n", r.SessionID)
					default:
						fmt.Fprintf(env.Stdout, "%s: sent %d %s and %d %s\n", r.SessionID, r.Pushed, plural(r.Pushed, "line", "lines"), r.Files, plural(r.Files, "file", "files"))
					}
					if len(r.Kept) > 0 {
						fmt.Fprintf(env.Stdout, "%s: not sent, as the team store holds another version: %s (both copies are kept)\n", r.SessionID, strings.Join(r.Kept, ", "))
					}
				}
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d sessions could not be sent; nothing local was changed, run the sync again", failed, len(paths))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "every session of this project")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document")
	return cmd
}

func syncOne(cmd *cobra.Command, path string, remote *pgstore.Store, id string) (int, error) {
	local, key := transcript.FileStoreOf(path)
	src, err := local.OpenSource(cmd.Context(), key)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	return pgstore.Sync(cmd.Context(), src, remote, id)
}

func trimJSONL(name string) string {
	if len(name) > 6 && name[len(name)-6:] == ".jsonl" {
		return name[:len(name)-6]
	}
	return name
}
