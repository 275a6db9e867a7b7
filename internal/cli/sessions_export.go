package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/transcript"
)

func newSessionsExportCmd(env Env) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "export ID|PATH",
		Short: "Print a session's whole history, across compactions, as Markdown or JSON",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if format != "md" && format != "json" {
				return usagef("--format must be md or json, not %q", format)
			}
			conv, err := loadSession(cmd, env, a[0], transcript.LoadOptions{History: true, Map: true})
			if err != nil {
				return err
			}
			for _, w := range conv.Warnings {
				fmt.Fprintln(env.Stderr, "warning:", w)
			}
			return writeMapped(env.Stdout, func(out io.Writer) error {
				if format == "json" {
					return writeEntriesJSON(out, conv.SessionID, conv.Entries)
				}
				return exportMarkdown(out, conv)
			})
		},
	}
	cmd.Flags().StringVar(&format, "format", "md", "md or json")
	return cmd
}

// exportMarkdown writes the scroll-back of a session: every prompt, reply,
// tool call and result in order, compactions marked where they happened.
func exportMarkdown(w io.Writer, conv *transcript.Conversation) error {
	p := &mdWriter{w: bufio.NewWriterSize(w, 256<<10)}
	p.printf("# Session %s\n", conv.SessionID)
	for i := range conv.Entries {
		e := conv.Entries[i]
		switch e.Type {
		case transcript.TypeSystem:
			if e.IsCompactBoundary() {
				md, _ := e.DecodeCompactMetadata()
				p.printf("\n---\n\n*Conversation compacted (%s, %d tokens before) — %s*\n", orDefault(md.Trigger, "auto"), md.PreTokens, e.Timestamp)
			}
		case transcript.TypeAttachment:
			var a struct {
				Type        string `json:"type"`
				DisplayPath string `json:"displayPath"`
				Filename    string `json:"filename"`
			}
			if json.Unmarshal(e.Attachment, &a) == nil && (a.Type == "file" || a.Type == "new_file") {
				p.printf("\n*Re-read %s*\n", orDefault(a.DisplayPath, a.Filename))
			}
		case transcript.TypeUser, transcript.TypeAssistant:
			m, ok, err := e.DecodeMessage()
			if err != nil || !ok {
				continue
			}
			p.message(e, m)
		}
	}
	if p.err == nil {
		p.err = p.w.Flush()
	}
	return p.err
}

type mdWriter struct {
	w    *bufio.Writer
	err  error
	last string // role of the last heading
}

func (p *mdWriter) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

// str writes s as it is.
func (p *mdWriter) str(s string) {
	if p.err == nil {
		_, p.err = p.w.WriteString(s)
	}
}

// fence writes text in a code fence longer than any run of backticks in
// it, piece by piece: a tool's input or result may be megabytes.
func (p *mdWriter) fence(lang, text string) {
	ticks := fenceTicks(text)
	p.str(ticks)
	p.str(lang)
	p.str("\n")
	p.str(strings.TrimSuffix(text, "\n"))
	p.str("\n")
	p.str(ticks)
	p.str("\n")
}

func (p *mdWriter) heading(role, ts string) {
	if p.last == role {
		return
	}
	p.last = role
	p.printf("\n## %s", role)
	if ts != "" {
		p.printf(" · %s", ts)
	}
	p.printf("\n")
}

func (p *mdWriter) message(e *transcript.Entry, m transcript.APIMessage) {
	for _, b := range m.Content {
		switch b.Type {
		case model.BlockText:
			switch {
			case e.IsCompactSummary:
				p.heading("Summary", e.Timestamp)
				p.printf("\n%s\n", quote(b.Text))
			case e.IsMeta:
				// Harness-added text (caveats, reminders) is not part of
				// what the person and the model said.
			case e.Type == transcript.TypeUser:
				p.heading("User", e.Timestamp)
				p.printf("\n%s\n", localCommand(b.Text))
			default:
				p.heading("Assistant", e.Timestamp)
				p.printf("\n%s\n", b.Text)
			}
		case model.BlockThinking:
			p.heading("Assistant", e.Timestamp)
			p.printf("\n<details><summary>Thinking</summary>\n\n%s\n\n</details>\n", b.Thinking)
		case model.BlockToolUse:
			p.heading("Assistant", e.Timestamp)
			p.printf("\n**%s** `%s`\n\n", b.Name, b.ID)
			p.fence("json", string(b.Input))
		case model.BlockToolResult:
			p.heading("Tool result", e.Timestamp)
			label := "Result"
			if b.IsError != nil && *b.IsError {
				label = "Error"
			}
			p.printf("\n%s for `%s`:\n\n", label, b.ToolUseID)
			p.fence("", b.ResultText())
		default:
			p.printf("\n*[%s]*\n", b.Type)
		}
	}
}

// localCommand shows the lines Claude Code records for a slash command as
// the person typed and saw them.
func localCommand(text string) string {
	if name, ok := between(text, "<command-name>", "</command-name>"); ok {
		args, _ := between(text, "<command-args>", "</command-args>")
		return "`" + strings.TrimSpace(name+" "+args) + "`"
	}
	if out, ok := between(text, "<local-command-stdout>", "</local-command-stdout>"); ok {
		return quote(strings.TrimSpace(out))
	}
	return text
}

func between(s, open, close string) (string, bool) {
	_, rest, ok := strings.Cut(s, open)
	if !ok {
		return "", false
	}
	inner, _, ok := strings.Cut(rest, close)
	return inner, ok
}

// fenceTicks is the fence for text: three backticks, or one more than
// the longest run of backticks in it.
func fenceTicks(text string) string {
	ticks := "```"
	for strings.Contains(text, ticks) {
		ticks += "`"
	}
	return ticks
}

func quote(s string) string {
	return "> " + strings.ReplaceAll(s, "\n", "\n> ")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
