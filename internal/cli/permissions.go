package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/compact"
	"github.com/cairn-dev/cairn/internal/permission"
	"github.com/cairn-dev/cairn/internal/settings"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

func newPermissionsCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "permissions",
		Short: "Inspect how permission rules and modes decide tool calls",
		Args:  args(cobra.NoArgs),
	}
	cmd.AddCommand(newPermissionsCheckCmd(env))
	return cmd
}

func newPermissionsCheckCmd(env Env) *cobra.Command {
	var (
		toolName, input, mode string
		allowed, disallowed   []string
		addDirs               []string
		asJSON, headless      bool
	)
	cmd := &cobra.Command{
		Use:   "check --tool NAME --input JSON",
		Short: "Decide one tool call under this project's settings, exactly as the agent would",
		Long: "Decide one tool call under this project's settings (the user's settings.json in CAIRN_HOME, " +
			"then .claude/ and .cairn/ settings.json and settings.local.json) and print " +
			`{"decision":"allow"|"ask"|"deny","reason","rule"}. Every decision exits 0.`,
		Example: `  cairn permissions check --tool Bash --input '{"command":"git status && rm -rf build"}'
  cairn permissions check --tool Edit --input '{"file_path":"src/main.go"}' --mode acceptEdits --json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			raw, m, err := checkArgs(toolName, input, mode)
			if err != nil {
				return err
			}
			if err := checkDirs(env.Cwd, addDirs); err != nil {
				return err
			}
			chk, err := newChecker(env, m, allowed, disallowed, headless, addDirs...)
			if err != nil {
				return err
			}
			for _, w := range chk.Warnings() {
				fmt.Fprintln(env.Stderr, "warning:", w)
			}
			d, pc := chk.Explain(cmd.Context(), toolFor(toolName), raw)
			if asJSON {
				return writeJSON(env.Stdout, explained{d, pc})
			}
			printDecision(env, d)
			printPath(env, pc)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&toolName, "tool", "", "the tool's name: Bash, Read, Edit, Write, WebFetch, mcp__server__tool …")
	f.StringVar(&input, "input", "", `the tool's input as a JSON object, e.g. '{"command":"npm test"}'`)
	f.StringVar(&mode, "mode", "", "the permission mode: default, acceptEdits, plan, bypassPermissions (default: the settings' defaultMode)")
	f.StringArrayVar(&allowed, "allowedTools", nil, "more allow rules, as for the agent")
	f.StringArrayVar(&disallowed, "disallowedTools", nil, "more deny rules, as for the agent")
	f.StringArrayVar(&addDirs, "add-dir", nil, "another directory the session may work in (repeatable), as for the agent")
	f.BoolVar(&headless, "headless", false, "decide as `cairn -p` does, where what would ask is denied")
	f.BoolVar(&asJSON, "json", false, "print one JSON document")
	return cmd
}

// checkArgs validates the flags: a tool name, a JSON object, a known mode.
func checkArgs(toolName, input, mode string) (json.RawMessage, permission.Mode, error) {
	if toolName == "" {
		return nil, "", usagef("--tool is required, e.g. --tool Bash")
	}
	if input == "" {
		return nil, "", usagef(`--input is required: the tool's input as a JSON object, e.g. --input '{"command":"ls"}'`)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(input), &obj); err != nil || obj == nil {
		return nil, "", usagef(`--input must be a JSON object such as '{"command":"ls"}', not %q`, clip(input, 60, false))
	}
	var m permission.Mode
	if mode != "" {
		var err error
		if m, err = permission.ParseMode(mode); err != nil {
			return nil, "", usagef("--mode: %v", err)
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(input)); err != nil {
		return nil, "", usagef("--input is not valid JSON: %v", err)
	}
	return buf.Bytes(), m, nil
}

// newChecker builds the checker the agent would build for this directory.
func newChecker(env Env, mode permission.Mode, allowed, disallowed []string, headless bool, dirs ...string) (*permission.Checker, error) {
	home, err := env.Home()
	if err != nil {
		return nil, err
	}
	userHome := ""
	if env.Getenv != nil {
		userHome = env.Getenv("HOME")
	}
	if userHome == "" {
		userHome, _ = os.UserHomeDir()
	}
	chk, err := permission.New(permission.Options{
		CairnHome: home.Dir, UserHome: userHome,
		ProjectDir: env.Cwd, Cwd: env.Cwd, Mode: mode,
		AllowedTools: allowed, DisallowedTools: disallowed,
		AdditionalDirectories: dirs, Headless: headless,
	})
	if err != nil {
		return nil, fmt.Errorf("cannot check permissions: %w", err)
	}
	st, err := settings.Load(home.Dir, env.Cwd)
	if err != nil {
		return nil, fmt.Errorf("cannot check permissions: %w", err)
	}
	if _, _, err := newSandbox(st, chk, userHome); err != nil {
		return nil, fmt.Errorf("cannot check permissions: %w", err)
	}
	return chk, nil
}

// printDecision prints a decision for people: "deny: reason (rule: X)".
func printDecision(env Env, d permission.Decision) {
	line := string(d.Behavior) + ": " + d.Reason
	if d.Rule != "" {
		line += " (rule: " + d.Rule + ")"
	}
	fmt.Fprintln(env.Stdout, line)
}

// explained is the JSON form of a decision: {"decision","reason","rule"},
// and "path" when a path constraint decided.
type explained struct {
	permission.Decision
	Path *permission.PathCheck `json:"path,omitempty"`
}

// printPath says, for people, which path a path constraint stopped.
func printPath(env Env, pc *permission.PathCheck) {
	if pc == nil {
		return
	}
	if pc.Path != "" {
		line := "  path: " + pc.Path + " (" + pc.Access + " by `" + pc.Command + "`)"
		if pc.Resolved != "" {
			line += ", which leads to " + pc.Resolved
		}
		fmt.Fprintln(env.Stdout, line)
	}
	if len(pc.Outside) > 0 {
		fmt.Fprintln(env.Stdout, "  outside: "+strings.Join(pc.Outside, ", "))
	}
	if pc.AllowWith != "" {
		fmt.Fprintln(env.Stdout, "  allowed by a rule such as: "+pc.AllowWith)
	}
}

// toolFor is the tool a session would offer under name, so the check
// asks it what the agent's gate asks it (its safety answers, the files
// its call touches): a core tool or Snip. Any other name (an MCP tool,
// one of Claude Code's tools cairn does not have) stands for a tool that
// says nothing of itself — neither read-only nor destructive, touching no
// file — which is what the agent knows of an MCP tool.
func toolFor(name string) tool.Tool {
	for _, t := range append(tools.Core(), compact.NewSnip(compact.SnipConfig{}).Tool()) {
		if t.Spec().Name == name {
			return t
		}
	}
	return unknownTool{name}
}

// unknownTool is a tool known by name only.
type unknownTool struct{ name string }

func (u unknownTool) Spec() model.ToolSpec               { return model.ToolSpec{Name: u.name} }
func (unknownTool) ReadOnly(json.RawMessage) bool        { return false }
func (unknownTool) Destructive(json.RawMessage) bool     { return false }
func (unknownTool) ConcurrencySafe(json.RawMessage) bool { return false }
func (u unknownTool) Run(context.Context, *tool.Env, json.RawMessage) (tool.Result, error) {
	return tool.Errorf("%s is not available here", u.name), nil
}
