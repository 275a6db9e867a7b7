package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/mcp"
	"github.com/cairn-dev/cairn/internal/settings"
	"github.com/cairn-dev/cairn/session"
)

// connectMCP connects the MCP servers configured for the project (the
// project's .mcp.json and "mcpServers" in the settings files); what could
// not be used is in the warnings. Close the servers when the session ends.
func connectMCP(ctx context.Context, env Env, home session.Home) (*mcp.Servers, []string) {
	configs, warnings := mcp.Load(home.Dir, env.Cwd, env.Getenv)
	connect, call, tw := mcp.EnvTimeouts(env.Getenv)
	warnings = append(warnings, tw...)
	servers := mcp.Connect(ctx, configs, mcp.Options{Dir: env.Cwd, Timeout: connect, CallTimeout: call, Version: agent.Version})
	return servers, append(warnings, servers.Warnings()...)
}

func newMCPCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Inspect the MCP servers configured for this project",
	}
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "Connect to each configured MCP server and show its status and tools",
		Long: "Connect to each MCP server configured for this project — in the project's .mcp.json and under " +
			`"mcpServers" in the settings files — as a session would, and show where each is defined, whether ` +
			"it connected (or why not) and the names the model calls its tools by.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := env.Home()
			if err != nil {
				return err
			}
			servers, warnings := connectMCP(cmd.Context(), env, home)
			defer servers.Close()
			rep := mcpReportOf(servers, warnings)
			if asJSON {
				return writeJSON(env.Stdout, rep)
			}
			for _, w := range configWarnings(warnings, rep.Servers) {
				fmt.Fprintln(env.Stderr, "warning:", w)
			}
			printMCP(env.Stdout, rep)
			return nil
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print one JSON document")
	cmd.AddCommand(list, newMCPApproveCmd(env))
	return cmd
}

func newMCPApproveCmd(env Env) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "approve NAME... | --all",
		Short: "Let the MCP servers that come with the project start",
		Long: "A server of the project's .mcp.json or committed settings comes with the repository, so cairn starts it only once you " +
			"approve it. approve records the names in enabledMcpjsonServers (--all: enableAllProjectMcpServers) " +
			"in the project's .cairn/settings.local.json; the servers start with the next session.",
		RunE: func(cmd *cobra.Command, names []string) error {
			if all == (len(names) > 0) {
				return usagef("name the servers of .mcp.json to approve, or give --all")
			}
			home, err := env.Home()
			if err != nil {
				return err
			}
			offered, warnings := mcp.ProjectServers(home.Dir, env.Cwd, env.Getenv) // the servers that come with the project
			for _, n := range names {
				if _, ok := offered[n]; !ok {
					for _, w := range warnings { // why a server may be missing
						fmt.Fprintln(env.Stderr, "warning:", w)
					}
					if len(offered) == 0 {
						return usagef("the project defines no server %q to approve (in %s or its settings)", n, mcp.ProjectFile)
					}
					return usagef("the project defines no server %q; its servers: %s", n, strings.Join(slices.Sorted(maps.Keys(offered)), ", "))
				}
			}
			err = settings.EditLocal(env.Cwd, func(doc map[string]json.RawMessage) error {
				if all {
					doc["enableAllProjectMcpServers"] = json.RawMessage("true")
				} else if err := editNames(doc, "enabledMcpjsonServers", func(l []string) []string {
					for _, n := range names {
						if !slices.Contains(l, n) {
							l = append(l, n)
						}
					}
					return l
				}); err != nil {
					return err
				}
				// An approval undoes a refusal recorded in the same file.
				return editNames(doc, "disabledMcpjsonServers", func(l []string) []string {
					return slices.DeleteFunc(l, func(n string) bool { return all || slices.Contains(names, n) })
				})
			})
			if err != nil {
				return err
			}
			what := strings.Join(names, ", ")
			if all {
				what = "every server of " + mcp.ProjectFile
			}
			// A refusal in another file still leaves a server out.
			var still []string
			now, _ := mcp.ProjectServers(home.Dir, env.Cwd, env.Getenv)
			for n, file := range now {
				if file != "" && (all || slices.Contains(names, n)) {
					still = append(still, fmt.Sprintf("%q stays disabled: \"disabledMcpjsonServers\" in %s lists it; remove it there to let it start", n, file))
				}
			}
			next := "; it starts with the next session"
			if len(still) > 0 {
				next = ""
			}
			fmt.Fprintf(env.Stdout, "Approved %s for this project (in %s)%s.\n", what, settings.LocalPath(env.Cwd), next)
			slices.Sort(still)
			for _, w := range still {
				fmt.Fprintln(env.Stderr, "warning:", w)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "approve every server of .mcp.json, now and later")
	return cmd
}

// editNames changes the list of names under key in a settings document;
// an emptied list is removed.
func editNames(doc map[string]json.RawMessage, key string, edit func([]string) []string) error {
	var l []string
	if raw, ok := doc[key]; ok {
		if err := json.Unmarshal(raw, &l); err != nil {
			return fmt.Errorf("%q is not a list of server names: %w", key, err)
		}
	}
	l = edit(l)
	if len(l) == 0 {
		delete(doc, key)
		return nil
	}
	raw, err := json.Marshal(l)
	doc[key] = raw
	return err
}

// mcpReport is what `cairn mcp list` prints.
type mcpReport struct {
	Servers  []mcpServerReport `json:"servers"`
	Warnings []string          `json:"warnings"`
}

type mcpServerReport struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Source string `json:"source"`
	// Status is "connected", "failed" or "not approved", with the reason
	// in Error.
	Status string   `json:"status"`
	Error  string   `json:"error,omitempty"`
	Tools  []string `json:"tools"`
}

// configWarnings leaves out the warnings of failed servers, which the
// listing shows beside them.
func configWarnings(warnings []string, servers []mcpServerReport) []string {
	var out []string
	for _, w := range warnings {
		failed := false
		for _, s := range servers {
			if s.Error != "" && strings.HasPrefix(w, fmt.Sprintf("MCP server %q (", s.Name)) {
				failed = true
			}
		}
		if !failed {
			out = append(out, w)
		}
	}
	return out
}

func printMCP(w io.Writer, rep mcpReport) {
	if len(rep.Servers) == 0 {
		fmt.Fprintln(w, `No MCP servers are configured. Add them to .mcp.json in the project, or under "mcpServers" in a settings file.`)
		return
	}
	for i, s := range rep.Servers {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s (%s, from %s): %s\n", s.Name, s.Type, s.Source, s.Status)
		if s.Error != "" {
			fmt.Fprintf(w, "  %s\n", s.Error)
		}
		for _, t := range s.Tools {
			fmt.Fprintf(w, "  %s\n", t)
		}
	}
}
