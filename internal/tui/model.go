package tui

import (
	"context"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// Model is the UI's state. Update changes it, on the program's
// goroutine only; everything slow (a turn, a compaction, listing
// sessions) runs in a command whose result comes back as a message.
type Model struct {
	opts   Options
	sess   Session
	now    func() time.Time
	width  int
	height int

	r      *renderer
	tr     transcript
	prompt promptBox
	meter  meter

	// work is what the session is busy with; nil when idle.
	work *work
	// queue holds prompts typed while the session was busy.
	queue []queued
	// asks are the permission questions waiting, the first one shown.
	asks []*permDialog
	// picker is a full-screen chooser (/resume, /rewind), or nil.
	picker picker
	// armed is set after a first Ctrl+C: a second one exits.
	armed bool
	// todos is the session's todo list, as its last TodoWrite set it: it
	// stays above the prompt while it has work left.
	todos []tools.Todo
	// usage and cost add up the session's responses, its subagents'
	// included (/cost).
	usage   model.Usage
	cost    float64
	apiTime time.Duration
	started time.Time
	quit    bool
	// status is the status line's state (settings "statusLine").
	statusLine statusState
	// switched is set once /model changed the model: the footer names it.
	switched bool
	// lastEsc is when Esc was last pressed on an empty prompt (Esc twice
	// opens the rewind list).
	lastEsc time.Time
}

// work is an operation on the session in progress: a turn or a command.
type work struct {
	label string // "Working", "Compacting"
	start time.Time
	// waited is how long permission questions waited for the person, and
	// waitSince when the one on screen came (zero when none is): the
	// spinner's clock stands still meanwhile.
	waited    time.Duration
	waitSince time.Time
	cancel    context.CancelFunc
	// done is closed when the work has stopped using the session.
	done chan struct{}
	// A turn's state.
	turn      bool
	events    chan tea.Msg
	status    string
	assistant *item
	thinking  *item
	out       int64 // output tokens so far
	sawPrompt bool
	sent      time.Time
}

type queued struct {
	display, text string
}

// picker is a full-screen chooser shown instead of the transcript.
type picker interface {
	update(m *Model, msg tea.Msg) tea.Cmd
	view(m *Model, width, height int) string
}

// doubleEsc is how soon a second Esc must follow the first to open the
// rewind list.
const doubleEsc = 800 * time.Millisecond

// New returns the UI's model for opts.
func New(opts Options) *Model {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := &Model{
		opts:   opts,
		sess:   opts.Session,
		now:    opts.Now,
		r:      &renderer{st: newStyles(opts.Theme), md: newMarkdown(opts.Theme), cwd: opts.Cwd},
		tr:     newTranscript(),
		prompt: newPromptBox(),
		width:  80, height: 24,
	}
	m.r.tools = func() *tool.Registry { return m.sess.Tools() }
	m.started = m.now()
	m.meter.window = opts.Session.Window()
	m.loadHistory(opts.Session.History())
	m.welcome()
	for _, w := range opts.Warnings {
		m.tr.add(&item{kind: kindNotice, text: w})
	}
	return m
}

// welcome is the first thing on screen.
func (m *Model) welcome() {
	text := "✻ Welcome to cairn · " + m.sess.ModelName() + "\n  /help for commands · esc interrupts · ctrl+c twice exits"
	if len(m.tr.items) > 0 {
		text = "✻ Resumed · " + m.sess.ModelName() + " · " + m.sess.ID() + "\n  /help for commands · esc interrupts · ctrl+c twice exits"
	}
	m.tr.items = append([]*item{{kind: kindInfo, text: text}}, m.tr.items...)
}

// Init starts listening to the permission gate and the notices, reads
// the prompt history and measures the context.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{m.opts.Asker.wait(), m.opts.Notices.wait(), m.readHistory(), m.measure(), m.refreshStatus()}
	if m.opts.PickResume {
		cmds = append(cmds, m.openResume())
	}
	if m.opts.Prompt != "" {
		cmds = append(cmds, m.submit(m.opts.Prompt, m.opts.Prompt, nil))
	}
	return tea.Batch(cmds...)
}

// usedMsg reports the context's size.
type usedMsg struct {
	used int64
	err  error
}

// measure asks the session for the context's size. It must run only
// while the session is idle (or from the turn's goroutine).
func (m *Model) measure() tea.Cmd {
	s := m.sess
	return func() tea.Msg {
		used, err := s.Used(context.Background())
		return usedMsg{used, err}
	}
}

// syncWaiting starts or stops the pause of the spinner's clock: the time
// a permission question waits for the person is not the session's work.
func (m *Model) syncWaiting() {
	w := m.work
	if w == nil {
		return
	}
	switch waiting := len(m.asks) > 0; {
	case waiting && w.waitSince.IsZero():
		w.waitSince = m.now()
	case !waiting && !w.waitSince.IsZero():
		w.waited += m.now().Sub(w.waitSince)
		w.waitSince = time.Time{}
	}
}

func (m *Model) setUsed(used int64) {
	m.meter.used, m.meter.known = used, true
}

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	defer m.syncWaiting()
	switch msg := msg.(type) {
	case statusMsg:
		return m, m.onStatus(msg)
	case statusDueMsg:
		m.statusLine.pending = false
		return m, m.refreshStatus()
	case usedMsg, turnEndMsg, doneMsg:
		// What the status line shows may have changed: run it again.
		model, cmd := m.update(msg)
		return model, tea.Batch(cmd, m.refreshStatus())
	}
	return m.update(msg)
}

func (m *Model) update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.prompt.setWidth(m.width - 2)
		return m, nil
	case askMsg:
		m.asks = append(m.asks, newPermDialog(asked(msg), m.opts.Cwd))
		return m, m.opts.Asker.wait()
	case noticeMsg:
		m.tr.add(&item{kind: kindNotice, text: string(msg)})
		return m, m.opts.Notices.wait()
	case usedMsg:
		if msg.err == nil {
			m.setUsed(msg.used)
		}
		return m, nil
	case historyMsg:
		m.prompt.entries = append(m.prompt.entries, msg.entries...)
		return m, nil
	case tickMsg:
		if m.work == nil {
			return m, nil
		}
		return m, tick()
	case eventMsg:
		return m, m.onEvent(msg)
	case turnEndMsg:
		return m, m.onTurnEnd(msg)
	case doneMsg:
		return m, m.onDone(msg)
	case tea.KeyPressMsg:
		return m, m.onKey(msg)
	case tea.PasteMsg:
		if len(m.asks) > 0 {
			return m, m.asks[0].update(m, msg)
		}
		if m.picker != nil {
			return m, m.picker.update(m, msg)
		}
		return m, m.prompt.update(msg)
	case tea.MouseWheelMsg:
		switch msg.Button {
		case tea.MouseWheelUp:
			m.scroll(-3)
		case tea.MouseWheelDown:
			m.scroll(3)
		}
		return m, nil
	}
	if m.picker != nil {
		return m, m.picker.update(m, msg)
	}
	return m, m.prompt.update(msg)
}

// transcriptHeight is the number of lines the transcript gets.
func (m *Model) transcriptHeight() int {
	return max(1, m.height-m.chromeHeight())
}

func (m *Model) scroll(delta int) {
	m.tr.scroll(m.r, m.width, m.transcriptHeight(), delta)
}

// onKey handles a key press: the permission question first, then a
// picker, then the global keys, then the prompt.
func (m *Model) onKey(k tea.KeyPressMsg) tea.Cmd {
	key := k.String()
	if key != "ctrl+c" {
		m.armed = false
	}
	if key != "esc" {
		m.lastEsc = time.Time{}
	}
	if len(m.asks) > 0 {
		return m.asks[0].update(m, k)
	}
	switch key {
	case "ctrl+c":
		return m.ctrlC()
	case "ctrl+d":
		if m.prompt.empty() {
			return m.exit()
		}
	case "ctrl+o":
		m.r.expanded = !m.r.expanded
		return nil
	}
	if m.picker != nil {
		return m.picker.update(m, k)
	}
	switch key {
	case "esc":
		if m.work != nil && m.work.cancel != nil {
			m.work.cancel()
			return nil
		}
		if !m.tr.follow {
			m.tr.end()
			return nil
		}
		// Esc twice on an empty prompt opens the rewind list.
		now := m.now()
		if m.prompt.empty() && m.work == nil && !m.lastEsc.IsZero() && now.Sub(m.lastEsc) < doubleEsc {
			m.lastEsc = time.Time{}
			return m.openRewind()
		}
		m.lastEsc = now
		return nil
	case "alt+esc": // two Escs read at once from the terminal
		if m.prompt.empty() && m.work == nil {
			return m.openRewind()
		}
		return nil
	case "pgup", "shift+up":
		m.scroll(-max(1, m.transcriptHeight()-2))
		return nil
	case "pgdown", "shift+down":
		m.scroll(max(1, m.transcriptHeight()-2))
		return nil
	case "ctrl+home":
		m.tr.home()
		return nil
	case "ctrl+end":
		m.tr.end()
		return nil
	case "tab":
		if m.complete() {
			return nil
		}
	case "enter":
		if m.prompt.empty() || m.prompt.continueLine() {
			return nil
		}
		display, text, pastes := m.prompt.take()
		return m.submit(display, text, pastes)
	}
	return m.prompt.update(k)
}

// ctrlC clears the prompt or interrupts the turn; pressed again, it
// exits.
func (m *Model) ctrlC() tea.Cmd {
	if m.armed {
		return m.exit()
	}
	m.armed = true
	switch {
	case m.picker != nil:
		m.picker = nil
	case !m.prompt.empty():
		m.prompt.clear()
	case m.work != nil && m.work.cancel != nil:
		m.work.cancel()
	}
	return nil
}

// exit ends the program, interrupting a turn under way.
func (m *Model) exit() tea.Cmd {
	if m.work != nil && m.work.cancel != nil {
		m.work.cancel()
	}
	for _, a := range m.asks {
		a.answer(Answer{Note: "cairn is exiting"})
	}
	m.asks = nil
	m.quit = true
	return tea.Quit
}

// Session is the session the UI ends with (it may have changed through
// /resume or /clear); the caller closes it.
func (m *Model) Session() Session { return m.sess }
