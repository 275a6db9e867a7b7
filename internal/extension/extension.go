// Package extension loads Claude Code's extension points from their
// files: custom slash commands (commands/*.md), skills
// (skills/<name>/SKILL.md) and output styles (output-styles/*.md), from
// the project's .claude/ and .cairn/ folders and from $CAIRN_HOME. A
// session loads them once (Load); the Set it gets is read-only after
// that and safe for concurrent use.
//
// When two files give the same name, the user's ($CAIRN_HOME) wins over
// the project's, and the project's .cairn/ over its .claude/, as Claude
// Code lets a person's own definitions win over a repository's. A skill
// wins over a command of the same name. Every clash is a warning naming
// both files, and Entries keeps the losers for `cairn memory explain`.
package extension

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/cairn-dev/cairn/internal/frontmatter"
	"github.com/cairn-dev/cairn/internal/permission"
)

// MaxFileBytes is the largest command, skill or style file loaded; a
// larger one is skipped with a warning (a 10 MB skill would fill the
// context the moment it loads).
const MaxFileBytes = 1 << 20

// Kind is what an extension file defines.
type Kind string

const (
	KindCommand Kind = "command"
	KindSkill   Kind = "skill"
	KindStyle   Kind = "output style"
)

// Scope is where a definition was found, lowest priority first.
type Scope int

const (
	ScopeBuiltin Scope = iota
	ScopeProjectClaude
	ScopeProjectCairn
	ScopeUser
)

func (s Scope) String() string {
	switch s {
	case ScopeBuiltin:
		return "built-in"
	case ScopeProjectClaude:
		return "project (.claude)"
	case ScopeProjectCairn:
		return "project (.cairn)"
	case ScopeUser:
		return "user"
	}
	return "unknown"
}

// Command is a custom slash command: /Name runs Body as the prompt.
type Command struct {
	Name         string
	Description  string
	ArgumentHint string
	// AllowedTools are permission rules that also hold while the command
	// runs: for its !`…` lines, and for the model's tool calls in the
	// turn the command starts.
	AllowedTools []string
	// Model, when set, is the model of the turn the command starts (an
	// alias such as haiku, or a model's name).
	Model string
	// DisableModelInvocation keeps the command out of the model's reach:
	// only the person can type it.
	DisableModelInvocation bool
	Body                   string
	Path                   string
	Scope                  Scope
}

// Skill is a SKILL.md: its name and description are offered to the
// model; Body is loaded when the model calls the Skill tool or the
// person types /Name. Dir holds its other files.
type Skill struct {
	Name         string
	Description  string
	AllowedTools []string
	// Model, when set, is the model the turn typed as /Name asks for.
	Model     string
	Body      string
	Dir, Path string
	Scope     Scope
}

// Style is an output style: Text goes into the system prompt.
type Style struct {
	Name        string
	Description string
	// KeepCodingInstructions keeps cairn's coding rules in the system
	// prompt beside the style's text.
	KeepCodingInstructions bool
	Text                   string
	Path                   string // "" for a built-in
	Scope                  Scope
}

// Entry is one definition found, for `cairn memory explain`.
type Entry struct {
	Kind  Kind   `json:"kind"`
	Name  string `json:"name"`
	Path  string `json:"path,omitempty"`
	Scope string `json:"scope"`
	// Used is false when another definition of the name won; WonBy then
	// names its file.
	Used  bool   `json:"used"`
	WonBy string `json:"wonBy,omitempty"`
}

// Options say where to look.
type Options struct {
	// ProjectDir holds .claude/ and .cairn/; CairnHome the user's folders.
	// Either may be "".
	ProjectDir, CairnHome string
}

// Set is what a session loaded.
type Set struct {
	Commands []*Command // by name
	Skills   []*Skill   // by name
	Styles   []*Style   // built-ins first, then by name
	Entries  []Entry
	// Warnings name the files that did not load as written.
	Warnings []string
}

// roots are the folders to look in, lowest priority first.
func (o Options) roots() []struct {
	dir   string
	scope Scope
} {
	var out []struct {
		dir   string
		scope Scope
	}
	add := func(dir string, s Scope) {
		if dir != "" {
			out = append(out, struct {
				dir   string
				scope Scope
			}{dir, s})
		}
	}
	if o.ProjectDir != "" {
		add(filepath.Join(o.ProjectDir, ".claude"), ScopeProjectClaude)
		add(filepath.Join(o.ProjectDir, ".cairn"), ScopeProjectCairn)
	}
	add(o.CairnHome, ScopeUser)
	return out
}

// Load reads every command, skill and style. Nothing in it fails: a file
// that cannot be used is a warning naming it, and the rest loads.
func Load(o Options) *Set {
	s := &Set{}
	found := map[string][]Entry{} // kind+name → definitions, in priority order
	commands := map[string]*Command{}
	skills := map[string]*Skill{}
	styles := map[string]*Style{}
	for _, st := range builtinStyles() {
		styles[st.Name] = st
		found["style:"+st.Name] = append(found["style:"+st.Name], Entry{Kind: KindStyle, Name: st.Name, Scope: ScopeBuiltin.String()})
	}
	for _, r := range o.roots() {
		for _, c := range s.loadCommands(filepath.Join(r.dir, "commands"), r.scope) {
			commands[c.Name] = c
			found["command:"+c.Name] = append(found["command:"+c.Name], Entry{Kind: KindCommand, Name: c.Name, Path: c.Path, Scope: r.scope.String()})
		}
		for _, k := range s.loadSkills(filepath.Join(r.dir, "skills"), r.scope) {
			skills[k.Name] = k
			found["skill:"+k.Name] = append(found["skill:"+k.Name], Entry{Kind: KindSkill, Name: k.Name, Path: k.Path, Scope: r.scope.String()})
		}
		if r.scope == ScopeProjectCairn {
			continue // output styles live in .claude/ and $CAIRN_HOME
		}
		for _, st := range s.loadStyles(filepath.Join(r.dir, "output-styles"), r.scope) {
			styles[st.Name] = st
			found["style:"+st.Name] = append(found["style:"+st.Name], Entry{Kind: KindStyle, Name: st.Name, Path: st.Path, Scope: r.scope.String()})
		}
	}
	// A skill takes the name from a command.
	for name, k := range skills {
		if c, ok := commands[name]; ok {
			s.Warnings = append(s.Warnings, fmt.Sprintf("the skill %s and the command %s are both /%s; the skill is used", k.Path, c.Path, name))
			delete(commands, name)
			cs := found["command:"+name]
			for i := range cs {
				cs[i].WonBy = k.Path
			}
			found["command:"+name] = cs
		}
	}
	keys := slices.Sorted(mapKeys(found))
	for _, key := range keys {
		es := found[key]
		last := len(es) - 1
		for i, e := range es {
			switch {
			case e.WonBy != "":
			case i == last:
				e.Used = true
			default:
				e.WonBy = cmp.Or(es[last].Path, "built-in")
				if e.Path != "" {
					s.Warnings = append(s.Warnings, fmt.Sprintf("%s and %s both define the %s %q; %s is used (the user's wins over the project's, .cairn over .claude)", e.Path, es[last].Path, e.Kind, e.Name, es[last].Path))
				}
			}
			s.Entries = append(s.Entries, e)
		}
	}
	for _, name := range slices.Sorted(mapKeys(commands)) {
		s.Commands = append(s.Commands, commands[name])
	}
	for _, name := range slices.Sorted(mapKeys(skills)) {
		s.Skills = append(s.Skills, skills[name])
	}
	for _, name := range slices.Sorted(mapKeys(styles)) {
		s.Styles = append(s.Styles, styles[name])
	}
	slices.SortStableFunc(s.Styles, func(a, b *Style) int { return cmp.Compare(min(a.Scope, 1), min(b.Scope, 1)) })
	return s
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Command returns the command called name, or nil.
func (s *Set) Command(name string) *Command {
	if s == nil {
		return nil
	}
	for _, c := range s.Commands {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Skill returns the skill called name, or nil.
func (s *Set) Skill(name string) *Skill {
	if s == nil {
		return nil
	}
	for _, k := range s.Skills {
		if k.Name == name {
			return k
		}
	}
	return nil
}

// Style returns the output style called name (case-insensitively), or
// nil.
func (s *Set) Style(name string) *Style {
	if s == nil {
		return nil
	}
	for _, st := range s.Styles {
		if strings.EqualFold(st.Name, name) {
			return st
		}
	}
	return nil
}

// readLimited reads a file of at most MaxFileBytes.
func readLimited(path string) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.Size() > MaxFileBytes {
		return nil, fmt.Errorf("it is %s, larger than the %s a file here may be; shorten it (move detail into files beside it that the model can read)", size(info.Size()), size(MaxFileBytes))
	}
	return os.ReadFile(path)
}

func size(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KB", n>>10)
}

// meta is the front matter the three kinds share.
type meta struct {
	Name                   string `yaml:"name"`
	Description            string `yaml:"description"`
	ArgumentHint           string `yaml:"argument-hint"`
	AllowedTools           tools  `yaml:"allowed-tools"`
	Model                  string `yaml:"model"`
	DisableModelInvocation bool   `yaml:"disable-model-invocation"`
	KeepCodingInstructions *bool  `yaml:"keep-coding-instructions"`
}

// tools is allowed-tools: a list, or one string of rules separated by
// commas or spaces (as --allowedTools takes them).
type tools []string

func (t *tools) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*t = permission.SplitRules(n.Value)
		return nil
	case yaml.SequenceNode:
		var list []string
		if err := n.Decode(&list); err != nil {
			return err
		}
		for _, s := range list {
			*t = append(*t, permission.SplitRules(s)...)
		}
		return nil
	}
	return errors.New("allowed-tools must be a list of rules or one string of them")
}

// parse reads a file's front matter into m and returns its body; a
// front matter that does not parse is a warning, and the body is still
// used.
func (s *Set) parse(path string, data []byte, m *meta) string {
	body, err := frontmatter.Parse(data, m)
	if err != nil {
		*m = meta{}
		s.Warnings = append(s.Warnings, fmt.Sprintf("%s: %v; its front matter is ignored (fix the YAML between the --- lines)", path, err))
	}
	return string(body)
}

// loadCommands reads dir's *.md files, subfolders giving "a:b" names.
func (s *Set) loadCommands(dir string, scope Scope) []*Command {
	var out []*Command
	s.walk(dir, func(path string) {
		rel, _ := filepath.Rel(dir, path)
		name := strings.ReplaceAll(strings.TrimSuffix(rel, filepath.Ext(rel)), string(filepath.Separator), ":")
		if !validName(name) {
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s: /%s is not a command name cairn can offer (use letters, digits, - and _); the file is skipped", path, name))
			return
		}
		data, err := readLimited(path)
		if err != nil {
			s.Warnings = append(s.Warnings, fmt.Sprintf("command %s is not loaded: %v", path, err))
			return
		}
		var m meta
		body := s.parse(path, data, &m)
		out = append(out, &Command{
			Name: name, Description: cmp.Or(m.Description, firstLine(body)), ArgumentHint: m.ArgumentHint,
			AllowedTools: m.AllowedTools, Model: m.Model, DisableModelInvocation: m.DisableModelInvocation,
			Body: body, Path: path, Scope: scope,
		})
	})
	return out
}

// walk calls f for each *.md file under dir, in lexical order.
func (s *Set) walk(dir string, f func(path string)) {
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path != dir {
				s.Warnings = append(s.Warnings, fmt.Sprintf("%s: %v", path, err))
			}
			return nil
		}
		if !d.IsDir() && strings.EqualFold(filepath.Ext(path), ".md") {
			f(path)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%s: %v", dir, err))
	}
}

// loadSkills reads dir/<name>/SKILL.md.
func (s *Set) loadSkills(dir string, scope Scope) []*Skill {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.Warnings = append(s.Warnings, fmt.Sprintf("skills in %s are not loaded: %v", dir, err))
		}
		return nil
	}
	var out []*Skill
	for _, e := range ents {
		if !e.IsDir() && e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		folder := filepath.Join(dir, e.Name())
		path := filepath.Join(folder, "SKILL.md")
		data, err := readLimited(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			s.Warnings = append(s.Warnings, fmt.Sprintf("skill %s is not loaded: %v", path, err))
			continue
		}
		var m meta
		body := s.parse(path, data, &m)
		name := strings.TrimSpace(m.Name)
		switch {
		case name == "":
			name = e.Name()
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s has no name in its front matter; it is offered as %q, its folder's name (add name: %s)", path, name, name))
		case !validName(name):
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s: the name %q is not one cairn can offer (use letters, digits, - and _); it is offered as %q, its folder's name", path, name, e.Name()))
			name = e.Name()
		}
		if !validName(name) {
			s.Warnings = append(s.Warnings, fmt.Sprintf("skill %s is not loaded: its folder's name %q is not a skill name either", path, name))
			continue
		}
		desc := strings.TrimSpace(m.Description)
		if desc == "" {
			desc = firstLine(body)
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s has no description in its front matter; the model is offered its first line, which may not say when to use it", path))
		}
		out = append(out, &Skill{Name: name, Description: desc, AllowedTools: m.AllowedTools, Model: m.Model, Body: body, Dir: folder, Path: path, Scope: scope})
	}
	return out
}

// loadStyles reads dir's *.md output styles.
func (s *Set) loadStyles(dir string, scope Scope) []*Style {
	var out []*Style
	s.walk(dir, func(path string) {
		if filepath.Dir(path) != dir {
			return // styles are not nested
		}
		data, err := readLimited(path)
		if err != nil {
			s.Warnings = append(s.Warnings, fmt.Sprintf("output style %s is not loaded: %v", path, err))
			return
		}
		var m meta
		body := s.parse(path, data, &m)
		name := cmp.Or(strings.TrimSpace(m.Name), strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
		out = append(out, &Style{
			Name: name, Description: m.Description, KeepCodingInstructions: m.KeepCodingInstructions != nil && *m.KeepCodingInstructions,
			Text: strings.TrimSpace(body), Path: path, Scope: scope,
		})
	})
	return out
}

// validName reports whether name can follow a slash: letters, digits,
// "-", "_", "." and ":" between folder parts.
func validName(name string) bool {
	if name == "" || strings.HasPrefix(name, ":") || strings.HasSuffix(name, ":") {
		return false
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == ':':
		default:
			return false
		}
	}
	return true
}

// firstLine is a body's first line of text, shortened, for a command
// without a description.
func firstLine(body string) string {
	for line := range strings.SplitSeq(body, "\n") {
		line = strings.TrimSpace(strings.TrimLeft(line, "# "))
		if line != "" {
			if r := []rune(line); len(r) > 100 {
				return string(r[:99]) + "…"
			}
			return line
		}
	}
	return ""
}
