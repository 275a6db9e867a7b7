package cli

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/extension"
	"github.com/cairn-dev/cairn/internal/mcp"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// A headless run gives the MCP servers still starting a short grace
// (mcpGraceDefault, CAIRN_MCP_GRACE_MS; never more than MCP_TIMEOUT),
// counted from their start, so that a healthy server that takes a moment
// to come up — most do, npx-based ones a second or more — is in its first
// request even when the prompt does not name it, as in Claude Code,
// while a server that never answers costs at most the grace. Its first
// request waits longer, until every server has connected or failed (each
// within MCP_TIMEOUT), only when its prompt needs them (needsMCP):
//
//   - the prompt names an MCP tool (anything with "mcp__" in it), a
//     server's resource ("@server:"), or a configured server by its name,
//     as a word of its own, case aside;
//   - the prompt is a command or skill (/name) whose allowed-tools name
//     MCP tools;
//   - --allowedTools names MCP tools;
//   - the session continued (-c, -r) has called MCP tools;
//   - the prompts come on stdin (--input-format stream-json), so none is
//     known before the first request.
//
// Then it says on stderr which servers it is waiting for when they are
// not all ready at once. Otherwise, once the grace is over, the first
// request goes with the tools of the servers connected by then, one line
// on stderr names the servers still starting, and their tools join the
// run's next request once every server has connected or failed
// (lateInSteps, Options.LateEachRequest).

// mcpGraceDefault is how long a headless run waits for MCP servers still
// starting when its prompt does not need them; CAIRN_MCP_GRACE_MS sets
// it.
const mcpGraceDefault = 3 * time.Second

// mcpWaitSaid is how long a headless run waits for its servers in silence
// before it says which ones it is waiting for.
const mcpWaitSaid = 300 * time.Millisecond

// mcpGrace reads CAIRN_MCP_GRACE_MS (milliseconds, 0 for no wait),
// mcpGraceDefault when it is unset; a value that is not a whole number
// of milliseconds is ignored with a warning.
func mcpGrace(getenv func(string) string) (time.Duration, string) {
	v := strings.TrimSpace(getenv("CAIRN_MCP_GRACE_MS"))
	if v == "" {
		return mcpGraceDefault, ""
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 || ms > int64(time.Duration(1<<62)/time.Millisecond) {
		return mcpGraceDefault, fmt.Sprintf("CAIRN_MCP_GRACE_MS=%q is not a number of milliseconds; the run gives MCP servers the default %s to start", v, mcpGraceDefault)
	}
	return time.Duration(ms) * time.Millisecond, ""
}

// awaitMCP is called before a headless run's first request: it waits for
// the servers the grace, or up to MCP_TIMEOUT if prompt needs them, tells
// errOut what it does, and then has the tools of the servers up by then
// join ag, so that the init event and a /context before any request list
// them.
func (s *setup) awaitMCP(ctx context.Context, f *agentFlags, prompt string, ag *agent.Agent, errOut io.Writer) {
	defer ag.JoinLate()
	s.sayMCP(s.mcp.Early(), errOut)
	if len(s.mcp.Pending()) == 0 {
		s.sayMCPDone(errOut)
		return
	}
	why := needsMCP(prompt, s.mcpConfigs, f.allowed, ag.Extensions())
	switch {
	case f.ext.streamInput():
		why = "the prompts come on stdin"
	case why == "" && calledMCP(ag.History()):
		why = "the session called MCP tools before"
	}
	if why == "" {
		grace := min(s.mcpGrace, s.mcpTimeout)
		select {
		case <-s.mcp.Done():
			s.sayMCPDone(errOut)
			return
		case <-ctx.Done():
			return
		case <-time.After(time.Until(s.mcpStarted.Add(grace))):
		}
		pending := s.mcp.Pending()
		if len(pending) == 0 { // the last one settled just now
			s.mcp.Wait(ctx)
			s.sayMCPDone(errOut)
			return
		}
		fmt.Fprintf(errOut, "cairn: MCP servers still starting: %s; the run goes on without them after waiting %s (CAIRN_MCP_GRACE_MS sets how long, in milliseconds): their tools join its first request made once every server is ready (name a server or one of its tools in the prompt to wait up to MCP_TIMEOUT)\n",
			strings.Join(pending, ", "), grace)
		return
	}
	select {
	case <-s.mcp.Done():
	case <-ctx.Done():
		return
	case <-time.After(mcpWaitSaid):
		sayWaiting(errOut, s.mcp.Pending(), why, s.mcpTimeout)
		s.mcp.Wait(ctx)
	}
	s.sayMCPDone(errOut)
}

// sayWaiting tells w that the run waits for the servers pending (why,
// each at most timeout); nothing when none is pending any more (the last
// one settled between the timer and the line).
func sayWaiting(w io.Writer, pending []string, why string, timeout time.Duration) {
	if len(pending) == 0 {
		return
	}
	fmt.Fprintf(w, "cairn: waiting for MCP servers still starting: %s (%s; each gets at most %s, which MCP_TIMEOUT sets in milliseconds)\n",
		strings.Join(pending, ", "), why, timeout)
}

// lateInSteps brings a headless run's MCP tools (Options.Late) in at most
// two steps: when first asked (the first request, after awaitMCP), those
// of the servers connected by then; once every server has connected or
// failed, the others, with the section of all. A name given in the
// first step whose tool then belongs to another server (one configured
// earlier that came up later takes it, as Servers' warnings say) is given
// again with that server's tool, which replaces the first (Options.Late).
func lateInSteps(st *mcp.Starting) func() ([]tool.Tool, string, bool) {
	given := map[string]tool.Tool{}
	first := true
	return func() ([]tool.Tool, string, bool) {
		var ts []tool.Tool
		var instructions string
		servers := st.Servers()
		switch {
		case servers != nil:
			ts, instructions = servers.Tools(), servers.Instructions()
		case first:
			ts, instructions = st.Ready()
		}
		first = false
		var fresh []tool.Tool
		for _, t := range ts {
			if name := t.Spec().Name; given[name] != t {
				given[name] = t
				fresh = append(fresh, t)
			}
		}
		return fresh, instructions, servers != nil
	}
}

// sayMCPDone prints the servers' warnings once all have settled.
func (s *setup) sayMCPDone(errOut io.Writer) {
	if servers := s.mcp.Servers(); servers != nil {
		s.sayMCP(servers.Warnings(), errOut)
	}
}

// sayMCP prints each MCP warning not printed before.
func (s *setup) sayMCP(warnings []string, errOut io.Writer) {
	s.mcpMu.Lock()
	defer s.mcpMu.Unlock()
	if s.mcpSaid == nil {
		s.mcpSaid = map[string]bool{}
	}
	for _, w := range warnings {
		if !s.mcpSaid[w] {
			s.mcpSaid[w] = true
			fmt.Fprintln(errOut, "warning:", w)
		}
	}
}

// reportLate is late, which also prints the servers' warnings when their
// tools join a headless run.
func (s *setup) reportLate(late func() ([]tool.Tool, string, bool), errOut io.Writer) func() ([]tool.Tool, string, bool) {
	return func() ([]tool.Tool, string, bool) {
		ts, instructions, ok := late()
		if ok {
			s.sayMCPDone(errOut)
		}
		return ts, instructions, ok
	}
}

// needsMCP says why prompt needs the MCP servers configs configure before
// its first request (see the rule above), "" when it does not. allowed
// are the --allowedTools rules; set holds the commands and skills.
func needsMCP(prompt string, configs []mcp.Config, allowed []string, set *extension.Set) string {
	if strings.Contains(prompt, "mcp__") {
		return "the prompt names an MCP tool"
	}
	for _, c := range configs {
		if c.Unapproved {
			continue
		}
		if strings.Contains(prompt, "@"+c.Name+":") {
			return "the prompt names a resource of " + c.Name
		}
		word := regexp.MustCompile(`(?i)(^|[^\pL\pN_-])` + regexp.QuoteMeta(c.Name) + `($|[^\pL\pN_-])`)
		if word.MatchString(prompt) {
			return "the prompt names " + c.Name
		}
	}
	if name, _, ok := slashCommand(prompt); ok && set != nil {
		var rules []string
		if c := set.Command(name); c != nil {
			rules = c.AllowedTools
		} else if k := set.Skill(name); k != nil {
			rules = k.AllowedTools
		}
		if namesMCP(rules) {
			return "/" + name + " allows MCP tools"
		}
	}
	if namesMCP(allowed) {
		return "--allowedTools names MCP tools"
	}
	return ""
}

// calledMCP reports whether history holds a call of an MCP tool.
func calledMCP(history []model.Message) bool {
	for _, m := range history {
		for _, b := range m.Content {
			if b.Type == "tool_use" && strings.HasPrefix(b.Name, "mcp__") {
				return true
			}
		}
	}
	return false
}

// namesMCP reports whether a permission rule of rules is about MCP tools.
func namesMCP(rules []string) bool {
	for _, r := range rules {
		for _, part := range strings.FieldsFunc(r, func(c rune) bool { return c == ',' || c == ' ' }) {
			if strings.HasPrefix(strings.TrimSpace(part), "mcp__") {
				return true
			}
		}
	}
	return false
}
