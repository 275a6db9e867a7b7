// Package subagent defines the kinds of agent the Task tool can start
// (SPEC E4): the built-in general-purpose agent, and custom agents
// described by Markdown files in Claude Code's format — YAML front
// matter with name, description, and optionally tools and model; the
// body is the agent's system prompt. Custom agents load from
// $CAIRN_HOME/agents, then the project's .claude/agents, then its
// .cairn/agents; a later file with the same name wins.
//
// Running a subagent is the session's business (internal/agent); this
// package only says what each kind is.
package subagent

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/internal/frontmatter"
)

// GeneralPurpose is the built-in agent's name, the subagent_type a Task
// call gets when it names none.
const GeneralPurpose = "general-purpose"

// Definition is one kind of subagent.
type Definition struct {
	// Name is what a Task call's subagent_type names.
	Name string
	// Description tells the main agent when to use it.
	Description string
	// Tools lists the tools it may use, by name; nil allows every tool
	// the main agent has (but Task). DisallowedTools are taken away from
	// those.
	Tools           []string
	DisallowedTools []string
	// Model is the model it runs on: "" or "inherit" for the main
	// agent's, an alias (sonnet, opus, haiku) or a model's name.
	Model string
	// Prompt is its own instructions, added to the system prompt.
	Prompt string
	// Path is the file it was read from; "" for the built-in agent.
	Path string
}

// Allows reports whether the agent may use the tool named name.
func (d Definition) Allows(name string) bool {
	if slices.Contains(d.DisallowedTools, name) {
		return false
	}
	return d.Tools == nil || slices.Contains(d.Tools, name) || slices.Contains(d.Tools, "*")
}

// BuiltIn returns the agents every session has.
func BuiltIn() []Definition {
	return []Definition{{
		Name: GeneralPurpose,
		Description: "A general-purpose agent for researching complex questions, searching code and carrying out multi-step tasks on its own. " +
			"Use it when finding something may take several rounds of searching, or to hand off a self-contained piece of work.",
		Prompt: "Search broadly when you do not know where something lives, and narrow down from what you find. " +
			"Read the code rather than guess at it. Do what the task asks, no more; create files only when the task needs them.",
	}}
}

// Dirs returns the folders custom agents load from, lowest priority
// first: the user's under home, then the project's.
func Dirs(home, project string) []string {
	var dirs []string
	if home != "" {
		dirs = append(dirs, filepath.Join(home, "agents"))
	}
	if project != "" {
		dirs = append(dirs, filepath.Join(project, ".claude", "agents"), filepath.Join(project, ".cairn", "agents"))
	}
	return dirs
}

// Load returns the built-in agents and the custom agents of dirs (the
// *.md files directly in each), sorted by name. An agent of a later
// folder replaces one of the same name before it, built-in ones
// included. A file that cannot be read or does not describe an agent is
// skipped, with a warning that says what to fix; a missing folder holds
// no agents.
func Load(dirs ...string) (defs []Definition, warnings []string) {
	byName := make(map[string]Definition)
	for _, d := range BuiltIn() {
		byName[d.Name] = d
	}
	for _, dir := range dirs {
		ents, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("agents: %v; the agents there are not loaded", err))
			continue
		}
		for _, e := range ents {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
				continue
			}
			path := filepath.Join(dir, e.Name())
			data, err := os.ReadFile(path)
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("agent file %s: %v; skipped", path, err))
				continue
			}
			d, err := Parse(data)
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("agent file %s: %v; skipped", path, err))
				continue
			}
			d.Path = path
			byName[d.Name] = d
		}
	}
	for _, d := range byName {
		defs = append(defs, d)
	}
	slices.SortFunc(defs, func(a, b Definition) int { return strings.Compare(a.Name, b.Name) })
	return defs, warnings
}

// front is the front matter of an agent file.
type front struct {
	Name            string `yaml:"name"`
	Description     string `yaml:"description"`
	Tools           any    `yaml:"tools"`
	DisallowedTools any    `yaml:"disallowedTools"`
	Model           string `yaml:"model"`
}

// Parse reads an agent file. Front matter that is not valid YAML (Claude
// Code writes descriptions with unquoted colons) is read line by line,
// one "key: value" a line, as Claude Code reads it.
func Parse(data []byte) (Definition, error) {
	if _, _, ok, err := frontmatter.Split(data); err != nil {
		return Definition{}, err
	} else if !ok {
		return Definition{}, errors.New("no front matter: an agent file starts with a --- block giving its name and description")
	}
	var f front
	body, err := frontmatter.Parse(data, &f)
	if err != nil {
		var lerr error
		if f, lerr = lenient(data); lerr != nil {
			return Definition{}, err
		}
	}
	d := Definition{
		Name: strings.TrimSpace(f.Name), Description: strings.TrimSpace(f.Description),
		Model: strings.TrimSpace(f.Model), Prompt: strings.TrimSpace(string(body)),
	}
	if d.Name == "" {
		return Definition{}, errors.New(`the front matter has no "name"; add name: my-agent`)
	}
	if !validName(d.Name) {
		return Definition{}, fmt.Errorf("the name %q is not usable: use letters, digits, - and _ only", d.Name)
	}
	if d.Description == "" {
		return Definition{}, fmt.Errorf(`the agent %q has no "description"; add one saying when to use it`, d.Name)
	}
	if d.Tools, err = names("tools", f.Tools); err != nil {
		return Definition{}, err
	}
	if d.DisallowedTools, err = names("disallowedTools", f.DisallowedTools); err != nil {
		return Definition{}, err
	}
	return d, nil
}

// lenient reads front matter that is not YAML, one "key: value" a line.
// A tools list keeps its YAML forms: "- Read" lines under a key with no
// value, or [Read, Grep]; a key with no value and no items is absent.
func lenient(data []byte) (front, error) {
	fm, _, _, _ := frontmatter.Split(data)
	var f front
	var items *any // the list field "- item" lines go to
	for _, line := range bytes.Split(fm, []byte("\n")) {
		s := strings.TrimSpace(string(line))
		if item, ok := strings.CutPrefix(s, "- "); ok && items != nil {
			list, _ := (*items).([]any)
			*items = append(list, strings.Trim(strings.TrimSpace(item), `"'`))
			continue
		}
		items = nil
		k, v, ok := strings.Cut(s, ":")
		if !ok {
			continue
		}
		raw := strings.TrimSpace(v)
		v = strings.Trim(raw, `"'`)
		switch strings.TrimSpace(k) {
		case "name":
			f.Name = v
		case "description":
			f.Description = strings.ReplaceAll(v, `\n`, "\n")
		case "tools":
			items = lenientList(&f.Tools, raw, v)
		case "disallowedTools":
			items = lenientList(&f.DisallowedTools, raw, v)
		case "model":
			f.Model = v
		}
	}
	if f.Name == "" {
		return front{}, errors.New("no name")
	}
	return f, nil
}

// lenientList sets a list field from its line's value (raw as written,
// v unquoted) and returns the field when the items follow on their own
// lines.
func lenientList(field *any, raw, v string) *any {
	switch {
	case raw == "":
		*field = nil
		return field
	case strings.HasPrefix(raw, "[") && strings.HasSuffix(raw, "]"):
		var list []any
		for _, item := range strings.Split(raw[1:len(raw)-1], ",") {
			list = append(list, strings.Trim(strings.TrimSpace(item), `"'`))
		}
		*field = list
	default:
		*field = v
	}
	return nil
}

// names reads a tools list: a comma-separated string or a YAML list.
// A permission-rule form such as Bash(git:*) counts as its tool's name.
// Absent is nil (every tool); present and empty is no tool.
func names(field string, v any) ([]string, error) {
	var raw []string
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		raw = strings.Split(v, ",")
	case []any:
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("%s: %v is not a tool name", field, x)
			}
			raw = append(raw, s)
		}
	default:
		return nil, fmt.Errorf("%s must be a list of tool names, such as: Read, Grep, Glob", field)
	}
	out := []string{}
	for _, s := range raw {
		s = strings.TrimSpace(s)
		if i := strings.IndexByte(s, '('); i > 0 {
			s = strings.TrimSpace(s[:i])
		}
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

func validName(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// Model aliases a custom agent may name, and the Claude models they stand
// for.
var aliases = map[string]string{
	"sonnet": "claude-sonnet-4-5",
	"opus":   "claude-opus-4-1",
	"haiku":  "claude-haiku-4-5",
}

// ModelName returns the model an agent runs on when the main agent runs
// on parent (see ResolveModel).
func (d Definition) ModelName(parent string) string { return ResolveModel(d.Model, parent) }

// ResolveModel is the model a definition's model field m names (a custom
// agent's, a custom command's) when the session runs on parent: the
// parent's for "" and "inherit"; for an alias (sonnet, opus, haiku), the
// Claude model it stands for, or the parent's when that is not a Claude
// model (another provider serves no Claude models); else m itself.
func ResolveModel(m, parent string) string {
	m = strings.TrimSpace(m)
	switch {
	case m == "" || m == "inherit":
		return parent
	case aliases[m] != "":
		if !strings.Contains(strings.ToLower(parent), "claude") {
			return parent
		}
		if strings.Contains(strings.ToLower(parent), m) {
			return parent // already one of that family
		}
		return aliases[m]
	}
	return m
}
