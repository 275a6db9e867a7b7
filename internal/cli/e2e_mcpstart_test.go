package cli_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
)

// TestMCPStartsInBackground: a stdio MCP server that never answers does
// not hold the terminal UI: the screen opens while it is starting and
// says so, a prompt goes without its tools, and once every server has
// connected or failed (MCP_TIMEOUT) the ready server's tools join at the
// next prompt — in one change of the tool list.
func TestMCPStartsInBackground(t *testing.T) {
	p := newProject(t)
	p.withMCPServers(t, map[string]string{"notes": "notes", "stuck": "hang"})
	p.srv.Enqueue(modeltest.Text("First answer."), modeltest.Text("Second answer."))
	x := p.startUI(t, 120, 30, []string{"MCP_TIMEOUT=6000"})
	s := x.waitFor("MCP servers starting:")
	if !strings.Contains(s, "stuck") || !strings.Contains(s, "Welcome to cairn") {
		t.Errorf("the screen does not say the stuck server is starting:\n%s", s)
	}
	x.typeKeys("first question", "Enter")
	s = x.waitFor("First answer.")
	pendingDuringFirst := strings.Contains(s, "MCP servers starting: stuck")
	x.waitFor("MCP servers ready: notes")
	s = x.waitFor("stuck")
	if !strings.Contains(s, "no answer within 6s") {
		t.Errorf("no warning says the stuck server did not answer:\n%s", s)
	}
	if strings.Contains(s, "MCP servers starting:") {
		t.Errorf("the starting line stays once every server is settled:\n%s", s)
	}
	x.typeKeys("second question", "Enter")
	x.waitFor("Second answer.")

	var first, second []byte
	for _, r := range p.srv.Requests() {
		switch {
		case bytes.Contains(r.Body, []byte("second question")):
			second = r.Body
		case bytes.Contains(r.Body, []byte("first question")) && first == nil:
			first = r.Body
		}
	}
	if first == nil || second == nil {
		t.Fatalf("the two prompts' requests are not among the %d received", len(p.srv.Requests()))
	}
	if pendingDuringFirst && bytes.Contains(first, []byte(`"mcp__notes__echo"`)) {
		t.Errorf("the first request, sent while a server was starting, already has the servers' tools")
	}
	if !bytes.Contains(second, []byte(`"name":"mcp__notes__echo"`)) || !bytes.Contains(second, []byte("## notes")) {
		t.Errorf("the second request lacks the ready server's tools or instructions")
	}
}

// TestMCPHeadlessTimeout: a -p prompt that names a server waits for the
// servers before the first request, as Claude Code does, but never past
// MCP_TIMEOUT and never in silence: stderr says which server it waits for
// and why, then one warning that the stuck one did not answer, and the
// request has the tools of the server that did.
func TestMCPHeadlessTimeout(t *testing.T) {
	p := newProject(t)
	p.withMCPServers(t, map[string]string{"notes": "notes", "stuck": "hang"})
	p.env = append(p.env, "MCP_TIMEOUT=1500")
	p.srv.Enqueue(modeltest.Text("Answered."))
	code, out, errOut := p.cairn(t, "-p", "ask the Notes server to echo hello")
	if code != 0 || out != "Answered.\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// The notes server may still be starting too on a loaded machine.
	waitLine := regexp.MustCompile(`cairn: waiting for MCP servers still starting: (notes, )?stuck \(the prompt names notes; each gets at most 1\.5s`)
	waiting := -1
	if loc := waitLine.FindStringIndex(errOut); loc != nil {
		waiting = loc[0]
	}
	if waiting < 0 {
		t.Errorf("stderr does not say which server the run waits for, and why:\n%s", errOut)
	}
	if n := strings.Count(errOut, `MCP server "stuck"`); n != 1 || !strings.Contains(errOut, "no answer within 1.5s") {
		t.Errorf("want one warning that the stuck server did not answer within 1.5s; stderr:\n%s", errOut)
	}
	if waiting > strings.Index(errOut, "no answer within") {
		t.Errorf("the timeout's warning comes before the line saying the run waits:\n%s", errOut)
	}
	if !bytes.Contains(p.srv.Last().Body, []byte(`"name":"mcp__notes__echo"`)) {
		t.Errorf("the request lacks the tools of the server that answered")
	}
}

// TestMCPHeadlessGrace: a -p prompt that does not name the MCP servers
// still gives them a moment to start (the grace), so a healthy server
// that takes half a second to come up is in the first request, tools and
// instructions, and stderr says nothing of it — the answer Claude Code,
// which waits for its servers, would give.
func TestMCPHeadlessGrace(t *testing.T) {
	p := newProject(t)
	p.withMCPServers(t, map[string]string{"slow": "slow"})
	// A grace of 20 s rather than the default 3 s, so a loaded machine
	// that starts the server late does not fail the test; the run goes on
	// as soon as the server is up, so this costs nothing.
	p.env = append(p.env, "MCP_TIMEOUT=60000", "CAIRN_MCP_GRACE_MS=20000")
	p.srv.Enqueue(modeltest.Text("Answered."))
	code, out, errOut := p.cairn(t, "-p", "look up ticket 42")
	if code != 0 || out != "Answered.\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if strings.Contains(errOut, "MCP server") {
		t.Errorf("stderr speaks of the MCP servers, which all came up in time:\n%s", errOut)
	}
	reqs := p.srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	if !bytes.Contains(reqs[0].Body, []byte(`"name":"mcp__slow__echo"`)) || !bytes.Contains(reqs[0].Body, []byte("## slow")) {
		t.Errorf("the first request lacks the tools or the instructions of the server that came up within the grace")
	}
}

// TestMCPHeadlessDoesNotWait: a -p prompt that does not need the MCP
// servers waits for one that never answers only the grace
// (CAIRN_MCP_GRACE_MS), not MCP_TIMEOUT (a minute here: a run that waited
// for it would print its timeout warning): then its first request goes
// with the tools of the servers up by then, one line on stderr names
// those still starting, and the run ends.
func TestMCPHeadlessDoesNotWait(t *testing.T) {
	p := newProject(t)
	p.withMCPServers(t, map[string]string{"notes": "notes", "stuck": "hang"})
	p.env = append(p.env, "MCP_TIMEOUT=60000", "CAIRN_MCP_GRACE_MS=1500")
	p.srv.Enqueue(modeltest.Text("Answered."))
	code, out, errOut := p.cairn(t, "-p", "hello")
	if code != 0 || out != "Answered.\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// The notes server is up within the grace unless the machine is very
	// loaded; either way the line and the request agree.
	line := regexp.MustCompile(`cairn: MCP servers still starting: (notes, )?stuck; the run goes on without them after waiting 1\.5s \(CAIRN_MCP_GRACE_MS`).FindStringSubmatch(errOut)
	if n := strings.Count(errOut, "MCP servers still starting:"); n != 1 || line == nil {
		t.Fatalf("want one line naming the servers still starting after the grace; stderr:\n%s", errOut)
	}
	if strings.Contains(errOut, "no answer within") || strings.Contains(errOut, "waiting for") {
		t.Errorf("the run waited for the servers past the grace:\n%s", errOut)
	}
	if n := len(p.srv.Requests()); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
	notesStarting := line[1] != ""
	if got := bytes.Contains(p.srv.Last().Body, []byte(`"name":"mcp__notes__echo"`)); got == notesStarting {
		t.Errorf("the first request has the notes server's tools: %v; stderr says it is still starting: %v", got, notesStarting)
	}
}

// TestMCPHeadlessNeeds: the rule deciding whether a -p prompt waits for
// the MCP servers, through the binary: each case runs with a server that
// never answers (MCP_TIMEOUT short) and says on stderr whether it waited
// and why.
func TestMCPHeadlessNeeds(t *testing.T) {
	p := newProject(t)
	p.withMCPServers(t, map[string]string{"notes": "notes", "stuck": "hang"})
	// A short grace, so a run that does not need the servers says it
	// goes on without the stuck one well before MCP_TIMEOUT.
	p.env = append(p.env, "MCP_TIMEOUT=800", "CAIRN_MCP_GRACE_MS=100")
	put(t, filepath.Join(p.dir, ".claude", "commands", "ask.md"), "---\nallowed-tools: mcp__notes__echo\n---\nAsk the server.\n")
	put(t, filepath.Join(p.dir, ".claude", "commands", "plain.md"), "---\nallowed-tools: Read\n---\nRead a file.\n")
	for _, tc := range []struct {
		args []string
		why  string // "" when the run does not wait
	}{
		{[]string{"hello"}, ""},
		{[]string{"take some notesy notes_x"}, ""},
		{[]string{"call mcp__notes__echo"}, "the prompt names an MCP tool"},
		{[]string{"read @notes:memo://today"}, "the prompt names a resource of notes"},
		{[]string{"is STUCK up?"}, "the prompt names stuck"},
		{[]string{"/ask"}, "/ask allows MCP tools"},
		{[]string{"/plain"}, ""},
		{[]string{"hello", "--allowedTools", "mcp__notes"}, "--allowedTools names MCP tools"},
	} {
		p.srv.Enqueue(modeltest.Text("ok"))
		code, _, errOut := p.cairn(t, append([]string{"-p"}, tc.args...)...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", tc.args, code, errOut)
		}
		waited := strings.Contains(errOut, "cairn: waiting for MCP servers")
		if tc.why == "" && (waited || !strings.Contains(errOut, "MCP servers still starting:")) {
			t.Errorf("%q should not wait for the servers; stderr:\n%s", tc.args, errOut)
		}
		if tc.why != "" && (!waited || !strings.Contains(errOut, "("+tc.why+";")) {
			t.Errorf("%q should wait because %s; stderr:\n%s", tc.args, tc.why, errOut)
		}
	}

	// A session that called MCP tools waits for them when continued.
	p.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "mcp__notes__echo", `{"text":"hi"}`)}},
		modeltest.Text("Echoed."),
	)
	if code, _, errOut := p.cairn(t, "-p", "echo with notes", "--allowedTools", "mcp__notes"); code != 0 {
		t.Fatalf("the run calling an MCP tool: exit %d: %s", code, errOut)
	}
	p.srv.Enqueue(modeltest.Text("ok"))
	code, _, errOut := p.cairn(t, "-p", "-c", "and again")
	if code != 0 || !strings.Contains(errOut, "(the session called MCP tools before;") {
		t.Errorf("-c of a session that called MCP tools does not wait for them: exit %d, stderr:\n%s", code, errOut)
	}
}

// TestStreamJSONInitListsMCPTools: the init event of a headless run lists
// the tools its first request carries, the MCP servers' among them, as an
// SDK host reads them there; and -p /context, which sends no request,
// counts the tools of a server that was up within the grace.
func TestStreamJSONInitListsMCPTools(t *testing.T) {
	p := newProject(t)
	p.withMCPServers(t, map[string]string{"notes": "notes"})
	p.env = append(p.env, "MCP_TIMEOUT=60000", "CAIRN_MCP_GRACE_MS=20000")
	p.srv.Enqueue(modeltest.Text("Answered."))
	code, out, errOut := p.cairn(t, "-p", "ask notes", "--output-format", "stream-json", "--verbose")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var initTools []string
	for line := range strings.Lines(out) {
		var ev struct {
			Type, Subtype string
			Tools         []string
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "system" && ev.Subtype == "init" {
			initTools = ev.Tools
		}
	}
	var req struct {
		Tools []struct{ Name string }
	}
	if err := json.Unmarshal(p.srv.Last().Body, &req); err != nil {
		t.Fatal(err)
	}
	var sent []string
	for _, tl := range req.Tools {
		sent = append(sent, tl.Name)
	}
	if !slices.Contains(sent, "mcp__notes__echo") {
		t.Fatalf("the request lacks mcp__notes__echo: %v", sent)
	}
	if diff := cmp.Diff(sent, initTools); diff != "" {
		t.Errorf("init's tools differ from the request's (-request +init):\n%s", diff)
	}

	toolsLine := regexp.MustCompile(`(?m)^  Tools +([0-9,]+)$`)
	count := func(env ...string) string {
		t.Helper()
		q := newProject(t)
		if len(env) > 0 {
			q.withMCPServers(t, map[string]string{"notes": "notes"})
		}
		q.env = append(q.env, env...)
		code, out, errOut := q.cairn(t, "-p", "/context")
		m := toolsLine.FindStringSubmatch(out)
		if code != 0 || m == nil {
			t.Fatalf("/context: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		return m[1]
	}
	without, with := count(), count("MCP_TIMEOUT=60000", "CAIRN_MCP_GRACE_MS=20000")
	if without == with {
		t.Errorf("/context counts %s tokens of tools with the notes server up as without it", with)
	}
}
