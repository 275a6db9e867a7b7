package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/cairn-dev/cairn/history"
)

// Pastes longer than this many lines, or characters, are shown as a
// placeholder ("[Pasted text #1 +41 lines]") and sent whole.
const (
	pasteLines = 5
	pasteChars = 800
)

// promptBox is the input: a multi-line editor (Enter sends; Shift+Enter,
// Alt+Enter or Ctrl+J start a new line), large pastes collapsed to a
// placeholder, and ↑/↓ through the prompt history.
type promptBox struct {
	ta     textarea.Model
	pastes map[int]history.Paste
	// entries is the prompt history, the current session's first, newest
	// first; pos is the entry shown, -1 for the draft.
	entries []history.Entry
	pos     int
	draft   string
	drafted map[int]history.Paste
}

func newPromptBox() promptBox {
	ta := textarea.New()
	ta.ShowLineNumbers = false
	ta.Placeholder = `Try "explain this project" — /help for commands`
	ta.CharLimit = 0
	ta.DynamicHeight = true
	ta.MinHeight = 1
	ta.MaxHeight = 10
	ta.SetPromptFunc(2, func(info textarea.PromptInfo) string {
		if info.LineNumber == 0 {
			return "> "
		}
		return "  "
	})
	ta.KeyMap.InsertNewline = key.NewBinding(key.WithKeys("shift+enter", "alt+enter", "ctrl+j"))
	s := ta.Styles()
	s.Focused.CursorLine = lipgloss.NewStyle()
	s.Focused.Placeholder = lipgloss.NewStyle().Foreground(lipgloss.Color("8"))
	s.Blurred.Placeholder = s.Focused.Placeholder
	ta.SetStyles(s)
	ta.Focus()
	return promptBox{ta: ta, pastes: map[int]history.Paste{}, pos: -1}
}

func (p *promptBox) setWidth(w int) { p.ta.SetWidth(max(w, 10)) }

func (p *promptBox) view() string { return p.ta.View() }

func (p *promptBox) height() int { return p.ta.Height() }

func (p *promptBox) empty() bool { return strings.TrimSpace(p.ta.Value()) == "" }

func (p *promptBox) value() string { return p.ta.Value() }

// continueLine turns a backslash that ends the text into a new line, as
// a shell continues a command: Enter after a backslash starts a line
// instead of sending. It reports whether it did.
func (p *promptBox) continueLine() bool {
	v := p.ta.Value()
	if !strings.HasSuffix(v, "\\") {
		return false
	}
	p.ta.SetValue(strings.TrimSuffix(v, "\\") + "\n")
	return true
}

// set replaces the text (and its pastes).
func (p *promptBox) set(text string, pastes map[int]history.Paste) {
	p.ta.SetValue(text)
	p.pastes = map[int]history.Paste{}
	for k, v := range pastes {
		p.pastes[k] = v
	}
}

// clear empties the box, forgetting the pastes and the history position.
func (p *promptBox) clear() {
	p.ta.Reset()
	p.pastes = map[int]history.Paste{}
	p.pos = -1
}

// take returns the prompt as typed (placeholders kept), as it is sent
// (pastes expanded), and its pastes, and clears the box.
func (p *promptBox) take() (display, text string, pastes map[int]history.Paste) {
	display = strings.TrimSpace(p.ta.Value())
	pastes = p.pastes
	text = history.ExpandPastes(display, pastes)
	p.clear()
	return display, text, pastes
}

// paste inserts pasted text, collapsing a large one.
func (p *promptBox) paste(content string) {
	content = strings.ReplaceAll(content, "\r\n", "\n")
	content = strings.ReplaceAll(content, "\r", "\n")
	if strings.Count(content, "\n") < pasteLines && len(content) < pasteChars {
		p.ta.InsertString(content)
		return
	}
	id := 1
	for p.pastes[id].ID != 0 {
		id++
	}
	p.pastes[id] = history.Paste{ID: id, Type: history.TypeText, Content: content}
	p.ta.InsertString(history.Placeholder(id, content))
}

// older shows the previous prompt of the history; newer the next one.
func (p *promptBox) older() bool {
	if p.pos+1 >= len(p.entries) {
		return false
	}
	if p.pos == -1 {
		p.draft, p.drafted = p.ta.Value(), p.pastes
	}
	p.pos++
	e := p.entries[p.pos]
	pos := p.pos
	p.set(e.Display, e.Pasted)
	p.pos = pos
	p.ta.MoveToBegin()
	return true
}

func (p *promptBox) newer() bool {
	if p.pos < 0 {
		return false
	}
	p.pos--
	pos := p.pos
	if p.pos == -1 {
		p.set(p.draft, p.drafted)
	} else {
		e := p.entries[p.pos]
		p.set(e.Display, e.Pasted)
	}
	p.pos = pos
	p.ta.MoveToEnd()
	return true
}

// remember puts a prompt just sent at the front of the history.
func (p *promptBox) remember(e history.Entry) {
	p.entries = append([]history.Entry{e}, p.entries...)
}

// update handles a key or paste the model did not take.
func (p *promptBox) update(msg tea.Msg) tea.Cmd {
	if m, ok := msg.(tea.PasteMsg); ok {
		p.paste(m.Content)
		return nil
	}
	if m, ok := msg.(tea.KeyPressMsg); ok {
		switch m.String() {
		case "up":
			if p.ta.Line() == 0 && p.older() {
				return nil
			}
		case "down":
			if p.ta.Line() == p.ta.LineCount()-1 && p.newer() {
				return nil
			}
		}
	}
	var cmd tea.Cmd
	p.ta, cmd = p.ta.Update(msg)
	return cmd
}
