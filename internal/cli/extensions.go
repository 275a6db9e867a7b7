package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

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
	style, w := outputStyle(set, s.settings)
	if w != "" {
		s.warnings = append(s.warnings, w)
	}
	s.opts.Extensions = agent.ExtensionOptions{
		Set: set, AllowShell: shellAllow(s.checker), AllowRead: readAllow(s.checker), Grant: s.checker.Grant, OutputStyle: style,
	}
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
		req := c.Request(tools.Bash{}, input)
		req.Headless = true
		// A command's !`…` line runs with bash outside the sandbox, so the
		// sandbox's auto-allow (and its private /tmp) must not decide it.
		req.Sandbox = nil
		if len(allowedTools) > 0 {
			rules := req.Rules
			rules.Allow = slices.Clone(rules.Allow)
			for _, s := range allowedTools {
				r, err := permission.ParseRule(s)
				if err != nil {
					return fmt.Errorf("its allowed-tools entry %q is not a permission rule: %v", s, err)
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

// readAllow decides a command's @path include as the Read tool's call of
// it would be decided (deny rules, secrets); what would ask is refused.
func readAllow(c *permission.Checker) func(ctx context.Context, path string) error {
	return func(ctx context.Context, path string) error {
		input, err := json.Marshal(map[string]string{"file_path": path})
		if err != nil {
			return err
		}
		req := c.Request(tools.Read{}, input)
		req.Headless = true
		if d := permission.Decide(ctx, req); d.Behavior != permission.Allow {
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

// extensionNames are the names of the session's commands and skills, as
// stream-json's init event lists them.
func extensionNames(ag *agent.Agent) []string {
	var out []string
	for _, c := range uiCommands(ag) {
		out = append(out, c.Name)
	}
	return out
}

// explainExtensions is what `cairn memory explain` says of the commands,
// skills and output styles: each definition found, where, and which won
// a name two share.
type explainExtensions struct {
	Entries []extension.Entry `json:"entries"`
	// Style is the output style in force; StyleFrom the setting's file.
	Style     string   `json:"outputStyle"`
	StyleFrom string   `json:"outputStyleFrom,omitempty"`
	Warnings  []string `json:"warnings"`
}

func buildExtensionsExplain(env Env, home session.Home, st *settings.Settings) explainExtensions {
	set := extension.Load(extension.Options{ProjectDir: env.Cwd, CairnHome: home.Dir})
	x := explainExtensions{Entries: set.Entries, Style: "default", Warnings: set.Warnings}
	if x.Entries == nil {
		x.Entries = []extension.Entry{}
	}
	if x.Warnings == nil {
		x.Warnings = []string{}
	}
	style, w := outputStyle(set, st)
	if w != "" {
		x.Warnings = append(x.Warnings, w)
	}
	if style != nil {
		x.Style, x.StyleFrom = style.Name, st.Source["outputStyle"]
	}
	return x
}

func printExtensionsExplain(w io.Writer, x explainExtensions) {
	for _, kind := range []extension.Kind{extension.KindCommand, extension.KindSkill, extension.KindStyle} {
		var lines []string
		for _, e := range x.Entries {
			if e.Kind != kind {
				continue
			}
			where := e.Scope
			if e.Path != "" {
				where = e.Path + " [" + e.Scope + "]"
			}
			state := ""
			if !e.Used {
				state = " — not used: " + e.WonBy + " wins"
			}
			name := e.Name
			if kind != extension.KindStyle {
				name = "/" + name
			}
			lines = append(lines, fmt.Sprintf("  %s  %s%s", name, where, state))
		}
		if len(lines) == 0 && kind != extension.KindStyle {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n%s\n", map[extension.Kind]string{extension.KindCommand: "Custom commands", extension.KindSkill: "Skills (names and descriptions load with every session; a body when used)", extension.KindStyle: "Output styles"}[kind], strings.Join(lines, "\n"))
	}
	from := ""
	if x.StyleFrom != "" {
		from = " (outputStyle in " + x.StyleFrom + ")"
	}
	fmt.Fprintf(w, "  in force: %s%s\n", x.Style, from)
	for _, warning := range x.Warnings {
		fmt.Fprintln(w, "  warning:", warning)
	}
}

// statusLineOf is the settings' statusLine as the UI runs it: the
// command with the session's JSON on stdin, in the project; nil when
// none is set or its kind is not "command" (a warning then).
func statusLineOf(st *settings.Settings, dir string, warn io.Writer) tui.StatusLine {
	raw, ok := st.Raw["statusLine"]
	if !ok || settings.IsNull(raw) {
		return nil
	}
	var sl struct {
		Type    string `json:"type"`
		Command string `json:"command"`
	}
	if err := json.Unmarshal(raw, &sl); err != nil || sl.Type != "command" || strings.TrimSpace(sl.Command) == "" {
		fmt.Fprintf(warn, "warning: the setting statusLine in %s must be {\"type\": \"command\", \"command\": \"…\"}; no status line is shown\n", st.Source["statusLine"])
		return nil
	}
	return func(ctx context.Context, input []byte) (string, error) {
		cmd := exec.CommandContext(ctx, "bash", "-c", sl.Command)
		cmd.Dir, cmd.Stdin = dir, bytes.NewReader(input)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = time.Second
		out, err := cmd.Output()
		return string(out), err
	}
}
