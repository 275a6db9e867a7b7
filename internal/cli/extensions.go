package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/extension"
	"github.com/cairn-dev/cairn/internal/permission"
	"github.com/cairn-dev/cairn/internal/settings"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/internal/tui"
	"github.com/cairn-dev/cairn/session"
)

// loadExtensions loads the session's custom commands, skills and output
// style into the agent's options, once a session; what did not load is a
// warning.
func (s *setup) loadExtensions(env Env) {
	set := extension.Load(extension.Options{ProjectDir: env.Cwd, CairnHome: s.home.Dir})
	s.warnings = append(s.warnings, set.Warnings...)
	s.opts.Extensions = set
	s.opts.AllowShell = shellAllow(s.checker)
	style, w := outputStyle(set, s.settings)
	if w != "" {
		s.warnings = append(s.warnings, w)
	}
	s.opts.OutputStyle = style
}

// outputStyle is the style the settings' outputStyle names; nil for the
// default. An unknown name is a warning.
func outputStyle(set *extension.Set, st *settings.Settings) (*extension.Style, string) {
	raw, ok := st.Raw["outputStyle"]
	if !ok {
		return nil, ""
	}
	var name string
	if json.Unmarshal(raw, &name) != nil || strings.TrimSpace(name) == "" {
		return nil, fmt.Sprintf("the setting outputStyle must be a style's name, not %s; using the default style", raw)
	}
	style := set.Style(name)
	if style == nil {
		var names []string
		for _, s := range set.Styles {
			names = append(names, s.Name)
		}
		return nil, fmt.Sprintf("the setting outputStyle names %q, which is no output style here (there are %s; add .claude/output-styles/%s.md); using the default style", name, strings.Join(names, ", "), name)
	}
	if style.Text == "" {
		return nil, ""
	}
	return style, ""
}

// shellAllow decides a command's !`…` line as the Bash tool's call of it
// would be decided, with the command's allowed-tools rules added to the
// allow rules. Nobody is asked while a command expands: what would ask is
// refused.
func shellAllow(c *permission.Checker) func(ctx context.Context, command string, allowedTools []string) error {
	return func(ctx context.Context, command string, allowedTools []string) error {
		input, err := json.Marshal(map[string]string{"command": command})
		if err != nil {
			return err
		}
		bash := tools.Bash{}
		req := c.Request("Bash", input, bash.ReadOnly(input), bash.Destructive(input))
		req.Headless = true
		if len(allowedTools) > 0 {
			rules := req.Rules
			rules.Allow = slices.Clone(rules.Allow)
			for _, s := range allowedTools {
				r, err := permission.ParseRule(s)
				if err != nil {
					continue
				}
				r.Source = "the command's allowed-tools"
				rules.Allow = append(rules.Allow, r)
			}
			req.Rules = rules.Compile()
		}
		d := permission.Decide(ctx, req)
		if d.Behavior != permission.Allow {
			return errors.New(strings.TrimSuffix(d.Reason, "."))
		}
		return nil
	}
}

// skillReadRules let the model read the files beside the skills of the
// user's $CAIRN_HOME/skills, which are outside the project.
func skillReadRules(home session.Home) []string {
	if home.Dir == "" {
		return nil
	}
	return []string{"Read(/" + filepath.Join(home.Dir, "skills") + "/**)"}
}

// isExtension reports whether the session has a custom command or skill
// called name.
func isExtension(ag *agent.Agent, name string) bool {
	set := ag.Extensions()
	return set.Command(name) != nil || set.Skill(name) != nil
}

// uiCommands are the session's commands and skills as the terminal UI
// lists them.
func uiCommands(ag *agent.Agent) []tui.Command {
	set := ag.Extensions()
	if set == nil {
		return nil
	}
	var out []tui.Command
	for _, c := range set.Commands {
		out = append(out, tui.Command{Name: c.Name, Args: c.ArgumentHint, Help: c.Description})
	}
	for _, k := range set.Skills {
		out = append(out, tui.Command{Name: k.Name, Help: k.Description, Skill: true})
	}
	return out
}
