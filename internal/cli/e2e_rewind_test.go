package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/transcript"
)

// files returns the project's files and their contents.
func (p *project) files(t *testing.T) map[string]string {
	t.Helper()
	out := make(map[string]string)
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(p.dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// promptUUID finds the uuid of the prompt the user typed as text.
func (p *project) promptUUID(t *testing.T, text string) (sessionID, uuid string) {
	t.Helper()
	infos, err := session.List(context.Background(), session.Home{Dir: p.home}, session.ListOptions{Cwd: p.dir})
	if err != nil || len(infos) != 1 {
		t.Fatalf("sessions: %v, %v", infos, err)
	}
	f, err := os.Open(infos[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		e, err := transcript.DecodeEntry(sc.Bytes())
		if err != nil || e.Type != transcript.TypeUser {
			continue
		}
		if m, ok, _ := e.DecodeMessage(); ok && m.ContentIsString && len(m.Content) == 1 && m.Content[0].Text == text {
			return infos[0].SessionID, e.UUID
		}
	}
	t.Fatalf("no prompt %q in %s", text, infos[0].Path)
	return "", ""
}

// TestRewindCode runs two turns that change files with Edit, Write and
// Bash, then rewinds the code to the second prompt: the project is
// exactly as the first turn left it. The rewind previews, can be undone,
// and the conversation can be rewound too.
func TestRewindCode(t *testing.T) {
	p := newProject(t)
	hello := filepath.Join(p.dir, "hello.py")
	os.WriteFile(filepath.Join(p.dir, "data.txt"), []byte("x=1\n"), 0o644)
	edit := func(id, from, to string) model.Block {
		return modeltest.ToolUse(id, "Edit", fmt.Sprintf(`{"file_path":%q,"old_string":%q,"new_string":%q}`, hello, from, to))
	}
	read := modeltest.ToolUse("toolu_r", "Read", fmt.Sprintf(`{"file_path":%q}`, hello))
	bash := func(id, cmd string) model.Block {
		return modeltest.ToolUse(id, "Bash", fmt.Sprintf(`{"command":%q}`, cmd))
	}
	run := func(args ...string) string {
		t.Helper()
		code, out, errOut := p.cairn(t, args...)
		if code != 0 {
			t.Fatalf("cairn %q: exit %d\n%s\n%s", args, code, out, errOut)
		}
		return out
	}

	p.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{read}},
		modeltest.Reply{Content: []model.Block{edit("toolu_1", "hello", "goodbye"), bash("toolu_2", "echo made > made.txt")}},
		modeltest.Text("Turn one done."),
	)
	run("-p", "turn one", "--permission-mode", "bypassPermissions")
	afterOne := p.files(t)
	want := map[string]string{"hello.py": "print('goodbye')\n", "made.txt": "made\n", "data.txt": "x=1\n"}
	if d := cmp.Diff(want, afterOne); d != "" {
		t.Fatalf("after turn one (-want +got):\n%s", d)
	}

	p.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{read}},
		modeltest.Reply{Content: []model.Block{
			edit("toolu_3", "goodbye", "farewell"),
			bash("toolu_4", "sed -i s/1/2/ data.txt && rm made.txt"),
			modeltest.ToolUse("toolu_5", "Write", fmt.Sprintf(`{"file_path":%q,"content":"notes\n"}`, filepath.Join(p.dir, "notes.md"))),
		}},
		modeltest.Text("Turn two done."),
	)
	run("-c", "-p", "turn two", "--permission-mode", "bypassPermissions")
	afterTwo := p.files(t)
	want = map[string]string{"hello.py": "print('farewell')\n", "data.txt": "x=2\n", "notes.md": "notes\n"}
	if d := cmp.Diff(want, afterTwo); d != "" {
		t.Fatalf("after turn two (-want +got):\n%s", d)
	}

	id, turnTwo := p.promptUUID(t, "turn two")

	// The preview names every file and changes nothing.
	out := run("sessions", "rewind", id, "--to", turnTwo, "--code", "--dry-run")
	for _, line := range []string{
		`> turn two`,
		`recreate  made.txt  +1`,
		`restore   data.txt  +1 -1`,
		`restore   hello.py  +1 -1`,
		`delete    notes.md  -1`,
		`Dry run: nothing was changed.`,
	} {
		if !strings.Contains(out, line) {
			t.Errorf("preview lacks %q:\n%s", line, out)
		}
	}
	if d := cmp.Diff(afterTwo, p.files(t)); d != "" {
		t.Fatalf("--dry-run changed files:\n%s", d)
	}

	// The rewind: exactly the state after turn one.
	out = run("sessions", "rewind", id, "--to", turnTwo, "--code")
	if d := cmp.Diff(afterOne, p.files(t)); d != "" {
		t.Errorf("after the rewind (-want +got):\n%s", d)
	}
	undo := regexp.MustCompile(`--to (\S+) --code`).FindStringSubmatch(out)
	if undo == nil {
		t.Fatalf("no undo command in:\n%s", out)
	}
	// Undoing it brings turn two's state back.
	run("sessions", "rewind", id, "--to", undo[1], "--code")
	if d := cmp.Diff(afterTwo, p.files(t)); d != "" {
		t.Errorf("after undoing the rewind (-want +got):\n%s", d)
	}

	// The conversation: the next prompt continues from turn one.
	out = run("sessions", "rewind", id, "--to", turnTwo, "--both", "--json")
	var rep struct {
		Code struct {
			Changes []struct{ Path, Action string }
		}
		Conversation struct{ LeafUUID string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if len(rep.Code.Changes) != 4 || rep.Conversation.LeafUUID == "" {
		t.Errorf("report %+v", rep)
	}
	if d := cmp.Diff(afterOne, p.files(t)); d != "" {
		t.Errorf("after --both (-want +got):\n%s", d)
	}
	p.srv.Enqueue(modeltest.Text("Turn three."))
	run("-c", "-p", "turn three")
	body := string(p.srv.Last().Body)
	if !strings.Contains(body, "turn one") || strings.Contains(body, "turn two") || !strings.Contains(body, "turn three") {
		t.Errorf("the request after rewinding the conversation:\n%s", body)
	}
}

func TestRewindErrors(t *testing.T) {
	p := newProject(t)
	p.srv.Enqueue(modeltest.Text("hi"))
	if code, _, errOut := p.cairn(t, "-p", "first"); code != 0 {
		t.Fatal(errOut)
	}
	id, first := p.promptUUID(t, "first")
	for _, tc := range []struct {
		name string
		args []string
		code int
		say  string
	}{
		{"no --to", []string{"sessions", "rewind", id}, 2, "--to UUID is required"},
		{"two modes", []string{"sessions", "rewind", id, "--to", first, "--code", "--both"}, 2, "one of --code"},
		{"unknown message", []string{"sessions", "rewind", id, "--to", "nope", "--code"}, 1, `no message "nope"`},
		{"first message", []string{"sessions", "rewind", id, "--to", first}, 1, "first message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := p.cairn(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.say) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, tc.code, tc.say)
			}
		})
	}
	// The code alone rewinds even to the first message.
	code, out, errOut := p.cairn(t, "sessions", "rewind", id, "--to", first, "--code")
	if code != 0 || !strings.Contains(out, "none changed") {
		t.Errorf("exit %d: %s %s", code, out, errOut)
	}
}

// TestRewindAcrossFork: a session continued with --fork-session brings its
// file history along, so the fork rewinds to messages of the original.
func TestRewindAcrossFork(t *testing.T) {
	p := newProject(t)
	hello := filepath.Join(p.dir, "hello.py")
	read := modeltest.ToolUse("toolu_r", "Read", fmt.Sprintf(`{"file_path":%q}`, hello))
	edit := func(from, to string) model.Block {
		return modeltest.ToolUse("toolu_e", "Edit", fmt.Sprintf(`{"file_path":%q,"old_string":%q,"new_string":%q}`, hello, from, to))
	}
	p.srv.Enqueue(modeltest.Reply{Content: []model.Block{read}}, modeltest.Reply{Content: []model.Block{edit("hello", "one")}}, modeltest.Text("ok"))
	if code, _, errOut := p.cairn(t, "-p", "turn one", "--permission-mode", "acceptEdits"); code != 0 {
		t.Fatal(errOut)
	}
	original, turnOne := p.promptUUID(t, "turn one")
	p.srv.Enqueue(modeltest.Reply{Content: []model.Block{read}}, modeltest.Reply{Content: []model.Block{edit("one", "two")}}, modeltest.Text("ok"))
	code, out, errOut := p.cairn(t, "-r", original, "--fork-session", "-p", "turn two", "--permission-mode", "acceptEdits", "--output-format", "json")
	if code != 0 {
		t.Fatal(errOut)
	}
	var res struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.SessionID == "" || res.SessionID == original {
		t.Fatalf("fork result %s: %v", out, err)
	}
	if b, _ := os.ReadFile(hello); string(b) != "print('two')\n" {
		t.Fatalf("hello.py holds %q", b)
	}
	code, out, errOut = p.cairn(t, "sessions", "rewind", res.SessionID, "--to", turnOne, "--code")
	if code != 0 {
		t.Fatalf("rewind the fork: %s\n%s", errOut, out)
	}
	if b, _ := os.ReadFile(hello); string(b) != "print('hello')\n" {
		t.Errorf("after rewinding the fork to turn one, hello.py holds %q", b)
	}
	// The original session's folder is untouched by the fork's rewind.
	if _, err := os.Stat(filepath.Join(p.home, "file-history", original)); err != nil {
		t.Error(err)
	}
}
