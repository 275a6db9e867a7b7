package tui

import (
	"context"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/cairn-dev/cairn/internal/filehistory"
)

// rewindPicker is /rewind: pick one of your prompts, see which files
// going back to before it changes, then rewind the code, the
// conversation or both.
type rewindPicker struct {
	prompts []*item // newest first
	cursor  int
	// The preview of the chosen prompt.
	chosen  *item
	plan    *filehistory.Plan
	planErr string
	option  int
}

type planMsg struct {
	plan *filehistory.Plan
	err  error
}

// rewind options, in the order offered.
var rewindOptions = []struct {
	label              string
	code, conversation bool
}{
	{"Restore code and conversation", true, true},
	{"Restore conversation only", false, true},
	{"Restore code only", true, false},
	{"Never mind", false, false},
}

func (m *Model) openRewind() tea.Cmd {
	p := &rewindPicker{}
	for i := len(m.tr.items) - 1; i >= 0; i-- {
		if it := m.tr.items[i]; it.kind == kindUser && it.msgID != "" {
			p.prompts = append(p.prompts, it)
		}
	}
	if len(p.prompts) == 0 {
		m.info("Nothing to rewind to yet: no prompt of this conversation is left to go back to.")
		return nil
	}
	m.picker = p
	return nil
}

func (p *rewindPicker) update(m *Model, msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case planMsg:
		p.plan, p.planErr = msg.plan, ""
		if msg.err != nil {
			p.planErr = msg.err.Error()
		}
		return nil
	case tea.KeyPressMsg:
		if p.chosen != nil {
			return p.previewKey(m, msg.String())
		}
		switch msg.String() {
		case "esc":
			m.picker = nil
		case "up", "k":
			p.cursor = max(0, p.cursor-1)
		case "down", "j":
			p.cursor = min(len(p.prompts)-1, p.cursor+1)
		case "enter":
			p.chosen, p.plan, p.planErr, p.option = p.prompts[p.cursor], nil, "", 0
			s, id := m.sess, p.chosen.msgID
			return func() tea.Msg {
				plan, err := s.RewindPlan(id)
				return planMsg{plan, err}
			}
		}
	}
	return nil
}

func (p *rewindPicker) previewKey(m *Model, key string) tea.Cmd {
	switch key {
	case "esc":
		p.chosen = nil
	case "up", "k":
		p.option = max(0, p.option-1)
	case "down", "j":
		p.option = min(len(rewindOptions)-1, p.option+1)
	case "1", "2", "3", "4":
		p.option = int(key[0] - '1')
		return p.apply(m)
	case "enter":
		return p.apply(m)
	}
	return nil
}

// apply rewinds as chosen; the prompt goes back into the input box.
func (p *rewindPicker) apply(m *Model) tea.Cmd {
	opt := rewindOptions[p.option]
	m.picker = nil
	if !opt.code && !opt.conversation {
		return nil
	}
	if opt.code && p.plan == nil && !opt.conversation {
		m.tr.add(&item{kind: kindError, text: "The files cannot be rewound: " + p.planErr})
		return nil
	}
	s, chosen := m.sess, p.chosen
	code := opt.code && p.plan != nil
	return m.run("Rewinding", func(ctx context.Context) doneMsg {
		plan, err := s.Rewind(ctx, chosen.msgID, code, opt.conversation)
		var said []string
		if plan != nil {
			said = append(said, fmt.Sprintf("Files rewound: %d changed.", len(plan.Changes)))
		}
		d := doneMsg{err: err}
		if opt.conversation && err == nil {
			said = append(said, "Conversation rewound to before your message; it is back in the prompt to edit.")
			d.apply = func(m *Model) tea.Cmd {
				m.loadHistory(s.History())
				m.welcome()
				m.prompt.set(chosen.text, nil)
				return m.measure()
			}
		}
		d.info = strings.Join(said, " ")
		return d
	})
}

func (p *rewindPicker) view(m *Model, width, height int) string {
	st := m.r.st
	var out []string
	if p.chosen == nil {
		out = append(out, st.bold.Render("Rewind")+st.dim.Render(" · pick the message to go back to before · enter to preview · esc to close"), "")
		room := max(1, height-len(out))
		first := max(0, p.cursor-room+1)
		for i := first; i < len(p.prompts) && i < first+room; i++ {
			line := "  " + oneLine(p.prompts[i].text, width-4)
			if i == p.cursor {
				line = st.selected.Render("❯ " + oneLine(p.prompts[i].text, width-4))
			}
			out = append(out, line)
		}
	} else {
		out = append(out, st.bold.Render("Rewind to before this message"), "")
		out = append(out, st.user.Render(truncate("> "+oneLine(p.chosen.text, width-2), width)), "")
		switch {
		case p.planErr != "":
			out = append(out, indent("Files: "+p.planErr, width, "", "  ")...)
		case p.plan == nil:
			out = append(out, st.dim.Render("Files: looking…"))
		case len(p.plan.Changes) == 0:
			out = append(out, "Files: none changed since this message.")
		default:
			out = append(out, fmt.Sprintf("Files that will change (%d):", len(p.plan.Changes)))
			for _, c := range p.plan.Changes {
				out = append(out, truncate(fmt.Sprintf("  %-8s %s  %s", c.Action, m.r.rel(c.Path), changeStat(st, c)), width))
			}
		}
		out = append(out, "")
		for i, o := range rewindOptions {
			line := fmt.Sprintf("  %d. %s", i+1, o.label)
			if i == p.option {
				line = st.selected.Render(fmt.Sprintf("❯ %d. %s", i+1, o.label))
			}
			out = append(out, line)
		}
	}
	for len(out) < height {
		out = append(out, "")
	}
	return strings.Join(out[:height], "\n")
}

// changeStat is a change's size: lines added and removed.
func changeStat(st styles, c filehistory.Change) string {
	switch {
	case c.ModeOnly:
		return "(mode only)"
	case c.Binary:
		return "(binary)"
	}
	var parts []string
	if c.Added > 0 {
		parts = append(parts, st.added.Render(fmt.Sprintf("+%d", c.Added)))
	}
	if c.Removed > 0 {
		parts = append(parts, st.removed.Render(fmt.Sprintf("-%d", c.Removed)))
	}
	return strings.Join(parts, " ")
}
