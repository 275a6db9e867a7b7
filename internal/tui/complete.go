package tui

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/cairn-dev/cairn/internal/ignore"
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

// completion is one entry of the completion menu: a command, or with
// path set a file or folder after "@" (name is its path from the working
// directory, folders ending in "/").
type completion struct {
	name, args, help string
	path             bool
}

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
	if ps := m.pathCompletions(v); ps != nil {
		return ps
	}
	if !strings.HasPrefix(v, "/") || strings.ContainsAny(v, " \n") || strings.HasPrefix(v, "//") {
		return nil
	}
	prefix := v[1:]
	var out []completion
	for _, c := range commands {
		if strings.HasPrefix(c.name, prefix) {
			out = append(out, completion{name: c.name, args: c.args, help: c.help})
		}
	}
	var own []completion
	for _, c := range m.opts.Commands {
		if _, ok := m.custom(c.Name); ok && strings.HasPrefix(c.Name, prefix) {
			own = append(own, completion{name: c.Name, args: c.Args, help: customHelp(c)})
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
		if c.path {
			name = "@" + c.name
		}
		line := strings.TrimRight("  "+padRight(name, 28)+" "+c.help, " ")
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
	if c := cs[0]; c.path {
		v := m.prompt.value()
		at := strings.LastIndex(v, "@")
		text := v[:at] + "@" + c.name
		if !strings.HasSuffix(c.name, "/") {
			text += " " // a file: done; a folder: go on into it
		}
		m.prompt.set(text, m.prompt.pastes)
		m.prompt.ta.CursorEnd()
		return true
	}
	m.prompt.set("/"+cs[0].name+" ", nil)
	m.prompt.ta.CursorEnd()
	return true
}

// pathCompletions are the files and folders that complete the "@path"
// the prompt ends with, from the working directory: the entries of its
// folder that start with what is typed, folders first, leaving out .git
// and what .gitignore ignores. nil when the prompt does not end in one.
func (m *Model) pathCompletions(v string) []completion {
	at := strings.LastIndex(v, "@")
	if at < 0 || (at > 0 && !unicode.IsSpace(rune(v[at-1]))) || strings.ContainsAny(v[at:], " \t\n") || m.opts.Cwd == "" {
		return nil
	}
	typed := v[at+1:]
	dirPart, prefix := "", typed
	if i := strings.LastIndex(typed, "/"); i >= 0 {
		dirPart, prefix = typed[:i+1], typed[i+1:]
	}
	dir := filepath.Join(m.opts.Cwd, filepath.FromSlash(dirPart))
	ents, err := os.ReadDir(dir)
	if err != nil {
		return []completion{}
	}
	top, ps := ignore.Above(dir)
	ps = append(ps, ignore.ReadFile(filepath.Join(dir, ".gitignore"), ignore.Domain(top, dir))...)
	matcher := gitignore.NewMatcher(ps)
	base := ignore.Domain(top, dir)
	var dirs, files []completion
	for _, e := range ents {
		name := e.Name()
		if name == ".git" || !strings.HasPrefix(name, prefix) || (strings.HasPrefix(name, ".") && !strings.HasPrefix(prefix, ".")) {
			continue
		}
		isDir := e.IsDir()
		if top != "" && matcher.Match(append(slices.Clip(base), name), isDir) {
			continue
		}
		if isDir {
			dirs = append(dirs, completion{name: dirPart + name + "/", path: true})
		} else {
			files = append(files, completion{name: dirPart + name, path: true})
		}
	}
	out := append(dirs, files...)
	if len(out) == 1 && out[0].name == typed {
		return []completion{} // typed in full
	}
	if out == nil {
		return []completion{}
	}
	return out
}

func padRight(s string, n int) string {
	if w := lipglossWidth(s); w < n {
		return s + strings.Repeat(" ", n-w)
	}
	return s
}
