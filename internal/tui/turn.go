package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/history"
	"github.com/cairn-dev/cairn/internal/compact"
	"github.com/cairn-dev/cairn/model"
)

// eventMsg is one event of the turn, with the context's size measured
// right after it when the event changed it.
type eventMsg struct {
	ev       engine.Event
	used     int64
	measured bool
}

// turnEndMsg ends a turn: err is nil, an interruption or a failure.
type turnEndMsg struct {
	err      error
	used     int64
	measured bool
}

type tickMsg struct{}

// tick wakes the UI to move the spinner.
func tick() tea.Cmd {
	return tea.Tick(100*time.Millisecond, func(time.Time) tea.Msg { return tickMsg{} })
}

// submit sends a prompt, runs a slash command, or queues the prompt
// when the session is busy (and the command when an operation such as
// /clear or /compact is changing the session).
func (m *Model) submit(display, text string, pastes map[int]history.Paste) tea.Cmd {
	m.tr.end()
	hist := m.record(display, pastes)
	if name, args, ok := slashCommand(text); ok {
		if _, own := m.custom(name); !own && name != "init" {
			if m.work != nil && !m.work.turn {
				// An operation on the session (opening one, compacting)
				// changes what the command would act on and show: it runs
				// when the operation is done.
				m.queue = append(m.queue, queued{display, text})
				return hist
			}
			return tea.Batch(hist, m.command(name, args))
		}
		if name == "init" { // a prompt to the model, shown as the command
			text = initPrompt
		}
	}
	if m.work != nil {
		m.queue = append(m.queue, queued{display, text})
		return hist
	}
	return tea.Batch(hist, m.startTurn(display, text))
}

// record adds a prompt to the prompt history.
func (m *Model) record(display string, pastes map[int]history.Paste) tea.Cmd {
	e := history.Entry{Display: display, Pasted: pastes, Time: m.now(), Project: m.opts.Cwd, SessionID: m.sess.ID()}
	m.prompt.remember(e)
	w := m.opts.History
	if w == nil {
		return nil
	}
	return func() tea.Msg {
		if err := w.Add(context.Background(), e); err != nil {
			return noticeMsg("the prompt history could not be saved: " + err.Error())
		}
		return nil
	}
}

// startTurn runs a turn in a goroutine that hands its events to Update
// one at a time.
func (m *Model) startTurn(display, text string) tea.Cmd {
	ctx, cancel := context.WithCancel(context.Background())
	m.tr.add(&item{kind: kindUser, text: display})
	w := &work{label: "Working", start: m.now(), cancel: cancel, turn: true, events: make(chan tea.Msg, 64), done: make(chan struct{})}
	m.work = w
	s := m.sess
	go func() {
		defer close(w.events)
		defer close(w.done)
		defer cancel()
		for ev, err := range s.Run(ctx, text) {
			if err != nil {
				used, uerr := s.Used(context.Background())
				w.events <- turnEndMsg{err: err, used: used, measured: uerr == nil}
				return
			}
			msg := eventMsg{ev: ev}
			switch ev.Type {
			case engine.EventRequest, engine.EventAssistant, engine.EventUser, engine.EventCompact:
				used, uerr := s.Used(context.Background())
				msg.used, msg.measured = used, uerr == nil
			}
			w.events <- msg
		}
		used, uerr := s.Used(context.Background())
		w.events <- turnEndMsg{used: used, measured: uerr == nil}
	}()
	return tea.Batch(next(w.events), tick())
}

// next waits for the turn's next message.
func next(ch chan tea.Msg) tea.Cmd {
	return func() tea.Msg {
		msg, ok := <-ch
		if !ok {
			return nil
		}
		return msg
	}
}

// onEvent shows one event of the turn.
func (m *Model) onEvent(msg eventMsg) tea.Cmd {
	w := m.work
	if w == nil || !w.turn {
		return nil
	}
	if msg.measured {
		m.setUsed(msg.used)
	}
	ev := msg.ev
	switch ev.Type {
	case engine.EventUser:
		m.onUser(w, ev.Message)
	case engine.EventRequest:
		w.sent = m.now()
	case engine.EventThinking:
		if w.thinking == nil {
			w.thinking = m.tr.add(&item{kind: kindThinking, streaming: true})
		}
		w.thinking.text += ev.Text
		w.thinking.touch()
	case engine.EventText:
		if w.assistant == nil {
			w.assistant = m.tr.add(&item{kind: kindAssistant, streaming: true})
		}
		w.assistant.text += ev.Text
		w.assistant.touch()
		w.out += int64(max(1, len(ev.Text)/4))
	case engine.EventAssistant:
		m.onAssistant(w, ev)
	case engine.EventToolCall:
		m.tr.add(&item{kind: kindTool, call: *ev.Call})
	case engine.EventToolResult:
		it := m.tr.find(ev.Call.ID)
		if it == nil {
			it = m.tr.add(&item{kind: kindTool, call: *ev.Call})
		}
		it.result = resultOf(ev)
		it.touch()
		if todos, ok := todosOf(it.call); ok && !it.result.isError {
			m.todos = todos
		}
	case engine.EventToolProgress:
		if it := m.tr.find(ev.Call.ID); it != nil && it.result == nil {
			it.progress = oneLine(ev.Text, 200)
			it.touch()
		}
	case engine.EventToolMessage:
		if ev.Response != nil && ev.Progress != nil {
			m.spend(ev.Progress.Model, ev.Response.Usage) // a subagent's reply
		}
	case engine.EventNotice:
		m.tr.add(&item{kind: kindNotice, text: ev.Text})
	case engine.EventStatus:
		w.status = ev.Text
	case engine.EventCompact:
		m.tr.add(&item{kind: kindCompact, compaction: ev.Compaction})
	}
	return next(w.events)
}

// onUser notes the prompt's transcript uuid, and shows what a hook said
// in the user's place.
func (m *Model) onUser(w *work, msg *model.Message) {
	if msg == nil || len(msg.Content) == 0 || msg.Content[0].Type == model.BlockToolResult {
		return
	}
	if !w.sawPrompt {
		w.sawPrompt = true
		for i := len(m.tr.items) - 1; i >= 0; i-- {
			if it := m.tr.items[i]; it.kind == kindUser {
				if len(msg.IDs) > 0 {
					it.msgID = msg.IDs[0]
				}
				break
			}
		}
		return
	}
	m.tr.add(&item{kind: kindNotice, text: msg.Text()})
}

func (m *Model) onAssistant(w *work, ev engine.Event) {
	if w.assistant != nil {
		w.assistant.text = ev.Message.Text()
		w.assistant.streaming = false
		w.assistant.touch()
	}
	if w.thinking != nil {
		w.thinking.streaming = false
	}
	w.assistant, w.thinking = nil, nil
	if r := ev.Response; r != nil {
		m.spend(m.sess.ModelName(), r.Usage)
		w.out = 0
	}
	if !w.sent.IsZero() {
		m.apiTime += m.now().Sub(w.sent)
	}
}

// spend adds a response's usage to the session's, for /cost, priced as
// modelName's: a subagent's replies count too, at its own model's price.
func (m *Model) spend(modelName string, u model.Usage) {
	m.usage = m.usage.Plus(u)
	if m.opts.Cost != nil {
		m.cost += m.opts.Cost(modelName, u)
	}
}

func resultOf(ev engine.Event) *toolResult {
	res := &toolResult{}
	if ev.Result == nil {
		return res
	}
	res.isError = ev.Result.IsError
	var parts []string
	for _, b := range ev.Result.Content {
		if b.Type == model.BlockText {
			parts = append(parts, b.Text)
		}
	}
	res.text = strings.Join(parts, "\n")
	if ev.Result.Detail != nil {
		res.detail, _ = jsonMarshal(ev.Result.Detail)
	}
	return res
}

// onTurnEnd closes the turn and sends the next queued prompt.
func (m *Model) onTurnEnd(msg turnEndMsg) tea.Cmd {
	w := m.work
	if msg.measured {
		m.setUsed(msg.used)
	}
	if w != nil && w.assistant != nil {
		w.assistant.streaming = false
		w.assistant.touch()
	}
	m.work = nil
	for _, a := range m.asks {
		a.answer(Answer{Note: "the turn ended"})
	}
	m.asks = nil
	switch {
	case msg.err == nil:
	case errors.Is(msg.err, context.Canceled):
		m.tr.add(&item{kind: kindError, text: "Interrupted · what should cairn do instead?"})
	default:
		m.tr.add(&item{kind: kindError, text: fmt.Sprint(msg.err)})
	}
	return m.dequeue()
}

// dequeue starts the next queued prompt or runs the next queued
// command, if any.
func (m *Model) dequeue() tea.Cmd {
	if len(m.queue) == 0 || m.work != nil {
		return nil
	}
	q := m.queue[0]
	m.queue = m.queue[1:]
	if name, args, ok := slashCommand(q.text); ok {
		if _, own := m.custom(name); !own && name != "init" {
			cmd := m.command(name, args)
			return tea.Batch(cmd, m.dequeue()) // the next waits if this one started work
		}
	}
	return m.startTurn(q.display, q.text)
}

// loadHistory shows a resumed conversation.
func (m *Model) loadHistory(msgs []model.Message) {
	m.tr.reset()
	m.todos = nil
	results := map[string]*toolResult{}
	for _, msg := range msgs {
		for _, b := range msg.Content {
			if b.Type == model.BlockToolResult {
				r := &toolResult{raw: b.Content}
				r.isError = b.IsError != nil && *b.IsError
				results[b.ToolUseID] = r
			}
		}
	}
	for _, msg := range msgs {
		switch msg.Role {
		case model.RoleUser:
			text := visibleText(msg)
			switch {
			case text == "":
			case text == engine.InterruptedText || text == engine.InterruptedForToolText:
				m.tr.add(&item{kind: kindError, text: "Interrupted"})
			case compact.IsSummary(text):
				m.tr.add(&item{kind: kindNotice, text: "The conversation before this point was compacted into a summary."})
			case compact.IsHarnessText(text):
				// cairn's words, not the person's ("Continue from where you left off.")
			case commandLine(text) != "":
				// A slash command as Claude Code records it: shown as typed,
				// and not a message to rewind to.
				m.tr.add(&item{kind: kindUser, text: commandLine(text)})
			case strings.HasPrefix(text, "<local-command-"):
			default:
				it := &item{kind: kindUser, text: text}
				if len(msg.IDs) > 0 {
					it.msgID = msg.IDs[0]
				}
				m.tr.add(it)
			}
		case model.RoleAssistant:
			for _, b := range msg.Content {
				switch b.Type {
				case model.BlockText:
					if strings.TrimSpace(b.Text) != "" {
						m.tr.add(&item{kind: kindAssistant, text: b.Text})
					}
				case model.BlockThinking:
					m.tr.add(&item{kind: kindThinking, text: b.Thinking})
				case model.BlockToolUse:
					res := results[b.ID]
					if res == nil {
						res = &toolResult{}
					}
					if todos, ok := todosOf(b); ok && !res.isError {
						m.todos = todos
					}
					m.tr.add(&item{kind: kindTool, call: b, result: res})
				}
			}
		}
	}
}

// visibleText is what the user typed in a message: its text blocks,
// without the context the harness attached.
func visibleText(msg model.Message) string {
	var parts []string
	for _, b := range msg.Content {
		if b.Type != model.BlockText {
			continue
		}
		t := strings.TrimSpace(b.Text)
		if t == "" || strings.HasPrefix(t, "<system-reminder>") {
			continue
		}
		parts = append(parts, t)
	}
	return strings.Join(parts, "\n")
}

// commandLine is the slash command a user message records in Claude
// Code's wrapper (<command-name>/x</command-name><command-args>…), or "".
func commandLine(text string) string {
	_, rest, ok := strings.Cut(text, "<command-name>")
	if !ok {
		return ""
	}
	name, _, ok := strings.Cut(rest, "</command-name>")
	if !ok {
		return ""
	}
	var args string
	if _, r, ok := strings.Cut(text, "<command-args>"); ok {
		args, _, _ = strings.Cut(r, "</command-args>")
	}
	return strings.TrimSpace(strings.TrimSpace(name) + " " + strings.TrimSpace(args))
}

// historyMsg brings the prompt history read from disk.
type historyMsg struct{ entries []history.Entry }

func (m *Model) readHistory() tea.Cmd {
	home, project, id := m.opts.Home.Dir, m.opts.Cwd, m.sess.ID()
	if home == "" {
		return nil
	}
	w := m.opts.History
	return func() tea.Msg {
		var entries []history.Entry
		var err error
		if w != nil {
			entries, err = w.Read(context.Background(), project, id, history.DefaultLimit)
		} else {
			entries, err = history.Read(context.Background(), home, project, id, history.DefaultLimit)
		}
		if err != nil {
			return noticeMsg("the prompt history could not be read: " + err.Error())
		}
		return historyMsg{entries}
	}
}
