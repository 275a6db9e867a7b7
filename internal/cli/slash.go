package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/hook"
	"github.com/cairn-dev/cairn/internal/mcp"
	"github.com/cairn-dev/cairn/internal/settings"
	"github.com/cairn-dev/cairn/internal/subagent"
	"github.com/cairn-dev/cairn/internal/tui"
	"github.com/cairn-dev/cairn/transcript"
)

// The reports of the terminal UI's slash commands about the session's
// configuration: /status, /hooks, /agents, /mcp, /export, /add-dir and
// /doctor.

// apiBase is the provider's API root and how the session authenticates.
func apiBase(env Env, provider string) (base, auth string) {
	switch provider {
	case "openai":
		base = cmpOr(env.Getenv("OPENAI_BASE_URL"), "https://api.openai.com/v1/")
		auth = "none (the server needs no key)"
		if env.Getenv("OPENAI_API_KEY") != "" {
			auth = "OPENAI_API_KEY"
		}
	default:
		base = cmpOr(env.Getenv("ANTHROPIC_BASE_URL"), "https://api.anthropic.com")
		switch {
		case env.Getenv("ANTHROPIC_API_KEY") != "":
			auth = "ANTHROPIC_API_KEY"
		case env.Getenv("ANTHROPIC_AUTH_TOKEN") != "":
			auth = "ANTHROPIC_AUTH_TOKEN"
		default:
			auth = "none"
		}
	}
	return base, auth
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// statusReport is /status.
func statusReport(env Env, s *setup, sess tui.Session) string {
	var b strings.Builder
	row := func(k, v string) { fmt.Fprintf(&b, "%-18s %s\n", k+":", v) }
	row("Version", strings.TrimSpace(strings.TrimPrefix(versionLine(agent.Version), "cairn ")))
	row("Model", sess.ModelName())
	row("Session", sess.ID())
	if t := sess.Title(); t != "" {
		row("Name", t)
	}
	row("Transcript", sess.Path())
	row("Folder", env.Cwd)
	if roots := s.checker.Roots(); len(roots) > 1 {
		row("More folders", strings.Join(roots[1:], ", "))
	}
	base, auth := apiBase(env, s.choice.Provider)
	row("API", s.choice.Provider+" at "+base)
	row("Authentication", auth)
	row("Permission mode", string(s.checker.Mode()))
	if len(s.settings.Files) == 0 {
		row("Settings", "no settings file")
	} else {
		row("Settings", strings.Join(s.settings.Files, "\n"+strings.Repeat(" ", 19)))
	}
	for _, w := range s.settings.Warnings {
		row("Skipped", w)
	}
	return strings.TrimRight(b.String(), "\n")
}

// hooksText is /hooks: what `cairn hooks list` prints.
func hooksText(s *setup) string {
	cfg, warnings := hook.Load(s.settings.Files)
	var b strings.Builder
	printHooks(&b, hooksReport{Hooks: cfg.List(), Files: s.settings.Files, Warnings: warnings})
	return strings.TrimRight(b.String(), "\n")
}

// agentsText is /agents: the subagent types the Task tool offers.
func agentsText(env Env, home string) string {
	defs, warnings := subagent.Load(subagent.Dirs(home, env.Cwd)...)
	var b strings.Builder
	b.WriteString("Subagent types (the Task tool's subagent_type)\n")
	for _, d := range defs {
		where := d.Path
		if where == "" {
			where = "built in"
		}
		fmt.Fprintf(&b, "  %-24s %s (%s)\n", d.Name, oneLineText(d.Description, 100), where)
	}
	b.WriteString("\nAdd one as a Markdown file with name and description in its front matter under .claude/agents/ (this project) or " + filepath.Join(home, "agents") + " (you).")
	for _, w := range warnings {
		b.WriteString("\nwarning: " + w)
	}
	return b.String()
}

func oneLineText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// mcpText is /mcp: the session's MCP servers as `cairn mcp list` shows
// them.
func mcpText(servers *mcp.Servers) string {
	var b strings.Builder
	printMCP(&b, mcpReportOf(servers, nil))
	return strings.TrimRight(b.String(), "\n")
}

// mcpStartingText is /mcp while the servers may still be connecting in
// the background: those still starting are named, the rest shown as
// mcpText shows them.
func mcpStartingText(st *mcp.Starting) string {
	if st == nil {
		return mcpText(nil)
	}
	if servers := st.Servers(); servers != nil {
		return mcpText(servers)
	}
	return "Still starting: " + strings.Join(st.Pending(), ", ") + " (their tools join at the first turn after all have connected or failed)"
}

// mcpReportOf describes the servers' state.
func mcpReportOf(servers *mcp.Servers, warnings []string) mcpReport {
	rep := mcpReport{Servers: []mcpServerReport{}, Warnings: warnings}
	if servers == nil {
		return rep
	}
	for _, st := range servers.Status() {
		r := mcpServerReport{Name: st.Name, Type: st.Type, Source: st.Source, Status: "connected", Tools: st.Tools}
		var na *mcp.NotApprovedError
		switch {
		case errors.As(st.Err, &na):
			r.Status, r.Error = "not approved", st.Err.Error()
		case st.Err != nil:
			r.Status, r.Error = "failed", st.Err.Error()
		}
		if r.Tools == nil {
			r.Tools = []string{}
		}
		rep.Servers = append(rep.Servers, r)
	}
	return rep
}

// exportText is /export: the session's whole history, across
// compactions, as `cairn sessions export` writes it.
func exportText(ctx context.Context, sess tui.Session) (string, error) {
	var src transcript.Source
	var err error
	if st, ok := sess.(interface{ Store() transcript.Store }); ok {
		// Through the session's store, which keeps it in a file or not.
		src, err = st.Store().OpenSource(ctx, sess.ID())
	} else {
		// A session that names only its file: through that file's store.
		store, key := transcript.FileStoreOf(sess.Path())
		src, err = store.OpenSource(ctx, key)
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, transcript.ErrNotFound) {
			return "", errors.New("nothing to export yet: the session has no message")
		}
		return "", err
	}
	defer src.Close()
	conv, err := transcript.Load(ctx, src, transcript.LoadOptions{History: true})
	if err != nil {
		return "", fmt.Errorf("read session %s: %w", sess.ID(), err)
	}
	var b strings.Builder
	if err := exportMarkdown(&b, conv); err != nil {
		return "", err
	}
	return b.String(), nil
}

// addDir is /add-dir.
func addDir(env Env, s *setup, dir string) (string, error) {
	if err := checkDirs(env.Cwd, []string{dir}); err != nil {
		return "", errors.New(strings.TrimPrefix(err.Error(), "--add-dir "))
	}
	abs := s.checker.AddDirectory(dir)
	// The sandbox's mounts are made for each command: the next one can
	// write the folder too.
	s.sandbox.AddWritable(abs)
	return "Added " + abs + " to the folders this session may work in (for this session; add it to permissions.additionalDirectories in a settings file to keep it).", nil
}

// doctor is /doctor: each check on a line, ✓ or ✗ with what to do.
func doctor(ctx context.Context, env Env, s *setup, st *mcp.Starting) string {
	var b strings.Builder
	check := func(ok bool, what, detail string) {
		mark := "✓"
		if !ok {
			mark = "✗"
		}
		fmt.Fprintf(&b, "%s %s", mark, what)
		if detail != "" {
			fmt.Fprintf(&b, ": %s", detail)
		}
		b.WriteByte('\n')
	}
	base, auth := apiBase(env, s.choice.Provider)
	check(auth != "none" || s.choice.Provider == "openai", "API key", auth)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if req, err := http.NewRequestWithContext(ctx, http.MethodHead, base, nil); err != nil {
		check(false, "API reachable", base+": "+err.Error())
	} else if resp, err := http.DefaultClient.Do(req); err != nil {
		check(false, "API reachable", base+": "+err.Error()+"; check ANTHROPIC_BASE_URL / OPENAI_BASE_URL and the network")
	} else {
		resp.Body.Close()
		check(true, "API reachable", fmt.Sprintf("%s answered %d", base, resp.StatusCode))
	}
	home, err := env.Home()
	if err != nil {
		check(false, "Settings files", err.Error())
	} else if st, err := settings.Load(home.Dir, env.Cwd); err != nil {
		check(false, "Settings files", err.Error())
	} else if len(st.Warnings) > 0 {
		check(false, "Settings files", strings.Join(st.Warnings, "; "))
	} else {
		check(true, "Settings files", fmt.Sprintf("%d read, all valid", len(st.Files)))
	}
	if p, err := exec.LookPath("bwrap"); err != nil {
		check(false, "Sandbox (bubblewrap)", "bwrap is not installed: install the bubblewrap package for sandboxed commands")
	} else {
		check(true, "Sandbox (bubblewrap)", p)
	}
	servers := st.Wait(ctx)
	rep := mcpReportOf(servers, nil)
	switch {
	case servers == nil && len(st.Pending()) > 0:
		check(false, "MCP servers", "still starting: "+strings.Join(st.Pending(), ", ")+"; run /doctor again, or raise MCP_TIMEOUT if they never come up")
	case len(rep.Servers) == 0:
		check(true, "MCP servers", "none configured")
	}
	for _, sv := range rep.Servers {
		check(sv.Status == "connected", "MCP server "+sv.Name, sv.Status+" "+sv.Error)
	}
	if err == nil {
		f, werr := os.CreateTemp(home.Dir, ".doctor-*")
		if werr == nil {
			f.Close()
			os.Remove(f.Name())
		}
		detail := home.Dir
		if werr != nil {
			detail = werr.Error() + "; make the folder writable or set CAIRN_HOME"
		}
		check(werr == nil, "Home folder writable", detail)
	}
	return strings.TrimRight(b.String(), "\n")
}
