package cli

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/compact"
	"github.com/cairn-dev/cairn/internal/filemap"
	"github.com/cairn-dev/cairn/internal/gcpace"
	"github.com/cairn-dev/cairn/internal/hugeheap"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/transcript"
)

func newSessionsShowCmd(env Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID|PATH",
		Short: "Print the conversation exactly as it would be sent to the model on resume",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			conv, err := loadSession(cmd, env, a[0], transcript.LoadOptions{Map: true})
			if err != nil {
				return err
			}
			for _, w := range conv.Warnings {
				fmt.Fprintln(env.Stderr, "warning:", w)
			}
			return writeMapped(env.Stdout, func(out io.Writer) error {
				msgs := conv.Messages()
				if asJSON {
					warnings := conv.Warnings
					if warnings == nil {
						warnings = []string{}
					}
					return writeViewJSON(out, conv.SessionID, msgs, warnings)
				}
				return printMessages(out, msgs)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document")
	return cmd
}

// writeMapped runs write, which writes out a session loaded with
// LoadOptions.Map, on out: under filemap.Guard, so that a transcript cut
// shorter meanwhile is an error naming it, and with the mapping's pages
// taken out of the process every releaseEvery bytes written, since each is
// read once (a 100 MB session would otherwise end holding them all).
func writeMapped(out io.Writer, write func(io.Writer) error) error {
	return filemap.Guard(func() error { return write(&releasing{w: out}) })
}

// releaseEvery is how much output writeMapped lets through between two
// filemap.Release.
const releaseEvery = 4 << 20

// releasing passes writes on to w, calling filemap.Release every
// releaseEvery bytes.
type releasing struct {
	w io.Writer
	n int
}

func (r *releasing) Write(p []byte) (int, error) {
	n, err := r.w.Write(p)
	if r.n += n; r.n >= releaseEvery {
		r.n = 0
		filemap.Release()
	}
	return n, err
}

// loadSession resolves ref and rebuilds its conversation.
func loadSession(cmd *cobra.Command, env Env, ref string, opts transcript.LoadOptions) (*transcript.Conversation, error) {
	home, err := env.Home()
	if err != nil {
		return nil, err
	}
	path, err := findSession(cmd.Context(), env, home, ref, env.Stderr)
	if err != nil {
		return nil, err
	}
	store, id := transcript.FileStoreOf(path)
	src, err := store.OpenSource(cmd.Context(), id)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	// The heap the load builds is backed by huge pages, and the
	// collector runs at a load's pace, then bounded to a little over what
	// the load built: what is printed of a long conversation is garbage
	// made on top of it, which would otherwise pile up as high.
	paced := gcpace.Load()
	grown := hugeheap.Grow(int(transcript.HeapOf(src, src.Size())))
	conv, err := transcript.Load(cmd.Context(), src, opts)
	grown()
	paced()
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	if conv.SessionID == "" {
		conv.SessionID = id
	}
	return conv, nil
}

func pathBase(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// printMessages renders messages for a person: role headers, text as is,
// tool calls and results summarised. It reports the first write error.
func printMessages(out io.Writer, msgs []model.Message) error {
	w := bufio.NewWriterSize(out, 256<<10)
	for i, m := range msgs {
		if i > 0 {
			w.WriteByte('\n')
		}
		if len(m.IDs) > 0 { // the id /pin and the Snip tool take
			fmt.Fprintf(w, "── %s ── %s\n", m.Role, compact.Tag(m.IDs[0]))
		} else {
			fmt.Fprintf(w, "── %s ──\n", m.Role)
		}
		for _, b := range m.Content {
			switch b.Type {
			case model.BlockText:
				w.WriteString(b.Text)
				w.WriteByte('\n')
			case model.BlockToolUse:
				fmt.Fprintf(w, "[tool_use %s %s] ", b.Name, b.ID)
				w.Write(b.Input)
				w.WriteByte('\n')
			case model.BlockToolResult:
				tag := "tool_result"
				if b.IsError != nil && *b.IsError {
					tag = "tool_result error"
				}
				fmt.Fprintf(w, "[%s %s]\n", tag, b.ToolUseID)
				w.WriteString(b.ResultText())
				w.WriteByte('\n')
			case model.BlockThinking:
				w.WriteString("[thinking] ")
				w.WriteString(b.Thinking)
				w.WriteByte('\n')
			default:
				fmt.Fprintf(w, "[%s]\n", b.Type)
			}
		}
	}
	return w.Flush()
}
