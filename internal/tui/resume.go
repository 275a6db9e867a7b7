package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/cairn-dev/cairn/session"
)

// resumePicker is /resume: the sessions of this project (every project
// with tab), newest first, filtered by a query matched against their
// titles and, through session.Search, their content.
type resumePicker struct {
	all     bool
	query   textinput.Model
	infos   []session.Info
	loading bool
	err     string
	// found holds a snippet by session id for content matches of the
	// query searched (seq numbers the searches; stale ones are dropped).
	found    map[string]string
	searched string
	seq      int
	cursor   int
}

type listMsg struct {
	all   bool
	infos []session.Info
	err   error
}

type searchMsg struct {
	seq   int
	found map[string]string
	err   error
}

// openResume shows the picker and lists the sessions.
func (m *Model) openResume() tea.Cmd {
	if m.work != nil {
		m.tr.add(&item{kind: kindError, text: "/resume waits for the session: press Esc to interrupt the turn first"})
		return nil
	}
	q := textinput.New()
	q.Placeholder = "search titles and content"
	q.Prompt = "Search: "
	q.SetWidth(max(20, m.width-10))
	p := &resumePicker{query: q, loading: true, found: map[string]string{}}
	m.picker = p
	return tea.Batch(p.query.Focus(), p.list(m, false))
}

func (p *resumePicker) list(m *Model, all bool) tea.Cmd {
	home, cwd := m.opts.Home, m.opts.Cwd
	p.loading = true
	return func() tea.Msg {
		infos, err := session.List(context.Background(), home, session.ListOptions{Cwd: cwd, All: all})
		return listMsg{all, infos, err}
	}
}

func (p *resumePicker) search(m *Model) tea.Cmd {
	q := strings.TrimSpace(p.query.Value())
	if q == p.searched {
		return nil
	}
	p.searched = q
	p.seq++
	seq, home, cwd, all := p.seq, m.opts.Home, m.opts.Cwd, p.all
	if len(q) < 2 {
		p.found = map[string]string{}
		return nil
	}
	return func() tea.Msg {
		matches, err := session.Search(context.Background(), home, session.SearchOptions{Query: q, Cwd: cwd, All: all})
		found := map[string]string{}
		for _, mt := range matches {
			if _, ok := found[mt.SessionID]; !ok {
				found[mt.SessionID] = mt.Snippet
			}
		}
		return searchMsg{seq, found, err}
	}
}

// rows are the sessions shown, filtered by the query.
func (p *resumePicker) rows() []session.Info {
	q := strings.ToLower(strings.TrimSpace(p.query.Value()))
	if q == "" {
		return p.infos
	}
	var out []session.Info
	for _, in := range p.infos {
		title := strings.ToLower(in.Title + " " + in.FirstPrompt + " " + in.LastPrompt + " " + in.SessionID)
		if _, ok := p.found[in.SessionID]; ok || strings.Contains(title, q) {
			out = append(out, in)
		}
	}
	return out
}

func (p *resumePicker) update(m *Model, msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case listMsg:
		if msg.all != p.all {
			return nil
		}
		p.loading = false
		p.infos, p.err = nil, ""
		for _, in := range msg.infos {
			if in.SessionID != m.sess.ID() { // the session you are in
				p.infos = append(p.infos, in)
			}
		}
		if msg.err != nil {
			p.err = msg.err.Error()
		}
		p.searched = ""
		return p.search(m)
	case searchMsg:
		if msg.seq == p.seq {
			p.found = msg.found
			if msg.err != nil {
				p.err = msg.err.Error()
			}
		}
		return nil
	case tea.KeyPressMsg:
		rows := p.rows()
		switch msg.String() {
		case "esc":
			m.picker = nil
			return nil
		case "up", "ctrl+p":
			p.cursor = max(0, p.cursor-1)
			return nil
		case "down", "ctrl+n":
			p.cursor = min(max(0, len(rows)-1), p.cursor+1)
			return nil
		case "tab":
			p.all = !p.all
			p.cursor = 0
			return p.list(m, p.all)
		case "enter":
			if p.cursor >= len(rows) {
				return nil
			}
			in := rows[p.cursor]
			m.picker = nil
			return m.reopen(in.Path, "Resumed session "+in.SessionID+".")
		}
	}
	var cmd tea.Cmd
	p.query, cmd = p.query.Update(msg)
	p.cursor = min(p.cursor, max(0, len(p.rows())-1))
	return tea.Batch(cmd, p.search(m))
}

func (p *resumePicker) view(m *Model, width, height int) string {
	st := m.r.st
	scope := "this project"
	if p.all {
		scope = "all projects"
	}
	out := []string{
		st.bold.Render("Resume a session") + st.dim.Render(fmt.Sprintf(" · %s · tab: %s · enter to resume · esc to close", scope, map[bool]string{true: "this project", false: "all projects"}[p.all])),
		p.query.View(),
		"",
	}
	rows := p.rows()
	switch {
	case p.loading:
		out = append(out, st.dim.Render("  Listing sessions…"))
	case p.err != "":
		out = append(out, st.errText.Render(truncate("  "+p.err, width)))
	case len(rows) == 0:
		out = append(out, st.dim.Render("  No sessions match."))
	}
	room := max(1, (height-len(out))/2)
	first := max(0, p.cursor-room+1)
	for i := first; i < len(rows) && i < first+room; i++ {
		in := rows[i]
		// A session's /rename name stands for it, as its first prompt
		// does otherwise.
		title := in.Title
		if title == "" {
			title = in.FirstPrompt
		}
		if title == "" {
			title = "(no prompt)"
		}
		meta := fmt.Sprintf("%s · %d messages", ago(m.now(), in.Modified), in.Messages)
		if p.all {
			meta += " · " + in.Project
		}
		line := "  " + title
		if i == p.cursor {
			line = st.selected.Render("❯ " + title)
		}
		out = append(out, truncate(line, width))
		sub := meta
		if s, ok := p.found[in.SessionID]; ok {
			sub += " · “" + s + "”"
		}
		out = append(out, st.dim.Render(truncate("    "+sub, width)))
	}
	for len(out) < height {
		out = append(out, "")
	}
	return strings.Join(out[:height], "\n")
}

// ago says how long before now t was, as a person would.
func ago(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	case d < 30*24*time.Hour:
		return fmt.Sprintf("%dd ago", int(d.Hours()/24))
	}
	return t.Format("2006-01-02")
}
