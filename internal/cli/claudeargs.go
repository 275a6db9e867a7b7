package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// unknownSubcommands makes every command that only groups others (cairn
// sessions, cairn mcp, …) refuse a word that is none of them with a usage
// error (exit 2) instead of printing its help and exiting 0.
func unknownSubcommands(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		unknownSubcommands(sub)
	}
	if cmd.HasParent() && cmd.HasSubCommands() && !cmd.Runnable() {
		cmd.Args = args(cobra.ArbitraryArgs)
		cmd.RunE = func(c *cobra.Command, a []string) error {
			if len(a) > 0 {
				return usagef("%q is not a command of %s; it has: %s", a[0], c.CommandPath(), subcommandNames(c))
			}
			return c.Help()
		}
	}
}

func subcommandNames(c *cobra.Command) string {
	var names []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	return strings.Join(names, ", ")
}

// claudeArgs rewrites the agent's command line so that the flags cairn
// shares with Claude Code parse as Claude Code's parser reads them, before
// cobra sees them:
//
//   - -r/--resume takes an optional value: the next argument when it does
//     not start with "-" (`-r ID`, `--resume ID`, `-r=ID`, `-rID`);
//     alone, or followed by another flag, it opens the session picker and
//     becomes `--resume=` (an empty value).
//   - --allowedTools and --disallowedTools (and their kebab-case names)
//     take every following argument up to the next one that starts with
//     "-", each a comma- or space-separated list of rules.
//   - A flag of Claude Code's that cairn does not have is an error that
//     names it, never an unknown flag taken for something else.
//
// Everything after "--" is left alone, as are the values of flags that
// take one (`--append-system-prompt -r` appends "-r"). A command line
// whose first word is a subcommand is not the agent's and is returned as
// it is.
func claudeArgs(root *cobra.Command, args []string) ([]string, error) {
	if !agentLine(root, args) {
		return args, nil
	}
	fl := root.Flags()
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() (string, bool) {
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				return args[i], true
			}
			return "", false
		}
		switch {
		case a == "--":
			return append(out, args[i:]...), nil
		case a == "-" || !strings.HasPrefix(a, "-"):
			out = append(out, a)
		case strings.HasPrefix(a, "--"):
			name, value, hasValue := strings.Cut(a[2:], "=")
			switch name {
			case "resume":
				if !hasValue {
					value, _ = next()
				}
				out = append(out, "--resume="+value)
				continue
			case "allowedTools", "allowed-tools", "disallowedTools", "disallowed-tools":
				canonical := strings.ReplaceAll(strings.ReplaceAll(name, "-t", "T"), "-", "")
				values := []string{value}
				if !hasValue {
					values = values[:0]
					for {
						v, ok := next()
						if !ok {
							break
						}
						values = append(values, v)
					}
				}
				if len(values) == 0 {
					return nil, usagef("--%s needs at least one rule, e.g. --%s \"Bash(git status)\" Read", name, canonical)
				}
				for _, v := range values {
					out = append(out, "--"+canonical+"="+v)
				}
				continue
			}
			f := fl.Lookup(name)
			if f == nil {
				if claudeOnly[name] {
					return nil, usagef("--%s is a Claude Code flag that cairn does not have yet; run without it (cairn --help lists the flags cairn has)", name)
				}
				out = append(out, a)
				continue
			}
			out = append(out, a)
			if !hasValue && f.NoOptDefVal == "" && i+1 < len(args) { // it takes a value
				i++
				out = append(out, args[i])
			}
		default:
			// A cluster of shorthands: -p, -pc, -r ID, -rID, -r=ID, -pr ID.
			cluster := a[1:]
			for j := 0; j < len(cluster); j++ {
				c := cluster[j]
				if c == 'r' {
					value := strings.TrimPrefix(cluster[j+1:], "=")
					if value == "" {
						value, _ = next()
					}
					out = append(out, "--resume="+value)
					break
				}
				f := fl.ShorthandLookup(string(c))
				if f == nil {
					if claudeOnlyShort[c] != "" {
						return nil, usagef("-%c (--%s) is a Claude Code flag that cairn does not have yet; run without it (cairn --help lists the flags cairn has)", c, claudeOnlyShort[c])
					}
					out = append(out, "-"+cluster[j:]) // cobra names the unknown flag
					break
				}
				if f.NoOptDefVal != "" { // a boolean
					out = append(out, "-"+string(c))
					continue
				}
				out = append(out, "-"+cluster[j:])
				if j == len(cluster)-1 && i+1 < len(args) {
					i++
					out = append(out, args[i])
				}
				break
			}
		}
	}
	return out, nil
}

// agentLine reports whether args run the agent (cairn, cairn -p), not a
// subcommand: their first word that is not a flag names no subcommand.
func agentLine(root *cobra.Command, args []string) bool {
	for _, a := range args {
		if a == "--" {
			return true
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		sub, _, err := root.Find([]string{a})
		return err != nil || sub == root
	}
	return true
}

// outputFormat is the --output-format that args give, "" if none.
func outputFormat(args []string) string {
	format := ""
	for i, a := range args {
		switch {
		case a == "--":
			return format
		case a == "--output-format" && i+1 < len(args):
			format = args[i+1]
		case strings.HasPrefix(a, "--output-format="):
			format = strings.TrimPrefix(a, "--output-format=")
		}
	}
	return format
}

// claudeOnly are the long flags of Claude Code 2.1.332 (`claude --help`,
// and hidden ones its help does not list) that cairn does not implement:
// given to cairn they are an error naming them. A flag cairn gains is
// found among its own flags first, so this list only needs to stay a
// superset.
var claudeOnly = setOf(
	"agent", "agents", "allow-dangerously-skip-permissions", "autocompact",
	"ax-screen-reader", "background", "bare", "betas", "bg", "brief", "chrome",
	"cloud", "debug", "debug-file", "desktop", "disable-slash-commands", "effort",
	"environment", "exclude-dynamic-system-prompt-sections", "file",
	"forward-subagent-text", "from-pr", "ide", "include-hook-events",
	"include-partial-messages", "mcp-debug", "name", "no-chrome",
	"permission-prompt-tool", "permission-prompts", "plugin-dir", "plugin-url",
	"prompt-suggestions", "remote-control", "remote-control-session-name-prefix",
	"replay-user-messages", "restricted", "safe-mode", "setting-sources",
	"system-prompt-file", "system-prompt-snapshot", "teleport", "tmux", "tools",
	"worktree",
)

// claudeOnlyShort are Claude Code's shorthands that cairn lacks, with
// their long names.
var claudeOnlyShort = map[byte]string{'d': "debug", 'n': "name", 'w': "worktree"}

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// versionLine is what `cairn --version` prints.
func versionLine(version string) string {
	return fmt.Sprintf("cairn %s\n", strings.TrimPrefix(version, "cairn-"))
}
