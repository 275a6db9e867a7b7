package ccoracle_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/ccoracle"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/transcript"
)

var update = flag.Bool("update", false, "rerun the scenarios through Claude Code and rewrite testdata/ (review the diff)")

// probe is the prompt of every resume that observes a conversation: the
// messages before it are what the resume carried.
const probe = "ORACLE-PROBE: say ok"

// step is one headless run of a scenario.
type step struct {
	prompt string
	// resume continues the scenario's session; fork with --fork-session.
	resume, fork bool
	replies      []modeltest.Reply
	env          []string
	args         []string
	// kill ends the run with SIGKILL once the file .started exists in the
	// project (a scripted Bash command creates it, then sleeps).
	kill bool
}

// scenario is one row of the matrix: files in the project, then the runs.
type scenario struct {
	name  string
	files map[string][]byte
	steps []step
	// cairnSteps write the same conversation with cairn (check 2); nil
	// means the steps, with Claude Code's tool names mapped to cairn's.
	cairnSteps []step
	// cut, when set, rewrites Claude Code's transcript after its runs and
	// before any check: the file as a crash at a chosen moment leaves it,
	// which a real kill reaches only by chance.
	cut func(lines []string) []string
}

func text(s string) modeltest.Reply { return modeltest.Text(s) }

func tools(blocks ...model.Block) modeltest.Reply { return modeltest.Reply{Content: blocks} }

func use(id, name string, input any) model.Block {
	var raw bytes.Buffer
	enc := json.NewEncoder(&raw)
	enc.SetEscapeHTML(false) // "&&" as the API sends it
	if err := enc.Encode(input); err != nil {
		panic(err)
	}
	return modeltest.ToolUse(id, name, strings.TrimSpace(raw.String()))
}

// bigFiles returns n text files big0.txt … of about size bytes each.
func bigFiles(n, size int) map[string][]byte {
	out := make(map[string][]byte)
	for i := range n {
		var b bytes.Buffer
		for line := 0; b.Len() < size; line++ {
			fmt.Fprintf(&b, "file %d line %d: the quick brown fox jumps over the lazy dog\n", i, line)
		}
		out[fmt.Sprintf("big%d.txt", i)] = b.Bytes()
	}
	return out
}

func tinyPNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	for x := range 2 {
		for y := range 2 {
			img.Set(x, y, color.RGBA{R: uint8(100 * x), G: uint8(100 * y), B: 200, A: 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// scenarios is the matrix. Paths in tool inputs are written with the
// placeholder DIR, replaced by the project folder at run time.
func scenarios() []scenario {
	summary := "<analysis>Looked at the work so far.</analysis>\n<summary>1. The user asked to read a.txt, which holds alpha.\n2. Nothing is pending.</summary>"
	return []scenario{
		{name: "hello", steps: []step{{prompt: "hi", replies: []modeltest.Reply{text("Hello from the oracle.")}}}},
		{name: "tools", files: map[string][]byte{"a.txt": []byte("alpha\n")}, steps: []step{{
			prompt: "read a.txt, run a command, edit a.txt, write b.txt",
			replies: []modeltest.Reply{
				tools(use("toolu_tools_1", "Read", map[string]any{"file_path": "DIR/a.txt"})),
				tools(use("toolu_tools_2", "Bash", map[string]any{"command": "echo bash-ran", "description": "Print a word"})),
				tools(use("toolu_tools_3", "Edit", map[string]any{"file_path": "DIR/a.txt", "old_string": "alpha", "new_string": "beta"})),
				tools(use("toolu_tools_4", "Write", map[string]any{"file_path": "DIR/b.txt", "content": "new file\n"})),
				text("All four tools ran."),
			},
		}}},
		{name: "parallel", files: map[string][]byte{"a.txt": []byte("alpha\n")}, steps: []step{{
			prompt: "read a.txt and run a command at once",
			replies: []modeltest.Reply{
				tools(model.TextBlock("Doing both."),
					use("toolu_par_1", "Read", map[string]any{"file_path": "DIR/a.txt"}),
					use("toolu_par_2", "Bash", map[string]any{"command": "echo par", "description": "Print a word"})),
				text("Both ran."),
			},
		}}},
		{name: "manual-compact", files: map[string][]byte{"a.txt": []byte("alpha\n")}, steps: []step{
			{prompt: "read a.txt", replies: []modeltest.Reply{
				tools(use("toolu_mc_1", "Read", map[string]any{"file_path": "DIR/a.txt"})),
				text("It says alpha."),
			}},
			{prompt: "/compact", resume: true, replies: []modeltest.Reply{text(summary)}},
		}},
		{name: "auto-compact", files: bigFiles(3, 90_000), steps: []step{{
			prompt: "read the three big files, run a command, then finish",
			env:    []string{"CLAUDE_CODE_AUTO_COMPACT_WINDOW=100000"},
			replies: []modeltest.Reply{
				// About 70K tokens of file content: past the threshold of
				// the smallest window (100K less Claude Code's reserves),
				// so the next request compacts, in the middle of the turn.
				tools(use("toolu_ac_1", "Read", map[string]any{"file_path": "DIR/big0.txt"}),
					use("toolu_ac_2", "Read", map[string]any{"file_path": "DIR/big1.txt"}),
					use("toolu_ac_3", "Read", map[string]any{"file_path": "DIR/big2.txt"})),
				tools(use("toolu_ac_4", "Bash", map[string]any{"command": "echo before-compaction", "description": "Print a word"})),
				text(summary),
				text("Finished after the compaction."),
			},
		}}},
		{name: "killed", steps: []step{{
			prompt: "run a slow command",
			kill:   true,
			replies: []modeltest.Reply{
				tools(use("toolu_kill_1", "Bash", map[string]any{"command": "touch DIR/.started && sleep 30", "description": "Wait"})),
			},
		}}},
		// The same crash, with the response's line not yet written: Claude
		// Code writes its lines a little after it acts on them, so a kill
		// under load can leave the prompt, its attachments and a
		// last-prompt record naming the response, without the response.
		{name: "killed-unflushed", cut: dropResponse, steps: []step{{
			prompt: "run a slow command",
			kill:   true,
			replies: []modeltest.Reply{
				tools(use("toolu_kill_2", "Bash", map[string]any{"command": "touch DIR/.started && sleep 30", "description": "Wait"})),
			},
		}}},
		{name: "resume-fork", steps: []step{
			{prompt: "first", replies: []modeltest.Reply{text("First reply.")}},
			{prompt: "second", resume: true, replies: []modeltest.Reply{text("Second reply.")}},
			{prompt: "third", resume: true, fork: true, replies: []modeltest.Reply{text("Third reply, in the fork.")}},
		}},
		{name: "subagent", steps: []step{{
			prompt: "ask a subagent to say hi",
			replies: []modeltest.Reply{
				tools(use("toolu_sub_1", "Agent", map[string]any{"description": "Say hi", "prompt": "Say hi and stop.", "subagent_type": "general-purpose", "run_in_background": false})),
				text("hi from the subagent"),
				text("The subagent said hi."),
			},
		}}},
		{name: "image", files: map[string][]byte{"pic.png": tinyPNG()}, steps: []step{{
			prompt: "look at pic.png",
			replies: []modeltest.Reply{
				tools(use("toolu_img_1", "Read", map[string]any{"file_path": "DIR/pic.png"})),
				text("A tiny picture."),
			},
		}}},
		{name: "plan-exit", steps: []step{{
			prompt: "plan a change, then leave plan mode",
			args:   []string{"--permission-mode", "plan"},
			replies: []modeltest.Reply{
				tools(use("toolu_plan_1", "ExitPlanMode", map[string]any{"plan": "1. Change nothing.\n2. Stop."})),
				text("The plan is ready."),
			},
		}}, cairnSteps: []step{{
			// Headless cairn ends the turn when the plan is presented.
			prompt: "plan a change, then leave plan mode",
			args:   []string{"--permission-mode", "plan"},
			replies: []modeltest.Reply{
				tools(use("toolu_plan_1", "ExitPlanMode", map[string]any{"plan": "1. Change nothing.\n2. Stop."})),
			},
		}}},
		// A custom command typed with its arguments (its !`…` line, @file
		// include, allowed-tools and model), then a skill the model loads.
		{name: "command-skill", files: extensionFiles(), steps: []step{
			{prompt: "/review a.txt", replies: []modeltest.Reply{text("Reviewed.")}},
			{prompt: "is the deploy safe?", resume: true, replies: []modeltest.Reply{
				tools(use("toolu_sk_1", "Skill", map[string]any{"skill": "deploy-check"})),
				text("Checked."),
			}},
		}},
		{name: "todos", steps: []step{{
			prompt: "plan two things",
			replies: []modeltest.Reply{
				tools(use("toolu_todo_1", "TodoWrite", map[string]any{"todos": []map[string]string{
					{"content": "First thing", "status": "in_progress", "activeForm": "Doing the first thing"},
					{"content": "Second thing", "status": "pending", "activeForm": "Doing the second thing"},
				}})),
				text("Planned."),
			},
		}}},
	}
}

// rig is one scenario's run: a fake server and scratch homes.
type rig struct {
	t   *testing.T
	o   *ccoracle.Oracle
	srv *modeltest.Server
	dir string // the project
}

func newRig(t *testing.T, o *ccoracle.Oracle, sc scenario) *rig {
	// The project path must be the same in every home: Claude Code's
	// resume looks for the session in the folder named after the cwd.
	dir := t.TempDir()
	for name, b := range sc.files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &rig{t: t, o: o, srv: modeltest.Start(t, modeltest.Config{Default: text("ok")}), dir: dir}
}

func (r *rig) fill(replies []modeltest.Reply, toolName func(string) string) []modeltest.Reply {
	out := make([]modeltest.Reply, len(replies))
	for i, rep := range replies {
		rep.Content = append([]model.Block(nil), rep.Content...)
		for j, b := range rep.Content {
			if b.Type == model.BlockToolUse {
				b.Input = json.RawMessage(strings.ReplaceAll(string(b.Input), "DIR", r.dir))
				if toolName != nil {
					b.Name, b.Input = toolName(b.Name), cairnInput(b.Name, b.Input)
				}
				rep.Content[j] = b
			}
		}
		out[i] = rep
	}
	return out
}

// claude runs Claude Code in home. It fails the test when the run fails,
// unless it was meant to be killed.
func (r *rig) claude(home string, st step, session string) *ccoracle.Result {
	r.t.Helper()
	r.srv.Enqueue(r.fill(st.replies, nil)...)
	run := ccoracle.Run{Home: home, Dir: r.dir, BaseURL: r.srv.URL, Prompt: st.prompt, Env: st.env, Args: st.args}
	if st.resume {
		run.Args = append(run.Args, "--resume", session)
	}
	if st.fork {
		run.Args = append(run.Args, "--fork-session")
	}
	if st.kill {
		run.KillWhenExists = filepath.Join(r.dir, ".started")
	}
	res, err := r.o.Run(context.Background(), run)
	if err != nil {
		r.t.Fatal(err)
	}
	if !st.kill && res.ExitCode != 0 {
		r.t.Fatalf("claude -p %q exited %d\nstderr: %s\nstdout: %s", st.prompt, res.ExitCode, res.Stderr, tailOf(res.Stdout))
	}
	if st.kill && !res.Killed {
		r.t.Fatalf("claude -p %q ended (exit %d) before the tool call it should be killed in", st.prompt, res.ExitCode)
	}
	if n := r.srv.Pending(); n != 0 {
		r.t.Fatalf("claude -p %q left %d scripted replies unused", st.prompt, n)
	}
	if res.SessionID == "" {
		r.t.Fatalf("claude -p %q printed no session id: %s", st.prompt, tailOf(res.Stdout))
	}
	return res
}

func tailOf(s string) string {
	if len(s) > 3000 {
		return "…" + s[len(s)-3000:]
	}
	return s
}

// resumeView runs Claude Code's --resume of session in home with the probe
// prompt and returns the conversation it sent before the probe.
func (r *rig) resumeView(home, session string) []model.Message {
	r.t.Helper()
	before := len(r.srv.Requests())
	path, err := ccoracle.TranscriptPath(home, session)
	if err != nil {
		r.t.Fatal(err)
	}
	old, err := os.ReadFile(path)
	if err != nil {
		r.t.Fatal(err)
	}
	r.claude(home, step{prompt: probe, resume: true, replies: []modeltest.Reply{text("ok")}}, session)
	msgs, err := ccoracle.FirstAccepted(r.srv.Requests()[before:])
	if err != nil {
		r.t.Fatal(err)
	}
	now, err := os.ReadFile(path)
	if err != nil {
		r.t.Fatal(err)
	}
	prefix, err := ccoracle.Before(msgs, probe, ccoracle.AttachedTexts(now[len(old):]))
	if err != nil {
		r.t.Fatal(err)
	}
	return prefix
}

// cutTranscript rewrites the transcript of session in home with cut, and
// logs how many lines it took out (none: the run had left the file so).
func cutTranscript(t *testing.T, home, session string, cut func([]string) []string) {
	t.Helper()
	path, err := ccoracle.TranscriptPath(home, session)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before := strings.SplitAfter(string(b), "\n")
	lines := cut(before)
	t.Logf("the cut took %d of the transcript's %d lines out", len(before)-len(lines), len(before))
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
}

// dropResponse takes the assistant lines out of a transcript, leaving the
// records after them: a kill before the response's line was written. A
// kill that came before Claude Code wrote it left the file so already.
func dropResponse(lines []string) []string {
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, `{"parentUuid"`) && strings.Contains(l, `"type":"assistant"`) {
			continue
		}
		out = append(out, l)
	}
	return out
}

// cairnView is what cairn sends on resume of session (cairn sessions show
// ID --json prints the same).
func cairnView(t *testing.T, claudeHome, cwd, id string) ([]model.Message, []string) {
	t.Helper()
	path, err := session.Home{Dir: claudeHome}.Find(cwd, id)
	if err != nil {
		t.Fatal(err)
	}
	return loadView(t, path)
}

func loadView(t *testing.T, path string) ([]model.Message, []string) {
	t.Helper()
	src, err := transcript.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	conv, err := transcript.Load(context.Background(), src, transcript.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	msgs := conv.Messages()
	return msgs, conv.Warnings
}

var cairnBin = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "ccoracle-cairn")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "cairn")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/cairn-dev/cairn/cmd/cairn").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build cairn: %v\n%s", err, out)
	}
	return bin, nil
})

// cairn runs cairn -p in the project with its home at claudeHome, so it
// reads and writes Claude Code's files.
func (r *rig) cairn(claudeHome string, st step, session string) (stdout string) {
	r.t.Helper()
	bin, err := cairnBin()
	if err != nil {
		r.t.Fatal(err)
	}
	r.srv.Enqueue(r.fill(st.replies, cairnToolName)...)
	args := []string{"-p", st.prompt, "--permission-mode", "bypassPermissions", "--output-format", "json"}
	args = append(args, st.args...) // a later --permission-mode wins
	if st.resume {
		args = append(args, "--resume="+session)
	}
	if st.fork {
		args = append(args, "--fork-session")
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = r.dir
	cmd.Env = append([]string{"CAIRN_HOME=" + claudeHome, "HOME=" + filepath.Dir(claudeHome), "ANTHROPIC_BASE_URL=" + r.srv.URL,
		"ANTHROPIC_API_KEY=oracle-key", "PATH=" + os.Getenv("PATH")}, st.env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if st.kill {
		r.killCairn(cmd)
		return ""
	}
	if err := cmd.Run(); err != nil {
		r.t.Fatalf("cairn %s: %v\nstderr: %s\nstdout: %s", strings.Join(args, " "), err, errb.String(), out.String())
	}
	if n := r.srv.Pending(); n != 0 {
		r.t.Fatalf("cairn -p %q left %d scripted replies unused", st.prompt, n)
	}
	return out.String()
}

// killCairn runs cmd and kills it, and the command it runs, with SIGKILL
// once the project's .started file appears: a crash mid-tool-call.
func (r *rig) killCairn(cmd *exec.Cmd) {
	r.t.Helper()
	started := filepath.Join(r.dir, ".started")
	if err := os.Remove(started); err != nil && !os.IsNotExist(err) {
		r.t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			r.t.Fatalf("cairn ended (%v) before the tool call it should be killed in", err)
		case <-tick.C:
			if _, err := os.Stat(started); err == nil {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
				return
			}
		}
	}
}

// onlySession returns the id of the one session under claudeHome.
func onlySession(t *testing.T, claudeHome string) string {
	t.Helper()
	files, err := ccoracle.Transcripts(filepath.Dir(claudeHome))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for rel := range files {
		if strings.Count(rel, "/") == 1 {
			ids = append(ids, strings.TrimSuffix(filepath.Base(rel), ".jsonl"))
		}
	}
	if len(ids) != 1 {
		t.Fatalf("want one session under %s, found %v", claudeHome, ids)
	}
	return ids[0]
}

// cairnInput drops from the input of Claude Code's tool what cairn's tool
// of the same use does not take.
func cairnInput(name string, in json.RawMessage) json.RawMessage {
	if name != "Agent" {
		return in
	}
	var m map[string]any
	if json.Unmarshal(in, &m) != nil {
		return in
	}
	delete(m, "run_in_background")
	out, _ := json.Marshal(m)
	return out
}

func cairnToolName(n string) string {
	if n == "Agent" {
		return "Task"
	}
	return n
}

// copyHome copies the project folders of one home's .claude into a new
// home, so a resume there leaves the original files as they were.
func copyHome(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	src := filepath.Join(from, ".claude", "projects")
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		dst := filepath.Join(to, ".claude", "projects", rel)
		if info.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return to
}

func diffViews(want, got []model.Message) string {
	return cmp.Diff(ccoracle.Render(ccoracle.Normalize(want)), ccoracle.Render(ccoracle.Normalize(got)))
}

// TestMatrix runs each scenario through Claude Code and holds cairn to it:
//
//  1. cairn's resume view of Claude Code's file equals what Claude Code
//     sends on its own --resume of that file (see ccoracle.Normalize for
//     what is normalised away, and why);
//  2. Claude Code's --resume of the conversation written by cairn is
//     accepted and carries all of it;
//  3. cairn appending a turn to Claude Code's file, then Claude Code
//     resuming it, loses nothing.
//
// The intended differences, each with its reason:
//   - ccoracle.Normalize: cache_control breakpoints (a request's, not the
//     conversation's), how one role's turn is split into messages (the API
//     joins them), the subagent tool's name (2.1.332 renames Task to
//     Agent on resume);
//   - ccoracle.FirstAccepted: Claude Code's first request sends context as
//     role "system" messages, which the fake server refuses as the API
//     does; the request it resends instead is the one compared;
//   - ccoracle.Before: what the observing resume added to its own prompt
//     (its attachments, the newline at the seam with the old conversation);
//   - checks 2 and 3 compare with ccoracle.Carries, message by message with
//     the blocks of a message in any order: each program places a turn's
//     attachments by its own rule, and the files were written by both.
//
// Claude Code's reminder texts need no normalising in check 1: its lines
// record what they sent (rendered), and cairn sends that.
//
// With -update the recorded transcripts and Claude Code's resume views
// become the goldens in testdata/ (see TestGoldens).
func TestMatrix(t *testing.T) {
	o := ccoracle.Require(t)
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel() // each scenario has its own server, project and homes
			r := newRig(t, o, sc)
			home := t.TempDir()
			var id string
			for _, st := range sc.steps {
				id = r.claude(home, st, id).SessionID
			}
			if sc.cut != nil {
				cutTranscript(t, home, id, sc.cut)
			}
			// Keep the files as Claude Code left them, before any resume.
			pristine := copyHome(t, home)

			// 1. The resume views agree.
			want := r.resumeView(copyHome(t, pristine), id)
			got, warnings := cairnView(t, filepath.Join(pristine, ".claude"), r.dir, id)
			if d := diffViews(want, got); d != "" {
				t.Errorf("check 1: cairn's resume view differs from Claude Code's resume (-claude +cairn):\n%s", d)
			}
			if len(warnings) > 0 {
				t.Errorf("check 1: cairn warned on Claude Code's own file: %q", warnings)
			}
			if *update {
				writeGolden(t, sc.name, pristine, r.dir, id, want)
			}

			// 3. cairn appends a turn; Claude Code resumes it whole.
			appended := copyHome(t, pristine)
			r.cairn(filepath.Join(appended, ".claude"), step{prompt: "CAIRN-APPEND: one more", resume: true, replies: []modeltest.Reply{text("cairn's appended reply.")}}, id)
			after := r.resumeView(appended, id)
			wantAfter := append(append([]model.Message(nil), want...),
				model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock("CAIRN-APPEND: one more")}},
				model.Message{Role: model.RoleAssistant, Content: []model.Block{model.TextBlock("cairn's appended reply.")}})
			if miss := ccoracle.Carries(after, wantAfter); miss != "" {
				t.Errorf("check 3: after cairn appended to Claude Code's file, Claude Code's resume lost %q; it sent:\n%s", miss, strings.Join(ccoracle.Render(after), "\n"))
			}

			// 2. Claude Code resumes what cairn wrote.
			steps := sc.cairnSteps
			if steps == nil {
				steps = sc.steps
			}
			cairnHome := t.TempDir()
			ch := filepath.Join(cairnHome, ".claude")
			var cid string
			for _, st := range steps {
				out := r.cairn(ch, st, cid)
				if st.kill {
					cid = onlySession(t, ch)
					continue
				}
				var res struct {
					SessionID string `json:"session_id"`
				}
				if err := json.Unmarshal([]byte(out), &res); err != nil || res.SessionID == "" {
					t.Fatalf("cairn -p %q: no session_id in %q", st.prompt, out)
				}
				cid = res.SessionID
			}
			own, _ := cairnView(t, ch, r.dir, cid)
			theirs := r.resumeView(cairnHome, cid)
			if miss := ccoracle.Carries(theirs, own); miss != "" {
				t.Errorf("check 2: Claude Code's resume of cairn's session lost %q; cairn's view:\n%s\nClaude Code sent:\n%s", miss,
					strings.Join(ccoracle.Render(own), "\n"), strings.Join(ccoracle.Render(theirs), "\n"))
			}
		})
	}
}
