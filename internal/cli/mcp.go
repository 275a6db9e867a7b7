package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/mcp"
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
			rep := mcpReport{Servers: []mcpServerReport{}, Warnings: warnings}
			for _, st := range servers.Status() {
				r := mcpServerReport{Name: st.Name, Type: st.Type, Source: st.Source, Status: "connected", Tools: st.Tools}
				if st.Err != nil {
					r.Status, r.Error = "failed", st.Err.Error()
				}
				if r.Tools == nil {
					r.Tools = []string{}
				}
				rep.Servers = append(rep.Servers, r)
			}
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
	cmd.AddCommand(list)
	return cmd
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
	// Status is "connected" or "failed", with the reason in Error.
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
