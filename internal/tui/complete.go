package tui

import (
	"sort"
	"strconv"
	"strings"
)

// Command is a custom slash command or skill of the session, as /help and
// the completion menu show it. Typing /Name sends the prompt to the
// session, which expands it.
type Command struct {
	Name string
	// Args is the argument hint ("<file>"); Help the description.
	Args, Help string
	// Skill is set for a skill.
	Skill bool
}

// maxCompletions is how many entries the completion menu shows.
const maxCompletions = 6

// completion is one entry of the completion menu.
type completion struct{ name, args, help string }

// custom returns the session's command called name, if there is one (a
// built-in of the same name wins).
func (m *Model) custom(name string) (Command, bool) {
	for _, c := range commands {
		if c.name == name {
			return Command{}, false
		}
	}
	for _, c := range m.opts.Commands {
		if c.Name == name {
			return c, true
		}
	}
	return Command{}, false
}

// completions are the commands that start with what the prompt holds
// while it is a lone "/word": built-ins first, then the session's own,
// each group by name.
func (m *Model) completions() []completion {
	v := m.prompt.value()
	if !strings.HasPrefix(v, "/") || strings.ContainsAny(v, " \n") || strings.HasPrefix(v, "//") {
		return nil
	}
	prefix := v[1:]
	var out []completion
	for _, c := range commands {
		if strings.HasPrefix(c.name, prefix) {
			out = append(out, completion{c.name, c.args, c.help})
		}
	}
	var own []completion
	for _, c := range m.opts.Commands {
		if _, ok := m.custom(c.Name); ok && strings.HasPrefix(c.Name, prefix) {
			own = append(own, completion{c.Name, c.Args, customHelp(c)})
		}
	}
	sort.Slice(own, func(i, j int) bool { return own[i].name < own[j].name })
	out = append(out, own...)
	if len(out) == 1 && out[0].name == prefix {
		return nil // typed in full: nothing left to offer
	}
	return out
}

func customHelp(c Command) string {
	help := c.Help
	if c.Skill {
		help += " (skill)"
	}
	return strings.TrimSpace(help)
}

// completionLines are the menu under the prompt.
func (m *Model) completionLines() []string {
	cs := m.completions()
	if len(cs) == 0 {
		return nil
	}
	var out []string
	for i, c := range cs {
		if i == maxCompletions {
			out = append(out, m.r.st.dim.Render(truncate("  … "+strconv.Itoa(len(cs)-maxCompletions)+" more", m.width)))
			break
		}
		name := "/" + c.name
		if c.args != "" {
			name += " " + c.args
		}
		line := "  " + padRight(name, 28) + " " + c.help
		if i == 0 {
			out = append(out, m.r.st.selected.Render(truncate(line, m.width)))
		} else {
			out = append(out, m.r.st.dim.Render(truncate(line, m.width)))
		}
	}
	return out
}

// complete puts the first completion in the prompt (tab).
func (m *Model) complete() bool {
	cs := m.completions()
	if len(cs) == 0 {
		return false
	}
	m.prompt.set("/"+cs[0].name+" ", nil)
	m.prompt.ta.CursorEnd()
	return true
}

func padRight(s string, n int) string {
	if w := lipglossWidth(s); w < n {
		return s + strings.Repeat(" ", n-w)
	}
	return s
}
