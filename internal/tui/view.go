package tui

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
)

// spinnerFrames turn while the model works; the frame shown comes from
// the clock, so a fixed clock shows a fixed frame.
var spinnerFrames = []string{"·", "✢", "✳", "✶", "✻", "✽", "✻", "✶", "✳", "✢"}

// View draws the screen: the transcript, then the spinner, the prompt
// (or the permission question) and the footer with the context meter.
func (m *Model) View() tea.View {
	v := tea.NewView(m.frame())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	return v
}

// frame is the screen as text.
func (m *Model) frame() string {
	if m.quit {
		return ""
	}
	if m.picker != nil {
		body := m.picker.view(m, m.width, m.height-1)
		return body + "\n" + m.footer()
	}
	chrome := m.chrome()
	h := max(0, m.height-len(chrome))
	lines := m.tr.view(m.r, m.width, h)
	return strings.Join(append(lines, chrome...), "\n")
}

// chromeHeight is how many lines the screen keeps below the transcript.
func (m *Model) chromeHeight() int { return len(m.chrome()) }

// chrome is everything below the transcript.
func (m *Model) chrome() []string {
	var out []string
	out = append(out, m.status())
	out = append(out, m.pinnedTodos()...)
	for _, q := range m.queue {
		out = append(out, m.r.st.dim.Render(truncate("  ⧗ queued: "+strings.ReplaceAll(q.display, "\n", " "), m.width)))
	}
	if len(m.asks) > 0 {
		out = append(out, m.asks[0].view(m.r, m.width)...)
	} else {
		rule := m.r.st.border.Render(strings.Repeat("─", m.width))
		out = append(out, rule)
		out = append(out, strings.Split(m.prompt.view(), "\n")...)
		out = append(out, rule)
		out = append(out, m.completionLines()...)
	}
	if m.opts.Starting != nil {
		if names := m.opts.Starting(); len(names) > 0 {
			out = append(out, m.r.st.dim.Render(truncate("  ⧗ MCP servers starting: "+strings.Join(names, ", ")+" (their tools join once ready)", m.width)))
		}
	}
	return append(append(out, m.footer()), m.statusLines()...)
}

// status is the spinner line while the session works, else empty.
func (m *Model) status() string {
	w := m.work
	if w == nil {
		return ""
	}
	now := m.now()
	if !w.waitSince.IsZero() {
		now = w.waitSince
	}
	elapsed := now.Sub(w.start) - w.waited
	frame := spinnerFrames[int(elapsed/(100*time.Millisecond))%len(spinnerFrames)]
	label := w.label
	if w.status != "" {
		label = strings.ToUpper(w.status[:1]) + w.status[1:]
	}
	if !w.waitSince.IsZero() {
		label = "Waiting for your answer"
	}
	parts := []string{fmt.Sprintf("%ds", int(elapsed.Seconds()))}
	if w.out > 0 {
		parts = append(parts, "↓ "+short(w.out)+" tokens")
	}
	if w.cancel != nil {
		parts = append(parts, "esc to interrupt")
	}
	text := fmt.Sprintf("%s %s… (%s)", frame, label, strings.Join(parts, " · "))
	return m.r.st.accent.Render(truncate(text, m.width))
}

// footer is the hint on the left and the context meter on the right.
func (m *Model) footer() string {
	hint := "/help for commands · ctrl+o expand"
	switch {
	case m.armed:
		hint = "Press Ctrl+C again to exit"
	case !m.tr.follow:
		hint = "scrolled · esc or ctrl+end for the newest"
	case m.r.expanded:
		hint = "expanded · ctrl+o to collapse"
	case m.switched:
		hint = m.sess.ModelName() + " · " + hint
	}
	meter := m.meter.view(m.r.st, max(0, m.width-len(hint)-2))
	gap := m.width - lipglossWidth(hint) - lipglossWidth(meter)
	if gap < 1 {
		return truncate(meter, m.width)
	}
	return m.r.st.dim.Render(hint) + strings.Repeat(" ", gap) + meter
}
