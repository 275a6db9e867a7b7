package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/mcp/mcptest"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
)

// This test binary is also the MCP servers the tests below configure.
func init() { mcptest.ServeIfAsked() }

// withMCPServers writes the project's .mcp.json: this test binary as the
// stdio servers named (see mcptest.EnvVar), by the names given, and
// approves them with `cairn mcp approve`.
func (p *project) withMCPServers(t *testing.T, servers map[string]string) {
	t.Helper()
	p.writeMCPJSON(t, servers)
	args := []string{"mcp", "approve"}
	for name := range servers {
		args = append(args, name)
	}
	if code, _, errOut := p.cairn(t, args...); code != 0 {
		t.Fatalf("approve: exit %d: %s", code, errOut)
	}
}

// writeMCPJSON writes the project's .mcp.json (see withMCPServers).
func (p *project) writeMCPJSON(t *testing.T, servers map[string]string) {
	t.Helper()
	defs := map[string]any{}
	for name, server := range servers {
		cmd, env := mcptest.Command(server)
		defs[name] = map[string]any{"command": cmd, "env": env}
	}
	data, err := json.Marshal(map[string]any{"mcpServers": defs})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.dir, ".mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMCPToolCall configures a stdio server in .mcp.json; the model calls
// one of its tools, allowed by --allowedTools, and the result reaches the
// next request and the transcript. A server that fails is a warning and
// the session goes on.
func TestMCPToolCall(t *testing.T) {
	p := newProject(t)
	p.withMCPServers(t, map[string]string{"notes": "notes", "broken": "exit"})
	p.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "mcp__notes__echo", `{"text":"hello, server"}`)}},
		modeltest.Text("The server said hello."),
	)
	code, out, errOut := p.cairn(t, "-p", "ask the notes server to echo", "--allowedTools", "mcp__notes")
	if code != 0 || out != "The server said hello.\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if !strings.Contains(errOut, `warning: MCP server "broken" (`) || !strings.Contains(errOut, "the server is broken") || !strings.Contains(errOut, "its tools are not available") {
		t.Errorf("no warning about the broken server: %q", errOut)
	}

	reqs := p.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	var first struct {
		System []struct{ Text string } `json:"system"`
		Tools  []struct{ Name string } `json:"tools"`
	}
	if err := json.Unmarshal(reqs[0].Body, &first); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range first.Tools {
		if strings.HasPrefix(tl.Name, "mcp__") {
			names = append(names, tl.Name)
		}
	}
	want := []string{"mcp__notes__echo", "mcp__notes__env", "mcp__notes__fail", "mcp__notes__picture", "mcp__notes__slow", "mcp__notes__write_note"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("MCP tools offered (-want +got):\n%s", diff)
	}
	var system string
	for _, b := range first.System {
		system += b.Text
	}
	if !strings.Contains(system, "# MCP server instructions") || !strings.Contains(system, "## notes\n"+mcptest.Instructions) {
		t.Errorf("the system prompt lacks the server's instructions:\n%s", system)
	}
	var second struct {
		System []struct{ Text string } `json:"system"`
	}
	if err := json.Unmarshal(reqs[1].Body, &second); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first.System, second.System); diff != "" {
		t.Errorf("the system prompt changed between requests (-first +second):\n%s", diff)
	}
	if !strings.Contains(string(reqs[1].Body), `"tool_use_id":"toolu_1","content":"echo: hello, server"`) {
		t.Errorf("the result did not reach the model: %s", reqs[1].Body)
	}

	// The transcript records the call and its result.
	infos, err := session.List(context.Background(), session.Home{Dir: p.home}, session.ListOptions{Cwd: p.dir})
	if err != nil || len(infos) != 1 {
		t.Fatalf("sessions %v, %v", infos, err)
	}
	data, err := os.ReadFile(infos[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"name":"mcp__notes__echo"`, `"toolUseResult":"echo: hello, server"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the transcript lacks %s:\n%s", want, data)
		}
	}
}

// TestMCPToolDeniedHeadless: without a rule allowing it, a headless run
// refuses an MCP tool, read-only or not, and tells the model why.
func TestMCPToolDeniedHeadless(t *testing.T) {
	p := newProject(t)
	p.withMCPServers(t, map[string]string{"notes": "notes"})
	p.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "mcp__notes__echo", `{"text":"hi"}`)}},
		modeltest.Text("Not allowed."),
	)
	code, out, errOut := p.cairn(t, "-p", "echo with notes", "--output-format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("json output: %v\n%s", err, out)
	}
	if d, _ := res["permission_denials"].([]any); len(d) != 1 {
		t.Errorf("permission_denials %v", res["permission_denials"])
	}
	body := string(p.srv.Last().Body)
	if !strings.Contains(body, "Permission to use mcp__notes__echo was not granted: headless mode cannot ask") || !strings.Contains(body, `"is_error":true`) {
		t.Errorf("the refusal did not reach the model: %s", body)
	}
	if strings.Contains(body, "echo: hi") {
		t.Error("the refused call ran")
	}
}

func TestMCPList(t *testing.T) {
	p := newProject(t)
	p.withMCPServers(t, map[string]string{"notes": "notes", "broken": "exit"})
	code, out, errOut := p.cairn(t, "mcp", "list", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Servers []struct {
			Name, Type, Source, Status, Error string
			Tools                             []string
		}
		Warnings []string
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	source := filepath.Join(p.dir, ".mcp.json")
	if len(rep.Servers) != 2 {
		t.Fatalf("servers %+v", rep.Servers)
	}
	broken, notes := rep.Servers[0], rep.Servers[1]
	if broken.Name != "broken" || broken.Status != "failed" || !strings.Contains(broken.Error, "the server is broken") || broken.Source != source {
		t.Errorf("broken: %+v", broken)
	}
	if notes.Name != "notes" || notes.Status != "connected" || notes.Type != "stdio" || len(notes.Tools) != 6 || notes.Tools[0] != "mcp__notes__echo" {
		t.Errorf("notes: %+v", notes)
	}

	code, out, errOut = p.cairn(t, "mcp", "list")
	if code != 0 || !strings.Contains(out, "notes (stdio, from "+source+"): connected\n  mcp__notes__echo\n") || !strings.Contains(out, "broken (stdio, from "+source+"): failed\n") || errOut != "" {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	code, out, _ = newProject(t).cairn(t, "mcp", "list")
	if code != 0 || !strings.Contains(out, "No MCP servers are configured") {
		t.Errorf("no servers: exit %d, %q", code, out)
	}
}

// TestMCPProjectServersNeedApproval: a server of .mcp.json — a file that
// comes with a cloned repository — does not start until the person
// approves it, and the warning says how; a committed settings file cannot
// approve it; `cairn mcp approve` can, and `--all` approves every one.
func TestMCPProjectServersNeedApproval(t *testing.T) {
	p := newProject(t)
	p.writeMCPJSON(t, map[string]string{"notes": "notes"})
	if err := os.MkdirAll(filepath.Join(p.dir, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.dir, ".claude", "settings.json"), []byte(`{"enableAllProjectMcpServers": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	offered := func() bool { return strings.Contains(string(p.srv.Last().Body), "mcp__notes__echo") }

	p.srv.Enqueue(modeltest.Text("ok"))
	code, _, errOut := p.cairn(t, "-p", "hi")
	if code != 0 || !strings.Contains(errOut, `warning: MCP server "notes" (`) || !strings.Contains(errOut, "`cairn mcp approve notes`") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if offered() {
		t.Fatal("an unapproved server's tools were offered")
	}
	code, out, _ := p.cairn(t, "mcp", "list")
	if code != 0 || !strings.Contains(out, "notes (stdio, from "+filepath.Join(p.dir, ".mcp.json")+"): not approved\n") {
		t.Errorf("list: exit %d\n%s", code, out)
	}

	code, _, errOut = p.cairn(t, "mcp", "approve", "nope")
	if code != 2 || !strings.Contains(errOut, `the project defines no server "nope"; its servers: notes`) {
		t.Errorf("approve an unknown server: exit %d, %q", code, errOut)
	}
	code, out, errOut = p.cairn(t, "mcp", "approve", "notes")
	if code != 0 || !strings.Contains(out, "Approved notes for this project") {
		t.Fatalf("approve: exit %d, %q %q", code, out, errOut)
	}
	p.srv.Enqueue(modeltest.Text("ok"))
	if code, _, errOut := p.cairn(t, "-p", "hi notes"); code != 0 || strings.Contains(errOut, "warning") || !offered() {
		t.Errorf("after approving: exit %d, stderr %q, offered %v", code, errOut, offered())
	}
	local, err := os.ReadFile(filepath.Join(p.dir, ".cairn", "settings.local.json"))
	if err != nil || !strings.Contains(string(local), `"enabledMcpjsonServers": [`) {
		t.Errorf("settings.local.json: %s %v", local, err)
	}

	// --all approves servers added later too.
	q := newProject(t)
	q.writeMCPJSON(t, map[string]string{"later": "notes"})
	if code, _, errOut := q.cairn(t, "mcp", "approve", "--all"); code != 0 {
		t.Fatalf("approve --all: %s", errOut)
	}
	code, out, _ = q.cairn(t, "mcp", "list")
	if code != 0 || !strings.Contains(out, "): connected") {
		t.Errorf("after --all: exit %d\n%s", code, out)
	}
}

// TestMCPApproveDisabled: approving a server a settings.local.json
// refused undoes the refusal there; a refusal in another file stays, and
// approve says so and where, rather than that the server will start.
func TestMCPApproveDisabled(t *testing.T) {
	p := newProject(t)
	p.writeMCPJSON(t, map[string]string{"notes": "notes", "other": "notes"})
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	claudeLocal := filepath.Join(p.dir, ".claude", "settings.local.json")
	write(filepath.Join(p.dir, ".cairn", "settings.local.json"), `{"disabledMcpjsonServers": ["notes"]}`)
	write(claudeLocal, `{"disabledMcpjsonServers": ["other"]}`)

	code, out, errOut := p.cairn(t, "mcp", "approve", "notes")
	if code != 0 || !strings.Contains(out, "Approved notes for this project") || errOut != "" {
		t.Fatalf("approve a refused server: exit %d, %q %q", code, out, errOut)
	}
	code, out, _ = p.cairn(t, "mcp", "list")
	if code != 0 || !strings.Contains(out, "notes (stdio, from "+filepath.Join(p.dir, ".mcp.json")+"): connected\n") {
		t.Errorf("after approving: exit %d\n%s", code, out)
	}

	code, out, errOut = p.cairn(t, "mcp", "approve", "other")
	if code != 0 || strings.Contains(out, "it starts with the next session") ||
		!strings.Contains(errOut, `"other" stays disabled: "disabledMcpjsonServers" in `+claudeLocal+` lists it`) {
		t.Errorf("approve a server refused elsewhere: exit %d, %q %q", code, out, errOut)
	}
}

// TestMCPApproveSaysWhyAServerIsMissing: approving a server whose
// definition is broken names the problem, not only the missing name.
func TestMCPApproveSaysWhyAServerIsMissing(t *testing.T) {
	p := newProject(t)
	if err := os.WriteFile(filepath.Join(p.dir, ".mcp.json"), []byte(`{"mcpServers": {"notes": {"args": ["x"]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := p.cairn(t, "mcp", "approve", "notes")
	if code != 2 || !strings.Contains(errOut, `MCP server "notes" in `) || !strings.Contains(errOut, `needs a "command"`) {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// The settings keys that decide MCP servers work from the --settings
// layer too: enableAllProjectMcpServers and enabledMcpjsonServers there
// approve the project's .mcp.json servers (the person gave the layer, as
// they would approve in settings.local.json), disabledMcpjsonServers
// there leaves one out, and its mcpServers start as the settings files'
// do.
func TestMCPSettingsFromTheSettingsFlag(t *testing.T) {
	p := newProject(t)
	p.writeMCPJSON(t, map[string]string{"notes": "notes", "other": "notes"})
	offered := func(prefix string) bool { return strings.Contains(string(p.srv.Last().Body), `"name":"`+prefix) }
	run := func(settings string) string {
		t.Helper()
		p.srv.Enqueue(modeltest.Text("ok"))
		// The prompt names MCP tools, so the run waits for the servers.
		code, _, errOut := p.cairn(t, "-p", "hi, use the mcp__ tools", "--settings", settings)
		if code != 0 {
			t.Fatalf("--settings %s: exit %d: %s", settings, code, errOut)
		}
		return errOut
	}

	errOut := run(`{"enableAllProjectMcpServers": true}`)
	if !offered("mcp__notes__echo") || !offered("mcp__other__echo") || strings.Contains(errOut, "not approved") {
		t.Errorf("enableAllProjectMcpServers in --settings did not approve the servers; stderr %q", errOut)
	}

	file := filepath.Join(p.dir, "layer.json")
	put(t, file, `{"enabledMcpjsonServers": ["notes"]}`)
	errOut = run(file)
	if !offered("mcp__notes__echo") || offered("mcp__other__echo") || !strings.Contains(errOut, `MCP server "other"`) {
		t.Errorf("enabledMcpjsonServers in a --settings file: notes %v, other %v; stderr %q", offered("mcp__notes__echo"), offered("mcp__other__echo"), errOut)
	}

	errOut = run(`{"enableAllProjectMcpServers": true, "disabledMcpjsonServers": ["other"]}`)
	if !offered("mcp__notes__echo") || offered("mcp__other__echo") {
		t.Errorf("disabledMcpjsonServers in --settings did not leave out other; stderr %q", errOut)
	}

	cmd, env := mcptest.Command("notes")
	def, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"layered": map[string]any{"command": cmd, "env": env}}})
	if err != nil {
		t.Fatal(err)
	}
	errOut = run(string(def))
	if !offered("mcp__layered__echo") || offered("mcp__notes__echo") {
		t.Errorf("mcpServers in --settings: layered %v, notes (unapproved) %v; stderr %q", offered("mcp__layered__echo"), offered("mcp__notes__echo"), errOut)
	}
}
