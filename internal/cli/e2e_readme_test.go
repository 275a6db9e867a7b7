package cli_test

import (
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/proctest"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
)

var updateReadme = flag.Bool("update-readme", false, "rewrite the README's terminal screenshots from the binary (review the diff)")

// The README's screenshots sit between these lines.
const (
	screensBegin = "<!-- screens: written by TestReadmeScreens; regenerate with go test ./internal/cli/ -run TestReadmeScreens -update-readme -->"
	screensEnd   = "<!-- /screens -->"
)

// TestReadmeScreens: the README's terminal screenshots of the slash
// commands are what the binary shows in tmux today. Each is the part of
// the screen that follows the command, with the temporary folders, the
// session id and the fake server's port written as a reader's would be.
// With -update-readme the test writes them into the README instead.
func TestReadmeScreens(t *testing.T) {
	proctest.Command(t, "bwrap", "/doctor's screenshot shows the sandbox check (apt-get install bubblewrap)")
	p := newProject(t)
	p.withMCPServers(t, map[string]string{"notes": "notes"})
	p.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "TodoWrite", `{"todos":[`+
			`{"content":"Read the parser","activeForm":"Reading the parser","status":"completed"},`+
			`{"content":"Fix the off-by-one","activeForm":"Fixing the off-by-one","status":"in_progress"},`+
			`{"content":"Run the tests","activeForm":"Running the tests","status":"pending"}]}`)}},
		modeltest.Text("Working on it."),
	)
	var shots []string
	shot := func(title, text string) {
		shots = append(shots, "**"+title+"**\n\n```text\n"+p.readerView(text)+"\n```\n")
	}

	// Wide enough that no path wraps; the parts kept hold no rule.
	x := p.startUI(t, 220, 40, nil)
	x.waitFor("MCP servers ready")
	x.typeKeys("fix the parser", "Enter")
	// The reply shows a moment before the turn ends and its spinner goes.
	done := x.waitUntil("the reply, the turn over", func(s string) bool {
		return strings.Contains(s, "Working on it.") && !strings.Contains(s, "esc to interrupt")
	})
	shot("The todo checklist, kept above the prompt while it changes", region(done, "> fix the parser", "───"))
	for _, c := range []struct{ command, title, until string }{
		{"/status", "/status", "Settings:"},
		{"/model", "/model", "Switch with"},
		{"/mcp", "/mcp", "write_note"},
		{"/doctor", "/doctor", "Home folder writable"},
	} {
		x.typeKeys("/clear", "Enter")
		// The last /clear's message may still be on the screen: the new
		// session is open when the screen no longer holds the /clear typed.
		x.waitUntil("the new session", func(s string) bool {
			return strings.Contains(s, "Started a new session.") && !strings.Contains(s, "> /clear")
		})
		x.typeKeys(c.command, "Enter")
		shot(c.title, region(x.waitFor(c.until), "> "+c.command, "───"))
	}

	// The completion menu, as wide as a small terminal: the prompt box
	// and the commands under it.
	y := p.startUI(t, 90, 20, nil)
	y.waitFor("MCP servers ready")
	y.typeKeys("/m")
	s := y.waitFor("/mcp  ")
	shot("Completion: / lists the commands as you type (Tab completes; @ completes paths)", region(s, "> /m", "/help for commands ·"))

	section := screensBegin + "\n\n" + strings.Join(shots, "\n") + "\n" + screensEnd
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	begin, end := strings.Index(text, screensBegin), strings.Index(text, screensEnd)
	if begin < 0 || end < begin {
		t.Fatalf("the README has no screenshot section (%q … %q)", screensBegin, screensEnd)
	}
	old := text[begin : end+len(screensEnd)]
	if *updateReadme {
		if err := os.WriteFile("../../README.md", []byte(text[:begin]+section+text[end+len(screensEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if diff := cmp.Diff(old, section); diff != "" {
		t.Errorf("the README's screenshots are not what the binary shows (-README +binary); if the change is meant, run go test ./internal/cli/ -run TestReadmeScreens -update-readme:\n%s", diff)
	}
}

// region is the part of screen from the last line holding from up to the
// line before the next one starting with to, right-trimmed, without the
// blank lines at its end.
func region(screen, from, to string) string {
	lines := strings.Split(screen, "\n")
	start := -1
	for i, l := range lines {
		if strings.Contains(l, from) {
			start = i
		}
	}
	if start < 0 {
		return screen
	}
	var out []string
	for i, l := range lines[start:] {
		if i > 0 && strings.HasPrefix(strings.TrimSpace(l), to) {
			break
		}
		out = append(out, strings.TrimRight(l, " "))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return strings.Join(out, "\n")
}

var (
	sessionUUID = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	localPort   = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)
	notAlnum    = regexp.MustCompile(`[^A-Za-z0-9]`)
	bwrapPath   = regexp.MustCompile(`(Sandbox \(bubblewrap\): )\S+`)
)

// readerView writes the test's temporary folders as a person's project
// and home, the session id as one fixed id and the fake server's port as
// PORT, and bwrap as found in /usr/bin, so the screenshot does not
// change from run to run or machine to machine.
func (p *project) readerView(s string) string {
	const dir, home = "/home/me/src/shop", "/home/me/.cairn"
	s = strings.ReplaceAll(s, notAlnum.ReplaceAllString(p.dir, "-"), notAlnum.ReplaceAllString(dir, "-"))
	s = strings.ReplaceAll(s, p.dir, dir)
	s = strings.ReplaceAll(s, p.home, home)
	s = sessionUUID.ReplaceAllString(s, "5f0c2a8e-1d3b-4c6a-9e7f-2b8d4a6c1e90")
	s = bwrapPath.ReplaceAllString(s, "${1}/usr/bin/bwrap")
	return localPort.ReplaceAllString(s, "127.0.0.1:PORT")
}
