package tui

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/tool"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
)

// permDialog asks the person about one tool call: allow once, allow
// always (a rule in the project's local settings), or refuse with a note
// for the model.
type permDialog struct {
	q       Question
	reply   chan Answer
	project string
	choice  int
	// noting is set while the person types the note of a refusal.
	noting bool
	note   textinput.Model
	// err is why the rule could not be written.
	err string
	// change is the diff the call would make, worked out once.
	change  *patch
	changed bool
}

// patch is the diff a call that writes a file would make: from the file
// as it is now, with its line numbers and three lines of context — the
// diff shown after the call — else from the call's own strings.
func (d *permDialog) patch() (patch, bool) {
	if !d.changed {
		d.changed = true
		if c, ok := tools.PreviewChange(d.q.Tool, d.q.Input); ok {
			p := diffOf(c.Path, c.Before, c.After)
			d.change = &p
		} else if p, ok := patchFromInput(d.q.Input); ok {
			d.change = &p
		}
	}
	if d.change == nil || len(d.change.Hunks) == 0 {
		return patch{}, false
	}
	return *d.change, true
}

func newPermDialog(a asked, project string) *permDialog {
	ti := textinput.New()
	ti.Placeholder = "tell cairn what to do instead (optional)"
	ti.Prompt = "  › "
	ti.SetWidth(60)
	return &permDialog{q: a.q, reply: a.reply, project: project, note: ti}
}

// Answers to a plan (a question about ExitPlanMode), in order; the last
// is the refusal, as for any call.
var planChoices = []struct{ label, mode string }{
	{"Yes, and auto-accept edits", "acceptEdits"},
	{"Yes, and approve each edit", "default"},
	{"No, keep planning: tell cairn what to change (esc)", ""},
}

// isPlan reports whether the question is a plan to approve.
func (d *permDialog) isPlan() bool { return d.q.Tool == "ExitPlanMode" }

// choices are the answers offered.
func (d *permDialog) choices() []string {
	if d.isPlan() {
		var c []string
		for _, p := range planChoices {
			c = append(c, p.label)
		}
		return c
	}
	c := []string{"Yes"}
	if d.q.Rule != "" {
		c = append(c, fmt.Sprintf("Yes, and don't ask again for %s in this project", d.q.Rule))
	}
	return append(c, "No, and tell cairn what to do differently (esc)")
}

// answer sends the answer to the waiting call, once.
func (d *permDialog) answer(a Answer) {
	if d.reply != nil {
		d.reply <- a
		d.reply = nil
	}
}

// done answers and moves on to the next question.
func (m *Model) nextAsk(a Answer) {
	if len(m.asks) == 0 {
		return
	}
	m.asks[0].answer(a)
	m.asks = m.asks[1:]
}

func (d *permDialog) update(m *Model, msg tea.Msg) tea.Cmd {
	if d.noting {
		if k, ok := msg.(tea.KeyPressMsg); ok {
			switch k.String() {
			case "enter":
				m.nextAsk(Answer{Note: strings.TrimSpace(d.note.Value())})
				return nil
			case "esc":
				m.nextAsk(Answer{})
				return nil
			}
		}
		var cmd tea.Cmd
		d.note, cmd = d.note.Update(msg)
		return cmd
	}
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	n := len(d.choices())
	switch k.String() {
	case "up", "k", "shift+tab":
		d.choice = (d.choice + n - 1) % n
	case "down", "j", "tab":
		d.choice = (d.choice + 1) % n
	case "1", "2", "3":
		i := int(k.String()[0] - '1')
		if i < n {
			d.choice = i
			return d.choose(m)
		}
	case "enter":
		return d.choose(m)
	case "esc", "n":
		m.nextAsk(Answer{})
	case "y":
		m.nextAsk(Answer{Allow: true})
	case "ctrl+c":
		if m.work != nil && m.work.cancel != nil {
			m.work.cancel()
		}
		m.nextAsk(Answer{Note: "interrupted"})
	}
	return nil
}

func (d *permDialog) choose(m *Model) tea.Cmd {
	n := len(d.choices())
	switch {
	case d.isPlan() && d.choice < n-1:
		m.nextAsk(Answer{Allow: true, Mode: planChoices[d.choice].mode})
	case d.choice == 0:
		m.nextAsk(Answer{Allow: true})
	case d.choice == n-1:
		d.noting = true
		return d.note.Focus()
	default:
		if err := AddAllowRule(d.project, d.q.Rule); err != nil {
			d.err = err.Error()
			return nil
		}
		m.tr.add(&item{kind: kindNotice, text: fmt.Sprintf("Added %s to %s", d.q.Rule, LocalSettings(d.project))})
		m.nextAsk(Answer{Allow: true, Always: true, Rule: d.q.Rule})
	}
	return nil
}

// view draws the question in a box width wide.
func (d *permDialog) view(r *renderer, width int) []string {
	inner := width - 4
	var body []string
	title := toolTitle(d.q.Tool)
	body = append(body, r.st.bold.Render(title))
	var detail []string
	switch d.q.Tool {
	case "ExitPlanMode":
		var in struct {
			Plan string `json:"plan"`
		}
		_ = json.Unmarshal(d.q.Input, &in)
		for _, l := range strings.Split(strings.TrimRight(in.Plan, "\n"), "\n") {
			detail = append(detail, wrap(l, inner-2)...)
		}
		if len(detail) > planLines {
			detail = append(detail[:planLines], fmt.Sprintf("… %d more lines in the plan file", len(detail)-planLines))
		}
		for i := range detail {
			detail[i] = "  " + detail[i]
		}
	default:
		if t, known := r.lookup(d.q.Tool); !known || !tool.Writes(t, d.q.Input) {
			break
		}
		if p, ok := d.patch(); ok {
			detail = append(detail, "  "+r.rel(p.FilePath))
			detail = append(detail, r.diff(p, inner-2, 12)...)
		}
	}
	if detail == nil {
		if arg := r.callArg(d.q.Tool, d.q.Input); arg != "" {
			detail = indent(arg, inner, "  ", "  ")
		} else {
			detail = []string{"  " + truncate(string(d.q.Input), inner-2)}
		}
		if len(detail) > 8 {
			detail = append(detail[:8], "  …")
		}
	}
	body = append(body, detail...)
	if d.q.Reason != "" {
		for _, l := range wrap(d.q.Reason, inner) {
			body = append(body, r.st.dim.Render(l))
		}
	}
	question := "Do you want to proceed?"
	if d.isPlan() {
		question = "Would you like to carry out this plan?"
	}
	body = append(body, "", question)
	for i, c := range d.choices() {
		line := fmt.Sprintf("  %d. %s", i+1, c)
		if i == d.choice {
			line = r.st.selected.Render(fmt.Sprintf("❯ %d. %s", i+1, c))
		}
		body = append(body, truncate(line, inner))
	}
	if d.noting {
		body = append(body, d.note.View())
	}
	if d.err != "" {
		for _, l := range wrap(d.err, inner) {
			body = append(body, r.st.errText.Render(l))
		}
	}
	return box(r, body, width)
}

// planLines is how much of a plan the question shows; the rest is in the
// plan file.
const planLines = 30

// toolTitle names what is asked about.
func toolTitle(tool string) string {
	switch tool {
	case "Bash":
		return "Bash command"
	case "Edit", "MultiEdit":
		return "Edit file"
	case "Write":
		return "Write file"
	case "WebFetch":
		return "Fetch"
	case "ExitPlanMode":
		return "Plan ready for review"
	}
	return "Use " + tool
}

// box draws lines in a rounded border width wide.
func box(r *renderer, lines []string, width int) []string {
	inner := max(1, width-4)
	out := []string{r.st.border.Render("╭" + strings.Repeat("─", width-2) + "╮")}
	for _, l := range lines {
		l = truncate(l, inner)
		pad := inner - lipglossWidth(l)
		out = append(out, r.st.border.Render("│ ")+l+strings.Repeat(" ", max(0, pad))+r.st.border.Render(" │"))
	}
	return append(out, r.st.border.Render("╰"+strings.Repeat("─", width-2)+"╯"))
}
