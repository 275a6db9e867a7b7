package cli_test

import (
	"bytes"
	"strings"
	"testing"

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

// TestMCPHeadlessTimeout: -p waits for its servers before the first
// request, as Claude Code does, but never past MCP_TIMEOUT: a server that
// never answers is one warning on stderr and the run goes on without it.
func TestMCPHeadlessTimeout(t *testing.T) {
	p := newProject(t)
	p.withMCPServers(t, map[string]string{"notes": "notes", "stuck": "hang"})
	p.env = append(p.env, "MCP_TIMEOUT=1500")
	p.srv.Enqueue(modeltest.Text("Answered."))
	code, out, errOut := p.cairn(t, "-p", "hello")
	if code != 0 || out != "Answered.\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if n := strings.Count(errOut, `MCP server "stuck"`); n != 1 || !strings.Contains(errOut, "no answer within 1.5s") {
		t.Errorf("want one warning that the stuck server did not answer within 1.5s; stderr:\n%s", errOut)
	}
	if !bytes.Contains(p.srv.Last().Body, []byte(`"name":"mcp__notes__echo"`)) {
		t.Errorf("the request lacks the tools of the server that answered")
	}
}
