package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/filehistory"
	"github.com/cairn-dev/cairn/transcript"
)

// rewindReport is what `sessions rewind --json` prints.
type rewindReport struct {
	SessionID string `json:"sessionId"`
	To        string `json:"to"`
	Mode      string `json:"mode"` // code, conversation or both
	DryRun    bool   `json:"dryRun"`
	// Prompt is the text of the message rewound to, when it is a prompt.
	Prompt       string          `json:"prompt,omitempty"`
	Code         *rewindCode     `json:"code"`
	Conversation *rewindDialogue `json:"conversation"`
	Warnings     []string        `json:"warnings"`
	point        *filehistory.Point
}

type rewindCode struct {
	Changes []filehistory.Change `json:"changes"`
	// Undo is the snapshot holding the files as they were before the
	// rewind: rewinding the code to it undoes the rewind.
	Undo string `json:"undo,omitempty"`
}

type rewindDialogue struct {
	// LeafUUID is the entry the next prompt continues from.
	LeafUUID   string `json:"leafUuid"`
	LastPrompt string `json:"lastPrompt"`
}

func newSessionsRewindCmd(env Env) *cobra.Command {
	var (
		to                       string
		code, conversation, both bool
		dryRun, asJSON           bool
	)
	cmd := &cobra.Command{
		Use:   "rewind ID|PATH --to UUID",
		Short: "Put the files and/or the conversation back to how they were before a message",
		Long: "Put the files and/or the conversation back to how they were when the user message UUID was sent.\n\n" +
			"--code restores every file the session tracked (changed with Edit or Write, or by a Bash command) " +
			"from its backups and deletes the files created since; what the files held just before is kept as a " +
			"snapshot of its own, and the command prints how to undo. --conversation makes the next resume " +
			"(cairn -r ID) continue from the message before UUID, as a new branch; nothing is deleted from the " +
			"transcript. --both (the default, Claude Code's first choice) does both.\n\n" +
			"A preview of what changes is printed first; --dry-run prints only the preview. " +
			"`cairn sessions export ID --format json` shows the uuids of the messages.",
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			mode := "both"
			switch n := btoi(code) + btoi(conversation) + btoi(both); {
			case n > 1:
				return usagef("give one of --code, --conversation and --both")
			case code:
				mode = "code"
			case conversation:
				mode = "conversation"
			}
			if to == "" {
				return usagef("--to UUID is required: the user message to go back to (`cairn sessions export %s --format json` shows the uuids)", a[0])
			}
			rep, err := rewind(cmd.Context(), env, a[0], to, mode, dryRun)
			if rep != nil {
				for _, w := range rep.Warnings {
					fmt.Fprintln(env.Stderr, "warning:", w)
				}
				if asJSON {
					if jerr := writeJSON(env.Stdout, rep); jerr != nil && err == nil {
						err = jerr
					}
				} else {
					printRewind(env.Stdout, rep, a[0], err == nil)
				}
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&to, "to", "", "the uuid of the user message to go back to")
	fl.BoolVar(&code, "code", false, "rewind only the files")
	fl.BoolVar(&conversation, "conversation", false, "rewind only the conversation")
	fl.BoolVar(&both, "both", false, "rewind the files and the conversation (the default)")
	fl.BoolVar(&dryRun, "dry-run", false, "show what would change and change nothing")
	fl.BoolVar(&asJSON, "json", false, "print one JSON document")
	return cmd
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// rewind does the work of `sessions rewind`. The report it returns, even
// with an error, says what was planned and done.
func rewind(ctx context.Context, env Env, ref, to, mode string, dryRun bool) (*rewindReport, error) {
	home, err := env.Home()
	if err != nil {
		return nil, err
	}
	path, err := home.Find(env.Cwd, ref)
	if err != nil {
		return nil, err
	}
	store, id := transcript.FileStoreOf(path)
	rep := &rewindReport{SessionID: id, To: to, Mode: mode, DryRun: dryRun, Warnings: []string{}}
	wantCode, wantConv := mode != "conversation", mode != "code"

	// Hold the session's lock while rewinding, so no cairn runs it
	// meanwhile; a preview needs none.
	var app transcript.Appender
	if !dryRun {
		app, err = store.OpenAppender(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("nothing was rewound: %w", err)
		}
		defer app.Close()
	}

	src, err := store.OpenSource(ctx, id)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	point, perr := filehistory.ConversationPoint(ctx, src, to)
	if point != nil {
		rep.Prompt, rep.point = point.Prompt, point
	}
	if wantConv && perr != nil {
		return nil, perr
	}
	cwd := env.Cwd
	if point != nil && point.CWD != "" {
		cwd = point.CWD
	}

	var h *filehistory.History
	if wantCode {
		snaps, warnings, err := filehistory.Load(ctx, io.NewSectionReader(src, 0, src.Size()), cwd)
		if err != nil {
			return nil, err
		}
		rep.Warnings = append(rep.Warnings, warnings...)
		h = filehistory.New(filehistory.Options{
			Dir: home.FileHistory(id), Now: env.Now,
			Record: func(ctx context.Context, e transcript.Entry) error {
				return app.Append(ctx, []transcript.Entry{e}, true)
			},
		}, snaps)
		plan, err := h.Plan(to)
		switch {
		case errors.Is(err, filehistory.ErrNoSnapshot) && perr != nil:
			return nil, perr // not a message of this session at all
		case errors.Is(err, filehistory.ErrNoSnapshot):
			return nil, fmt.Errorf("message %q has no file-history snapshot (the session was recorded without file history), so its files cannot be rewound; rewind the conversation alone with --conversation", to)
		case err != nil:
			return nil, err
		}
		rep.Code = &rewindCode{Changes: plan.Changes}
	}
	if wantConv {
		rep.Conversation = &rewindDialogue{LeafUUID: point.Leaf, LastPrompt: point.LastPrompt}
	}
	if dryRun {
		return rep, nil
	}

	if wantCode && len(rep.Code.Changes) > 0 {
		undo := uuid.NewString()
		plan, err := h.Rewind(ctx, to, undo)
		if plan != nil {
			rep.Code.Changes = plan.Changes
			rep.Code.Undo = undo
		}
		if err != nil {
			return rep, fmt.Errorf("rewinding the files: %w", err)
		}
	}
	if wantConv {
		if err := app.Append(ctx, []transcript.Entry{filehistory.LastPromptRecord(point, id)}, true); err != nil {
			return rep, fmt.Errorf("rewinding the conversation: %w", err)
		}
	}
	return rep, nil
}

// printRewind tells a person what the rewind changes, or changed.
func printRewind(w io.Writer, rep *rewindReport, ref string, ok bool) {
	fmt.Fprintf(w, "Session %s, back to before message %s", rep.SessionID, rep.To)
	if rep.Prompt != "" {
		fmt.Fprintf(w, ":\n  > %s", clip(rep.Prompt, 100, false))
	}
	fmt.Fprintln(w)
	if c := rep.Code; c != nil {
		if len(c.Changes) == 0 {
			fmt.Fprintln(w, "Files: none changed since this message.")
		} else {
			fmt.Fprintf(w, "Files (%d):\n", len(c.Changes))
			width := 0
			names := make([]string, len(c.Changes))
			for i, ch := range c.Changes {
				names[i] = shortPath(ch.Path, rep.point)
				width = max(width, len(names[i]))
			}
			for i, ch := range c.Changes {
				fmt.Fprintf(w, "  %-8s  %-*s  %s\n", ch.Action, width, names[i], diffStat(ch))
			}
		}
	}
	if rep.Conversation != nil {
		fmt.Fprintln(w, "Conversation: the next prompt continues from the message before this one, on a new branch.")
	}
	switch {
	case rep.DryRun:
		fmt.Fprintln(w, "Dry run: nothing was changed.")
	case !ok:
	default:
		if c := rep.Code; c != nil && c.Undo != "" {
			fmt.Fprintf(w, "Files rewound. To undo: cairn sessions rewind %s --to %s --code\n", ref, c.Undo)
		}
		if rep.Conversation != nil {
			fmt.Fprintf(w, "Conversation rewound: continue it with cairn --resume %s\n", rep.SessionID)
		}
	}
}

// shortPath shows a path from the session's folder when it is inside.
func shortPath(path string, p *filehistory.Point) string {
	if p == nil || p.CWD == "" {
		return path
	}
	if rel, err := filepath.Rel(p.CWD, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

// diffStat is a change's size: lines added and removed, as git shows them.
func diffStat(c filehistory.Change) string {
	switch {
	case c.ModeOnly:
		return "(mode only)"
	case c.Binary:
		return "(binary)"
	}
	var parts []string
	if c.Added > 0 {
		parts = append(parts, fmt.Sprintf("+%d", c.Added))
	}
	if c.Removed > 0 {
		parts = append(parts, fmt.Sprintf("-%d", c.Removed))
	}
	if len(parts) == 0 {
		return "(empty)"
	}
	return strings.Join(parts, " ")
}
