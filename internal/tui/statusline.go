package tui

import (
	"context"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/cairn-dev/cairn/internal/jsonw"
)

// StatusLine runs the status line command (settings "statusLine") with
// the session's JSON on its stdin and returns its output. It is called
// off the UI's goroutine, at most once at a time; cancelling ctx stops
// the command.
type StatusLine func(ctx context.Context, input []byte) (string, error)

// StatusInput is what the status line command reads on stdin, in
// Claude Code's shape.
type StatusInput struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	Model          struct {
		ID          string `json:"id"`
		DisplayName string `json:"display_name"`
	} `json:"model"`
	Workspace struct {
		CurrentDir string `json:"current_dir"`
		ProjectDir string `json:"project_dir"`
	} `json:"workspace"`
	Cost struct {
		TotalCostUSD float64 `json:"total_cost_usd"`
	} `json:"cost"`
	ContextWindow struct {
		Used          int64 `json:"used_tokens"`
		Size          int64 `json:"context_window_size"`
		AutoCompactAt int64 `json:"auto_compact_at"`
	} `json:"context_window"`
}

// statusEvery is the least time between two runs of the status line.
const statusEvery = 300 * time.Millisecond

// statusTimeout stops a status line command that hangs.
const statusTimeout = 5 * time.Second

// statusState is the status line's: its text, whether it runs, whether
// another run is due after it, and when it last started.
type statusState struct {
	text    string
	running bool
	pending bool
	last    time.Time
}

type statusMsg struct {
	text string
	err  error
}

type statusDueMsg struct{}

// refreshStatus asks for the status line to be run again: now when it is
// idle and last ran over statusEvery ago, else once when it can.
func (m *Model) refreshStatus() tea.Cmd {
	if m.opts.StatusLine == nil {
		return nil
	}
	s := &m.statusLine
	if s.running {
		s.pending = true
		return nil
	}
	if wait := statusEvery - time.Since(s.last); !s.last.IsZero() && wait > 0 {
		if !s.pending {
			s.pending = true
			return tea.Tick(wait, func(time.Time) tea.Msg { return statusDueMsg{} })
		}
		return nil
	}
	s.running, s.pending, s.last = true, false, time.Now()
	input := m.statusInput()
	run := m.opts.StatusLine
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
		defer cancel()
		out, err := run(ctx, input)
		return statusMsg{text: out, err: err}
	}
}

// onStatus takes a run's output: its first line, colours kept.
func (m *Model) onStatus(msg statusMsg) tea.Cmd {
	s := &m.statusLine
	s.running = false
	if msg.err == nil || msg.text != "" {
		line, _, _ := strings.Cut(strings.TrimRight(msg.text, "\r\n"), "\n")
		s.text = strings.TrimRight(line, "\r")
	}
	if s.pending {
		s.pending = false
		return m.refreshStatus()
	}
	return nil
}

func (m *Model) statusInput() []byte {
	var in StatusInput
	in.SessionID, in.TranscriptPath, in.Cwd = m.sess.ID(), m.sess.Path(), m.opts.Cwd
	in.Model.ID, in.Model.DisplayName = m.sess.ModelName(), m.sess.ModelName()
	in.Workspace.CurrentDir, in.Workspace.ProjectDir = m.opts.Cwd, m.opts.Cwd
	in.Cost.TotalCostUSD = m.cost
	if m.opts.Spent != nil {
		in.Cost.TotalCostUSD = m.opts.Spent()
	}
	in.ContextWindow.Used, in.ContextWindow.Size, in.ContextWindow.AutoCompactAt = m.meter.used, m.meter.window.Size, m.meter.window.AutoCompactAt()
	b, _ := jsonw.Marshal(in)
	return b
}

// statusLines are the status line under the footer, when there is one.
func (m *Model) statusLines() []string {
	if m.opts.StatusLine == nil || m.statusLine.text == "" {
		return nil
	}
	return []string{truncate(m.statusLine.text, m.width)}
}
