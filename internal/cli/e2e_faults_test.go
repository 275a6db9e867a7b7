package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/model/openai/openaitest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/transcript"
)

// start runs the binary in the background with its stdout piped.
func (p *project) start(t *testing.T, args ...string) (*exec.Cmd, *bufio.Reader, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = p.dir
	cmd.Env = []string{"CAIRN_HOME=" + p.home, "ANTHROPIC_BASE_URL=" + p.srv.URL, "ANTHROPIC_API_KEY=test-key", "HOME=" + p.home, "PATH=" + os.Getenv("PATH")}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, bufio.NewReader(out), &errb
}

// waitFor reads stream-json lines until one contains s.
func waitFor(t *testing.T, r *bufio.Reader, s string) {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if strings.Contains(line, s) {
			return
		}
		if err != nil {
			t.Fatalf("output ended before %q: %v", s, err)
		}
	}
}

// loadOnly rebuilds the project's only session as a resume would.
func (p *project) loadOnly(t *testing.T) *transcript.Conversation {
	t.Helper()
	infos, err := session.List(context.Background(), session.Home{Dir: p.home}, session.ListOptions{Cwd: p.dir})
	if err != nil || len(infos) != 1 {
		t.Fatalf("sessions: %v, %v", infos, err)
	}
	src, err := transcript.OpenFile(infos[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	c, err := transcript.Load(context.Background(), src, transcript.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) > 0 {
		t.Errorf("warnings after the interruption: %q", c.Warnings)
	}
	return c
}

func TestSIGINTDuringStreaming(t *testing.T) {
	p := newProject(t)
	hold, asked := make(chan struct{}), make(chan struct{})
	defer close(hold)
	p.srv = modeltest.Start(t, modeltest.Config{Respond: func(*modeltest.Request) modeltest.Reply {
		close(asked)
		return modeltest.Reply{Content: []model.Block{model.TextBlock("a long answer that never finishes")}, Hold: hold, HoldAfter: 4}
	}})
	cmd, _, errb := p.start(t, "-p", "explain everything")
	// The prompt is durable before the request: interrupt once it is sent.
	<-asked
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(errb.String(), "interrupted") {
		t.Fatalf("exit %v, stderr %q", err, errb.String())
	}
	c := p.loadOnly(t)
	msgs := c.Messages()
	if len(msgs) == 0 || !strings.Contains(msgs[0].Text(), "explain everything") || !strings.Contains(msgs[0].Text(), "[Request interrupted by user]") {
		t.Errorf("resume view: %v", msgs)
	}
	// And it resumes.
	p.srv.Enqueue(modeltest.Text("picking up"))
	if code, out, e := p.cairn(t, "-c", "-p", "go on"); code != 0 || out != "picking up\n" {
		t.Errorf("resume: exit %d %q %q", code, out, e)
	}
}

func TestSIGINTDuringTool(t *testing.T) {
	p := newProject(t)
	fifo := filepath.Join(p.dir, "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	p.srv.Enqueue(modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "Bash", `{"command":"echo go > started; sleep 30"}`)}})
	cmd, out, errb := p.start(t, "-p", "wait a while", "--output-format", "stream-json", "--permission-mode", "bypassPermissions")
	waitFor(t, out, `"type":"assistant"`)
	// Opening the fifo blocks until the command writes to it: it runs.
	if _, err := os.ReadFile(fifo); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGINT)
	go io.Copy(io.Discard, out)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("cairn did not stop after SIGINT during a tool")
	}
	c := p.loadOnly(t)
	msgs := c.Messages()
	// The call is answered (with whatever the command printed and a note
	// that it was stopped), then Claude Code's interruption marker.
	if len(msgs) != 4 {
		t.Fatalf("resume view: %d messages: %v", len(msgs), msgs)
	}
	res := msgs[2].Content[0]
	if res.Type != model.BlockToolResult || res.IsError == nil || !*res.IsError || !strings.Contains(res.ResultText(), "interrupted") {
		t.Errorf("the interrupted call's result: %q", res.ResultText())
	}
	if !strings.Contains(msgs[2].Text(), "[Request interrupted by user]") {
		t.Errorf("no interruption marker after the result: %q", msgs[2].Text())
	}
	_ = errb
}

func TestStreamCutMidResponse(t *testing.T) {
	p := newProject(t)
	p.srv.Enqueue(modeltest.Reply{Content: []model.Block{model.TextBlock("this reply breaks off half way through its text")}, CutAfter: 5})
	code, _, errOut := p.cairn(t, "-p", "hi")
	if code != 1 || errOut == "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	c := p.loadOnly(t)
	if got := len(c.Messages()); got != 2 { // the prompt, and the resume's reply
		t.Errorf("%d messages after a cut stream", got)
	}
}

func TestForkAndSessionID(t *testing.T) {
	p := newProject(t)
	id := "4f1d7a9e-0c2b-4d6e-8f1a-2b3c4d5e6f70"
	p.srv.Enqueue(modeltest.Text("first"))
	if code, _, e := p.cairn(t, "-p", "one", "--session-id", id); code != 0 {
		t.Fatal(e)
	}
	if code, _, e := p.cairn(t, "-p", "again", "--session-id", id); code != 1 || !strings.Contains(e, "--resume "+id) {
		t.Errorf("reusing a session id: exit %d %q", code, e)
	}
	p.srv.Enqueue(modeltest.Text("forked"))
	code, out, e := p.cairn(t, "-r", id, "--fork-session", "-p", "two", "--output-format", "json")
	if code != 0 {
		t.Fatal(e)
	}
	if strings.Contains(out, id) {
		t.Errorf("the fork kept the original session id: %s", out)
	}
	// The original is untouched; the fork holds both turns.
	orig, _ := os.ReadFile(filepath.Join(session.Home{Dir: p.home}.ProjectDir(p.dir), id+".jsonl"))
	if bytes.Contains(orig, []byte(`"two"`)) {
		t.Error("the fork wrote into the original session")
	}
	body := string(p.srv.Last().Body)
	if !strings.Contains(body, `"text":"one\n[id:`) || !strings.Contains(body, "first") {
		t.Errorf("the fork's request lacks the first turn: %s", body)
	}
	infos, _ := session.List(context.Background(), session.Home{Dir: p.home}, session.ListOptions{Cwd: p.dir})
	if len(infos) != 2 {
		t.Errorf("%d sessions, want the original and the fork", len(infos))
	}
}

func TestOpenAICompatibleServer(t *testing.T) {
	p := newProject(t)
	srv := openaitest.NewServer(t, openaitest.Text("Hello ", "from a local model."))
	cmd := exec.Command(binary, "-p", "hi", "--model", "qwen2.5-coder")
	cmd.Dir = p.dir
	cmd.Env = []string{"CAIRN_HOME=" + p.home, "OPENAI_BASE_URL=" + srv.URL, "HOME=" + p.home, "PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "Hello from a local model.\n" {
		t.Fatalf("%v: %s", err, out)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests", n)
	}
}

func TestNoModelConfigured(t *testing.T) {
	p := newProject(t)
	cmd := exec.Command(binary, "-p", "hi")
	cmd.Dir = p.dir
	cmd.Env = []string{"CAIRN_HOME=" + p.home, "HOME=" + p.home, "PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "ANTHROPIC_API_KEY") || !strings.Contains(string(out), "OPENAI_BASE_URL") {
		t.Errorf("%v: %s", err, out)
	}
	_ = fmt.Sprint
}

// TestSecondWriterRefused: a session another process is writing cannot be
// resumed; the refusal says to fork, on stderr and, in the machine
// formats, as an error result on stdout. Nothing is written to the session.
func TestSecondWriterRefused(t *testing.T) {
	p := newProject(t)
	id := "6c2e9b1d-3a4f-4e5d-9c8b-7a6f5e4d3c2b"
	p.srv.Enqueue(modeltest.Text("first"))
	if code, _, e := p.cairn(t, "-p", "one", "--session-id", id); code != 0 {
		t.Fatal(e)
	}
	store := session.Home{Dir: p.home}.Store(p.dir)
	held, err := store.OpenAppender(context.Background(), id) // another process's writer
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	before, err := os.ReadFile(store.Path(id))
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"text", "json", "stream-json"} {
		t.Run(format, func(t *testing.T) {
			args := []string{"-r", id, "-p", "two", "--output-format", format}
			if format == "stream-json" {
				args = append(args, "--verbose")
			}
			code, out, errOut := p.cairn(t, args...)
			if code != 1 {
				t.Fatalf("exit %d, want 1; stdout %q stderr %q", code, out, errOut)
			}
			if !strings.Contains(errOut, "--fork-session") {
				t.Errorf("stderr %q does not say to continue with --fork-session", errOut)
			}
			if format == "text" {
				if out != "" {
					t.Errorf("text output printed %q", out)
				}
				return
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			var res struct {
				Type    string `json:"type"`
				Subtype string `json:"subtype"`
				IsError bool   `json:"is_error"`
				Result  string `json:"result"`
			}
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
				t.Fatalf("the last line of stdout is not a result: %v\n%s", err, out)
			}
			if res.Type != "result" || !res.IsError || !strings.Contains(res.Result, "--fork-session") {
				t.Errorf("result %+v: want an error result naming --fork-session", res)
			}
		})
	}
	after, err := os.ReadFile(store.Path(id))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("a refused run wrote to the session")
	}
	if n := len(p.srv.Requests()); n != 1 {
		t.Errorf("%d model requests; the refused runs must not call the model", n)
	}
}
