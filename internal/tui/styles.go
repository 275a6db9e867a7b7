package tui

import "charm.land/lipgloss/v2"

// styles are the colours and emphasis of the UI, in one place.
type styles struct {
	user, assistant, dim, faint, bold lipgloss.Style
	tool, toolErr, toolOK             lipgloss.Style
	added, removed, hunk              lipgloss.Style
	notice, errText, accent, warn     lipgloss.Style
	selected, border                  lipgloss.Style
}

// The themes (Options.Theme).
const (
	ThemeDark  = "dark"
	ThemeLight = "light"
	// ThemePlain has no colours (NO_COLOR): emphasis only.
	ThemePlain = "plain"
)

func newStyles(theme string) styles {
	switch theme {
	case ThemePlain:
		plain, faint, bold := lipgloss.NewStyle(), lipgloss.NewStyle().Faint(true), lipgloss.NewStyle().Bold(true)
		return styles{
			user: plain, assistant: plain, dim: faint, faint: faint, bold: bold,
			tool: bold, toolErr: bold, toolOK: faint,
			added: plain, removed: plain, hunk: faint,
			notice: plain, errText: bold, accent: bold, warn: bold,
			selected: bold.Reverse(true), border: faint,
		}
	case ThemeLight:
		st := newStyles(ThemeDark)
		st.user = lipgloss.NewStyle().Foreground(lipgloss.Color("0"))
		st.tool = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
		st.toolErr = lipgloss.NewStyle().Foreground(lipgloss.Color("1"))
		st.notice = lipgloss.NewStyle().Foreground(lipgloss.Color("94"))
		st.errText = lipgloss.NewStyle().Foreground(lipgloss.Color("1"))
		st.accent = lipgloss.NewStyle().Foreground(lipgloss.Color("5"))
		st.warn = lipgloss.NewStyle().Foreground(lipgloss.Color("130"))
		st.selected = lipgloss.NewStyle().Foreground(lipgloss.Color("4")).Bold(true)
		return st
	}
	return styles{
		user:      lipgloss.NewStyle().Foreground(lipgloss.Color("7")),
		assistant: lipgloss.NewStyle(),
		dim:       lipgloss.NewStyle().Foreground(lipgloss.Color("8")),
		faint:     lipgloss.NewStyle().Faint(true),
		bold:      lipgloss.NewStyle().Bold(true),
		tool:      lipgloss.NewStyle().Foreground(lipgloss.Color("10")),
		toolErr:   lipgloss.NewStyle().Foreground(lipgloss.Color("9")),
		toolOK:    lipgloss.NewStyle().Foreground(lipgloss.Color("8")),
		added:     lipgloss.NewStyle().Foreground(lipgloss.Color("2")),
		removed:   lipgloss.NewStyle().Foreground(lipgloss.Color("1")),
		hunk:      lipgloss.NewStyle().Foreground(lipgloss.Color("6")),
		notice:    lipgloss.NewStyle().Foreground(lipgloss.Color("3")),
		errText:   lipgloss.NewStyle().Foreground(lipgloss.Color("9")),
		accent:    lipgloss.NewStyle().Foreground(lipgloss.Color("13")),
		warn:      lipgloss.NewStyle().Foreground(lipgloss.Color("11")),
		selected:  lipgloss.NewStyle().Foreground(lipgloss.Color("14")).Bold(true),
		border:    lipgloss.NewStyle().Foreground(lipgloss.Color("8")),
	}
}
