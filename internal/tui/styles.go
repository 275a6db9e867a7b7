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

func newStyles() styles {
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
