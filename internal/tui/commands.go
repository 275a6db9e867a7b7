package tui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/compact"
	"github.com/cairn-dev/cairn/internal/tokens"
)

// slashCommand splits "/name args" into its parts; "//x" and paths are
// prompts, not commands.
func slashCommand(prompt string) (name, args string, ok bool) {
	prompt = strings.TrimSpace(prompt)
	if !strings.HasPrefix(prompt, "/") || strings.HasPrefix(prompt, "//") {
		return "", "", false
	}
	name, args, _ = strings.Cut(prompt[1:], " ")
	if name == "" || strings.ContainsAny(name, "/\\.") {
		return "", "", false
	}
	return name, strings.TrimSpace(args), true
}

// commands are the slash commands, with what /help says of them.
var commands = []struct{ name, args, help string }{
	{"compact", "[instructions]", "summarise the conversation to free context, following the instructions if given"},
	{"context", "", "what the next request holds, in tokens, against the window"},
	{"resume", "", "pick a session to resume (search titles and content; tab for every project)"},
	{"rewind", "", "go back to before a message: the code, the conversation, or both"},
	{"memory", "", "the instruction and memory files that load here"},
	{"summary", "", "the session memory's summary of this session"},
	{"pin", "<text|message id>", "keep something word for word through every compaction"},
	{"clear", "", "start a new session"},
	{"cost", "", "tokens and cost of this session so far"},
	{"permissions", "", "the permission mode and rules in force"},
	{"model", "[name]", "switch the model of the next requests (without a name: the model in use)"},
	{"status", "", "version, model, session, folder, API and settings in force"},
	{"export", "[file]", "write the conversation as text to a file"},
	{"rename", "<name>", "name this session"},
	{"add-dir", "<folder>", "add a folder the session may work in"},
	{"init", "", "have the model study the project and write its CLAUDE.md"},
	{"mcp", "", "the MCP servers, their state and their tools"},
	{"hooks", "", "the hooks configured, and in which file"},
	{"agents", "", "the subagent types the model can start"},
	{"doctor", "", "check the API, the settings files, the sandbox, MCP servers and the home folder"},
	{"help", "", "this help"},
	{"exit", "", "exit cairn (also /quit)"},
	{"quit", "", "exit cairn"},
}

// doneMsg ends an operation on the session started by a command.
type doneMsg struct {
	// info is shown as the command's output; err as its failure.
	info string
	err  error
	// compaction, when set, is shown as a compaction.
	compaction *engine.Compaction
	// apply, when set, changes the model once the operation is done (a
	// new session, a rewound conversation).
	apply func(m *Model) tea.Cmd
	used  int64
	// measured is set when used is the context's size after the work.
	measured bool
}

// command runs a slash command.
func (m *Model) command(name, args string) tea.Cmd {
	m.tr.add(&item{kind: kindUser, text: "/" + strings.TrimSpace(name+" "+args)})
	switch name {
	case "help":
		m.info(m.help())
		return nil
	case "cost":
		m.info(m.costReport())
		return nil
	case "permissions":
		if m.opts.Permissions == nil {
			m.info("The permission rules are not available here.")
			return nil
		}
		m.info(m.opts.Permissions())
		return nil
	case "exit", "quit":
		return m.exit()
	case "status":
		m.info(m.statusReport())
		return nil
	case "hooks":
		m.report(m.opts.Hooks, "hooks")
		return nil
	case "agents":
		m.report(m.opts.Agents, "subagent")
		return nil
	case "add-dir":
		if args == "" {
			m.tr.add(&item{kind: kindError, text: "Name the folder to add: /add-dir ../other-repo"})
			return nil
		}
		if m.opts.AddDir == nil {
			m.info("Adding folders is not available here; start cairn with --add-dir instead.")
			return nil
		}
		said, err := m.opts.AddDir(args)
		if err != nil {
			m.tr.add(&item{kind: kindError, text: err.Error()})
			return nil
		}
		m.info(said)
		return nil
	}
	if m.work != nil {
		m.tr.add(&item{kind: kindError, text: fmt.Sprintf("/%s waits for the session: press Esc to interrupt the turn first", name)})
		return nil
	}
	s := m.sess
	switch name {
	case "compact":
		return m.run("Compacting", func(ctx context.Context) doneMsg {
			rep, err := s.Compact(ctx, args)
			if noGain := (*compact.NoGainError)(nil); errors.As(err, &noGain) {
				return doneMsg{info: capitalize(noGain.Error())} // the session is as it was
			}
			if err != nil {
				return doneMsg{err: fmt.Errorf("compaction failed: %w", err), compaction: rep}
			}
			return doneMsg{compaction: rep}
		})
	case "context":
		if m.opts.Context == nil {
			m.info("The context report is not available here.")
			return nil
		}
		window := m.meter.window
		return m.run("Measuring", func(ctx context.Context) doneMsg {
			text, err := m.opts.Context(ctx, s)
			if err != nil {
				return doneMsg{err: err}
			}
			used, uerr := s.Used(ctx)
			if uerr == nil {
				text = strings.TrimRight(text, "\n") + fmt.Sprintf("\n\nThis session now: %s tokens used; auto-compaction at %s (%s to go). The meter shows this number.",
					tokens.Thousands(used), tokens.Thousands(window.AutoCompactAt()), tokens.Thousands(max(0, window.AutoCompactAt()-used)))
			}
			return doneMsg{info: text}
		})
	case "memory":
		if m.opts.Memory == nil {
			m.info("No memory report is available in this version of cairn.")
			return nil
		}
		return m.run("Reading", func(ctx context.Context) doneMsg {
			text, err := m.opts.Memory(ctx)
			return doneMsg{info: text, err: err}
		})
	case "summary":
		if m.opts.Summary == nil {
			m.info("Session memory is not available in this version of cairn, so there is no summary to show. /compact summarises the conversation instead.")
			return nil
		}
		return m.run("Reading", func(ctx context.Context) doneMsg {
			text, err := m.opts.Summary(ctx, s)
			return doneMsg{info: text, err: err}
		})
	case "pin":
		return m.run("Pinning", func(ctx context.Context) doneMsg {
			pin, err := s.Pin(ctx, args)
			if err != nil {
				return doneMsg{err: err}
			}
			return doneMsg{info: compact.PinnedSay(pin, 200)}
		})
	case "model":
		if args == "" {
			m.info("Model: " + s.ModelName() + "\nSwitch with /model NAME (as claude-sonnet-4-5); the next request uses it.")
			return nil
		}
		if err := s.SetModel(args); err != nil {
			m.tr.add(&item{kind: kindError, text: err.Error()})
			return nil
		}
		m.switched = true
		m.info("Model set to " + s.ModelName() + ": the next request uses it.")
		return m.refreshStatus()
	case "rename":
		return m.run("Renaming", func(ctx context.Context) doneMsg {
			if err := s.Rename(ctx, args); err != nil {
				return doneMsg{err: err}
			}
			return doneMsg{info: "Session renamed to " + s.Title() + "."}
		})
	case "export":
		if m.opts.Export == nil {
			m.info("Exporting is not available here; cairn sessions show " + s.ID() + " prints the conversation.")
			return nil
		}
		path := args
		if path == "" {
			path = m.now().Format("2006-01-02-150405") + "-" + shortID(s.ID()) + ".txt"
		}
		if !filepath.IsAbs(path) {
			path = filepath.Join(m.opts.Cwd, path)
		}
		return m.run("Exporting", func(ctx context.Context) doneMsg {
			text, err := m.opts.Export(ctx, s)
			if err != nil {
				return doneMsg{err: err}
			}
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				return doneMsg{err: fmt.Errorf("export: %w; give another file: /export FILE", err)}
			}
			return doneMsg{info: "Conversation exported to " + path}
		})
	case "mcp":
		if m.opts.MCP == nil {
			m.info("No MCP report is available here.")
			return nil
		}
		return m.run("Reading", func(ctx context.Context) doneMsg {
			text, err := m.opts.MCP(ctx)
			return doneMsg{info: text, err: err}
		})
	case "doctor":
		if m.opts.Doctor == nil {
			m.info("The checks are not available here.")
			return nil
		}
		return m.run("Checking", func(ctx context.Context) doneMsg {
			text, err := m.opts.Doctor(ctx)
			return doneMsg{info: text, err: err}
		})
	case "clear":
		return m.reopen("", "Started a new session.")
	case "resume":
		return m.openResume()
	case "rewind":
		return m.openRewind()
	}
	m.tr.add(&item{kind: kindError, text: fmt.Sprintf("Unknown command /%s; /help lists the commands.", name)})
	return nil
}

// info shows a command's output.
func (m *Model) info(text string) { m.tr.add(&item{kind: kindInfo, text: text}) }

// run does an operation on the session in a command, showing label with
// the spinner meanwhile; Esc cancels it.
func (m *Model) run(label string, op func(ctx context.Context) doneMsg) tea.Cmd {
	ctx, cancel := context.WithCancel(context.Background())
	w := &work{label: label, start: m.now(), cancel: cancel, done: make(chan struct{})}
	m.work = w
	s := m.sess
	return tea.Batch(tick(), func() tea.Msg {
		defer close(w.done)
		defer cancel()
		d := op(ctx)
		if d.apply == nil {
			if used, err := s.Used(context.Background()); err == nil {
				d.used, d.measured = used, true
			}
		}
		return d
	})
}

// onDone shows what an operation did.
func (m *Model) onDone(d doneMsg) tea.Cmd {
	m.work = nil
	if d.measured {
		m.setUsed(d.used)
	}
	var cmd tea.Cmd
	if d.apply != nil {
		cmd = d.apply(m)
	}
	if d.compaction != nil {
		m.tr.add(&item{kind: kindCompact, compaction: d.compaction})
	}
	if d.info != "" {
		m.info(d.info)
	}
	if d.err != nil {
		m.tr.add(&item{kind: kindError, text: d.err.Error()})
	}
	return tea.Batch(cmd, m.dequeue())
}

// reopen switches to another session (ref "" for a new one), closing
// this one first; if the other cannot be opened, this one is reopened.
func (m *Model) reopen(ref, said string) tea.Cmd {
	old := m.sess
	open := m.opts.Open
	if open == nil {
		m.tr.add(&item{kind: kindError, text: "Switching sessions is not available here."})
		return nil
	}
	return m.run("Opening", func(ctx context.Context) doneMsg {
		path := old.Path()
		if err := old.Close(); err != nil {
			return doneMsg{err: fmt.Errorf("close the session: %w", err)}
		}
		s, err := open(ctx, ref)
		if err != nil {
			back, berr := open(ctx, path)
			if berr != nil {
				return doneMsg{err: fmt.Errorf("%w; and reopening %s failed too: %v", err, path, berr)}
			}
			return doneMsg{err: err, apply: func(m *Model) tea.Cmd { m.sess = back; return nil }}
		}
		used, uerr := s.Used(ctx)
		return doneMsg{apply: func(m *Model) tea.Cmd {
			m.sess = s
			m.meter = meter{window: s.Window(), used: used, known: uerr == nil}
			m.loadHistory(s.History())
			m.welcome()
			m.prompt.pos = -1
			m.info(said)
			return m.readHistory()
		}}
	})
}

func (m *Model) help() string {
	var b strings.Builder
	b.WriteString("Commands\n")
	for _, c := range commands {
		name := "/" + c.name
		if c.args != "" {
			name += " " + c.args
		}
		fmt.Fprintf(&b, "  %-28s %s\n", name, c.help)
	}
	if len(m.opts.Commands) > 0 {
		b.WriteString("\nCustom commands and skills\n")
		for _, c := range m.opts.Commands {
			if _, ok := m.custom(c.Name); !ok {
				continue
			}
			name := "/" + c.Name
			if c.Args != "" {
				name += " " + c.Args
			}
			fmt.Fprintf(&b, "  %-28s %s\n", name, customHelp(c))
		}
	}
	b.WriteString("\nKeys\n")
	for _, k := range [][2]string{
		{"enter", "send"}, {"shift+enter, alt+enter, ctrl+j", "new line"},
		{"↑ / ↓", "previous / next prompt"}, {"esc", "interrupt the model"},
		{"ctrl+c", "clear the prompt; twice to exit"}, {"ctrl+o", "expand or collapse tool output and thinking"},
		{"pgup / pgdown", "scroll"}, {"ctrl+home / ctrl+end", "first / newest message"},
	} {
		fmt.Fprintf(&b, "  %-28s %s\n", k[0], k[1])
	}
	return b.String()
}

func (m *Model) costReport() string {
	u := m.usage
	var b strings.Builder
	switch {
	case m.opts.Spent != nil:
		total := m.opts.Spent()
		fmt.Fprintf(&b, "Total cost:            $%.4f ($%.4f the conversation, $%.4f side requests: summaries, notes, memory)\n", total, m.cost, max(0, total-m.cost))
	case m.opts.Cost != nil:
		fmt.Fprintf(&b, "Total cost:            $%.4f\n", m.cost)
	}
	fmt.Fprintf(&b, "Total duration (API):  %s\n", m.apiTime.Round(100*time.Millisecond))
	fmt.Fprintf(&b, "Total duration (wall): %s\n", m.now().Sub(m.started).Round(time.Second))
	fmt.Fprintf(&b, "Usage:                 %s input, %s output, %s cache read, %s cache write",
		tokens.Thousands(u.InputTokens), tokens.Thousands(u.OutputTokens), tokens.Thousands(u.CacheReadInputTokens), tokens.Thousands(u.CacheCreationInputTokens))
	return b.String()
}

// capitalize makes a sentence of an error's text.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// initPrompt is what /init asks of the model: study the project and
// write the instruction file future sessions load.
const initPrompt = `Study this project and write a CLAUDE.md file at its root, for the coding agents that will work in it after you. Read what tells you most first: the README, the build and dependency files, the continuous integration configuration, the layout of the source folders, and any instruction files already there (CLAUDE.md, AGENTS.md, .cursorrules, .github/copilot-instructions.md). Then write, briefly:

- the commands that build, lint and test the project, and how to run a single test;
- the architecture in broad strokes: the main parts, where they live, and how they fit together, as far as it takes reading several files to see;
- the conventions the code follows that an agent would otherwise get wrong.

Leave out what any developer knows, and generic advice. Do not invent anything you did not read. If a CLAUDE.md exists already, improve it rather than start over.`

// report shows a report of the session's configuration.
func (m *Model) report(f func() string, what string) {
	if f == nil {
		m.info("No " + what + " report is available here.")
		return
	}
	m.info(f())
}

// statusReport is /status.
func (m *Model) statusReport() string {
	if m.opts.Status != nil {
		return m.opts.Status(m.sess)
	}
	s := m.sess
	text := fmt.Sprintf("Model:   %s\nSession: %s\nFolder:  %s", s.ModelName(), s.ID(), m.opts.Cwd)
	if t := s.Title(); t != "" {
		text += "\nName:    " + t
	}
	return text
}

// shortID is the first part of a session id.
func shortID(id string) string {
	if i := strings.IndexByte(id, '-'); i > 0 {
		return id[:i]
	}
	return id
}
