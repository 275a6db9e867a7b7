package ccoracle_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/ccoracle"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
)

// extensionFiles are a project's custom command and skill, as a Claude
// Code user writes them.
func extensionFiles() map[string][]byte {
	return map[string][]byte{
		".claude/commands/review.md":           []byte("---\ndescription: Review a file\nargument-hint: <file>\nallowed-tools: Bash(echo:*)\nmodel: claude-haiku-4-5\n---\nReview $ARGUMENTS carefully.\nStatus: !`echo bang-out`\nFile: @a.txt\n"),
		"a.txt":                                []byte("alpha\n"),
		".claude/skills/deploy-check/SKILL.md": []byte("---\nname: deploy-check\ndescription: Checks that a deploy is safe.\n---\n# Deploy check\nRun the checks.\n"),
	}
}

// extensionRuns are the runs whose requests are compared, each a new
// session of the project of extensionFiles: the command typed with an
// argument, the skill loaded by the model, the skill typed as /name.
func extensionRuns() []struct {
	name string
	st   step
} {
	model := []string{"--model", "claude-sonnet-4-5"} // both programs' default differ
	return []struct {
		name string
		st   step
	}{
		{"command", step{prompt: "/review a.txt", args: model, replies: []modeltest.Reply{text("Reviewed.")}}},
		{"skill-tool", step{prompt: "is the deploy safe?", args: model, replies: []modeltest.Reply{
			tools(use("toolu_sk_1", "Skill", map[string]any{"skill": "deploy-check"})),
			text("Checked."),
		}}},
		{"skill-typed", step{prompt: "/deploy-check now please", args: model, replies: []modeltest.Reply{text("ok")}}},
	}
}

// requestShape is what is compared of the last request of a run: the
// request content a command or skill makes, modulo the wording of each
// program's own texts.
type requestShape struct {
	Model string `json:"model"`
	// Turn is the last user message without the context reminders: each
	// text block as "text: …", each tool result as "tool_result: …" (its
	// texts), the project folder written DIR.
	Turn []string `json:"turn"`
	// Included says how the command's @a.txt reached the model: "Read
	// call" and "Read result" reminders.
	Included []string `json:"included"`
	// ListingIn is where the command and the skill are offered by name
	// and description: "system" (the system prompt) or "user" (a
	// reminder in a user message); "" when they are not.
	ListingIn string `json:"listingIn"`
}

func shapeOf(r *modeltest.Request, dir string) requestShape {
	norm := func(s string) string { return strings.ReplaceAll(s, dir, "DIR") }
	listed := func(s string) bool {
		return strings.Contains(s, "- deploy-check: Checks that a deploy is safe.") && strings.Contains(s, "- review: Review a file")
	}
	sh := requestShape{Model: r.Params.Model, Turn: []string{}, Included: []string{}}
	for _, b := range r.Params.System {
		if listed(b.Text) {
			sh.ListingIn = "system"
		}
	}
	msgs := r.Params.Messages
	// The turn is the user messages after the last assistant message (the
	// API joins consecutive ones; Claude Code sends a command's include
	// as a message of its own).
	start := 0
	for i, m := range msgs {
		if m.Role == model.RoleAssistant {
			start = i + 1
		}
	}
	for i, m := range msgs {
		for _, b := range m.Content {
			if b.Type == model.BlockText && m.Role == model.RoleUser && listed(b.Text) {
				sh.ListingIn = "user"
			}
			if i < start {
				continue
			}
			switch {
			case b.Type == model.BlockText && strings.HasPrefix(b.Text, "<system-reminder>"):
				t := norm(b.Text)
				if strings.Contains(t, `{"file_path":"DIR/a.txt"}`) {
					sh.Included = append(sh.Included, "Read call")
				}
				if strings.Contains(t, "1\talpha") {
					sh.Included = append(sh.Included, "Read result")
				}
			case b.Type == model.BlockText:
				if t := snipID.ReplaceAllString(b.Text, ""); t != "" {
					sh.Turn = append(sh.Turn, "text: "+norm(t))
				}
			case b.Type == model.BlockToolResult:
				// Each program's context reminders inside a result are its own.
				t := strings.TrimSpace(reminder.ReplaceAllString(b.ResultText(), ""))
				sh.Turn = append(sh.Turn, "tool_result: "+norm(t))
			}
		}
	}
	return sh
}

var reminder = regexp.MustCompile(`(?s)<system-reminder>.*?</system-reminder>`)

// snipID is the message id cairn adds to a user message for its Snip
// tool: cairn's own, not part of the shape.
var snipID = regexp.MustCompile(`\n?\[id:[0-9a-z]+\]$`)

// extensionGolden is testdata/extension-requests/shapes.json: Claude
// Code's request shapes, by run.
type extensionGolden struct {
	Version string                  `json:"claudeCodeVersion"`
	Runs    map[string]requestShape `json:"runs"`
}

const extensionGoldenPath = "testdata/extension-requests/shapes.json"

// cairnShapes runs cairn through extensionRuns and returns its shapes.
func cairnShapes(t *testing.T) map[string]requestShape {
	t.Helper()
	r := newRig(t, nil, scenario{files: extensionFiles()})
	out := map[string]requestShape{}
	for _, run := range extensionRuns() {
		r.cairn(filepath.Join(t.TempDir(), ".claude"), run.st, "")
		out[run.name] = shapeOf(r.srv.Last(), r.dir)
	}
	return out
}

// compareShapes holds cairn's request shapes to Claude Code's: the same
// turn, includes and model, and the skills (with the commands the model
// may run) listed in the same place, a reminder of the session's first
// user message.
func compareShapes(t *testing.T, claude, cairn map[string]requestShape) {
	t.Helper()
	for name, want := range claude {
		got, ok := cairn[name]
		if !ok {
			t.Errorf("%s: cairn made no request", name)
			continue
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: cairn's request differs from Claude Code's (-claude +cairn):\n%s", name, d)
		}
	}
}

// TestExtensionRequests runs the command and skill runs through Claude
// Code and cairn and compares what each sends: where the command's
// expanded text goes (its <command-message>/<command-name>/
// <command-args> block, then its body, in the user message), how its
// @file include travels (as a Read of the file), the model its
// frontmatter names, what the Skill tool's result looks like, and where
// the skills are listed. With
// -update Claude Code's shapes become the golden TestExtensionGolden
// holds cairn to without the binary.
func TestExtensionRequests(t *testing.T) {
	o := ccoracle.Require(t)
	t.Parallel() // beside the matrix's scenarios: its own server, project and homes
	r := newRig(t, o, scenario{files: extensionFiles()})
	claude := map[string]requestShape{}
	for _, run := range extensionRuns() {
		r.claude(t.TempDir(), run.st, "")
		claude[run.name] = shapeOf(r.srv.Last(), r.dir)
	}
	compareShapes(t, claude, cairnShapes(t))
	if *update {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(extensionGolden{Version: ccoracle.Version, Runs: claude}); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(extensionGoldenPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(extensionGoldenPath, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestExtensionGolden holds cairn's request shapes to Claude Code's
// recorded ones (see TestExtensionRequests), where the binary is not
// installed. Regenerate with: go test ./internal/ccoracle -run
// TestExtensionRequests -update
func TestExtensionGolden(t *testing.T) {
	b, err := os.ReadFile(extensionGoldenPath)
	if err != nil {
		t.Fatalf("%v; record it with go test ./internal/ccoracle -run TestExtensionRequests -update", err)
	}
	var g extensionGolden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	compareShapes(t, g.Runs, cairnShapes(t))
}
