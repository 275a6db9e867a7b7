package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/instructions"
	"github.com/cairn-dev/cairn/internal/memory"
	"github.com/cairn-dev/cairn/internal/subagent"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/anthropic"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
)

// binary is the cairn program built once for the end-to-end tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cairn-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "cairn")
	build := exec.Command("go", "build", "-o", binary, "github.com/cairn-dev/cairn/cmd/cairn")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build cairn:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// project is a throwaway repository with a cairn home beside it.
type project struct {
	dir, home string
	srv       *modeltest.Server
	env       []string // more of cairn's environment
}

func newProject(t *testing.T) *project {
	t.Helper()
	p := &project{dir: t.TempDir(), home: t.TempDir(), srv: modeltest.Start(t, modeltest.Config{})}
	if err := os.WriteFile(filepath.Join(p.dir, "hello.py"), []byte("print('hello')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// cairn runs the real binary in the project against the fake server.
func (p *project) cairn(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = p.dir
	cmd.Env = append([]string{"CAIRN_HOME=" + p.home, "ANTHROPIC_BASE_URL=" + p.srv.URL, "ANTHROPIC_API_KEY=test-key", "HOME=" + p.home, "PATH=" + os.Getenv("PATH")}, p.env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func TestPrintText(t *testing.T) {
	p := newProject(t)
	p.srv.Enqueue(modeltest.Text("Hello from the model."))
	code, out, errOut := p.cairn(t, "-p", "say hello")
	if code != 0 || out != "Hello from the model.\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	req := p.srv.Last()
	if req.Version != "2023-06-01" || req.APIKey != "test-key" {
		t.Errorf("headers: version %q key %q", req.Version, req.APIKey)
	}
	// The prompt is in the transcript, which lists.
	infos, err := session.List(context.Background(), session.Home{Dir: p.home}, session.ListOptions{Cwd: p.dir})
	if err != nil || len(infos) != 1 || infos[0].FirstPrompt != "say hello" {
		t.Fatalf("sessions %+v, %v", infos, err)
	}
}

func TestPrintStreamJSONWithTools(t *testing.T) {
	p := newProject(t)
	file := filepath.Join(p.dir, "hello.py")
	p.srv.Enqueue(
		modeltest.Reply{Content: append(modeltest.Text("Reading it.").Content, modeltest.ToolUse("toolu_1", "Read", fmt.Sprintf(`{"file_path":%q}`, file)))},
		modeltest.Reply{Content: append(modeltest.Text("").Content[:0], modeltest.ToolUse("toolu_2", "Edit", fmt.Sprintf(`{"file_path":%q,"old_string":"hello","new_string":"goodbye"}`, file)))},
		modeltest.Text("Changed the greeting."),
	)
	code, out, errOut := p.cairn(t, "-p", "change the greeting", "--output-format", "stream-json", "--permission-mode", "acceptEdits")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	got, _ := os.ReadFile(file)
	if string(got) != "print('goodbye')\n" {
		t.Errorf("file is %q", got)
	}
	var types []string
	var result map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line is not JSON: %q", sc.Text())
		}
		typ := m["type"].(string)
		if st, ok := m["subtype"].(string); ok {
			typ += "/" + st
		}
		types = append(types, typ)
		if m["type"] == "result" {
			result = m
		}
	}
	want := "system/init assistant user assistant user assistant result/success"
	if strings.Join(types, " ") != want {
		t.Errorf("events %q, want %q", strings.Join(types, " "), want)
	}
	if result["num_turns"].(float64) != 3 || result["result"] != "Changed the greeting." || result["is_error"] != false {
		t.Errorf("result %v", result)
	}
	// Three requests; the second carries the Read result numbered as Claude Code numbers it.
	reqs := p.srv.Requests()
	if len(reqs) != 3 || !bytes.Contains(reqs[1].Body, []byte(`1\tprint('hello')`)) {
		t.Errorf("%d requests; second body lacks the numbered file", len(reqs))
	}
}

func TestPrintDeniedInHeadlessDefaultMode(t *testing.T) {
	p := newProject(t)
	file := filepath.Join(p.dir, "hello.py")
	p.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "Bash", `{"command":"rm -rf build"}`)}},
		modeltest.Text("I could not."),
	)
	code, out, _ := p.cairn(t, "-p", "clean", "--output-format", "json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("json output: %v\n%s", err, out)
	}
	if d, _ := res["permission_denials"].([]any); len(d) != 1 {
		t.Errorf("permission_denials %v", res["permission_denials"])
	}
	body := string(p.srv.Last().Body)
	if !strings.Contains(body, "rm -rf build") || !strings.Contains(body, `"is_error":true`) {
		t.Errorf("the refusal did not reach the model: %s", body)
	}
	_ = file
	// The decision is on the result's transcript line.
	infos, _ := session.List(context.Background(), session.Home{Dir: p.home}, session.ListOptions{Cwd: p.dir})
	data, _ := os.ReadFile(infos[0].Path)
	if !bytes.Contains(data, []byte(`"permissionDecision":{"decision":"deny"`)) {
		t.Errorf("no permissionDecision on the result line:\n%s", data)
	}
}

func TestPrintRetriesOverload(t *testing.T) {
	p := newProject(t)
	p.srv.Enqueue(modeltest.Overloaded(), modeltest.Text("made it"))
	code, out, errOut := p.cairn(t, "-p", "hi")
	if code != 0 || out != "made it\n" || !strings.Contains(errOut, "retrying in") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if n := len(p.srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestPrintPromptTooLong(t *testing.T) {
	p := newProject(t)
	p.srv = modeltest.Start(t, modeltest.Config{ContextWindow: 50})
	code, _, errOut := p.cairn(t, "-p", strings.Repeat("a long prompt ", 100))
	if code != 1 || !strings.Contains(errOut, "prompt is too long") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	// The prompt was saved before the request: the session resumes to it.
	code, out, _ := p.cairn(t, "sessions", "list", "--json")
	if code != 0 || !strings.Contains(out, "a long prompt") {
		t.Errorf("the prompt is not in the session list: %s", out)
	}
}

func TestPrintErrorsAndUsage(t *testing.T) {
	p := newProject(t)
	p.srv.Enqueue(modeltest.Error(401))
	code, _, errOut := p.cairn(t, "-p", "hi")
	if code != 1 || !strings.Contains(errOut, "ANTHROPIC_API_KEY") {
		t.Errorf("401: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = p.cairn(t, "-p", "hi", "--output-format", "yaml")
	if code != 2 || !strings.Contains(errOut, "text, json or stream-json") {
		t.Errorf("bad format: exit %d, %q", code, errOut)
	}
	code, _, errOut = p.cairn(t, "-p", "--fork-session", "hi")
	if code != 2 || !strings.Contains(errOut, "--continue or --resume") {
		t.Errorf("fork alone: exit %d, %q", code, errOut)
	}
	// A usage mistake says how the command is used.
	code, _, errOut = p.cairn(t, "context", "a", "b")
	if code != 2 || !strings.Contains(errOut, "usage: cairn context [ID|PATH] [flags] (more: cairn context --help)") {
		t.Errorf("context with two sessions: exit %d, %q", code, errOut)
	}
}

// TestResumeIsByteStable checks the prompt-cache promise: the first request
// after `cairn -c` is byte-identical to the one the same session would have
// sent had it never stopped.
func TestResumeIsByteStable(t *testing.T) {
	p := newProject(t)
	file := filepath.Join(p.dir, "hello.py")
	turn1 := []modeltest.Reply{
		{Content: []model.Block{modeltest.ToolUse("toolu_1", "Read", fmt.Sprintf(`{"file_path":%q}`, file)), modeltest.ToolUse("toolu_2", "Glob", `{"pattern":"*.py"}`)}},
		modeltest.Text("It prints hello."),
	}
	p.srv.Enqueue(turn1...)
	if code, _, errOut := p.cairn(t, "-p", "what does hello.py print?"); code != 0 {
		t.Fatalf("turn 1: %s", errOut)
	}
	p.srv.Enqueue(modeltest.Text("Nothing else."))
	if code, _, errOut := p.cairn(t, "-c", "-p", "anything else?"); code != 0 {
		t.Fatalf("turn 2: %s", errOut)
	}
	resumed := p.srv.Last().Body

	// The same two turns in one uninterrupted session, through the library.
	other := modeltest.Start(t, modeltest.Config{})
	other.Enqueue(append(turn1, modeltest.Text("Nothing else."))...)
	m, err := anthropic.New(anthropic.Config{BaseURL: other.URL, APIKey: "test-key"})
	if err != nil {
		t.Fatal(err)
	}
	home := session.Home{Dir: p.home} // the memory folder is named in the system prompt
	ag, err := agent.Open(t.Context(), agent.Options{
		Home: home, Cwd: p.dir, Model: m, ModelName: "claude-sonnet-4-5", MaxTokens: 32000,
		Tools: append([]tool.Tool{tools.NewTask(subagent.BuiltIn())}, tools.Core()...), PermissionMode: "default", Entrypoint: "sdk-cli",
		ContextManagement: true, // as the command line sets it for Anthropic's API
		Instructions:      instructions.NewTracker(instructions.Options{Cwd: p.dir, Home: p.home, CairnHome: p.home}),
		Memory:            &agent.MemoryOptions{Dir: memory.Dir(home, p.dir)},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ag.Close()
	for _, prompt := range []string{"what does hello.py print?", "anything else?"} {
		for _, err := range ag.Run(t.Context(), prompt) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	// The two sessions' uuids differ, and so do the snip tags made from
	// them: compare the requests without them.
	live := untagged(other.Last().Body)
	resumed = untagged(resumed)
	if !bytes.Equal(resumed, live) {
		t.Errorf("the resumed request differs from the live one:\nresumed: %s\nlive:    %s", resumed, live)
	}
	if u := p.srv.Last().Usage; u.CacheReadInputTokens == 0 {
		t.Errorf("the resumed request read nothing from the cache: %+v", u)
	}
}

// untagged removes the snip tags ([id:xxxxxx]) from a request body.
func untagged(body []byte) []byte {
	body = regexp.MustCompile(`,\{"type":"text","text":"\[id:[0-9a-z]+\]"\}`).ReplaceAll(body, nil)
	return regexp.MustCompile(`\\n\[id:[0-9a-z]+\]`).ReplaceAll(body, nil)
}
