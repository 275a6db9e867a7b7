package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/proctest"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestBashOutput(t *testing.T) {
	tests := []struct {
		name    string
		command string
		want    string
		isError bool
	}{
		{"stdout", "echo hello", "hello", false},
		{"leading blank lines and trailing space trimmed", "printf '\\n\\nhi  \\n\\n'", "hi", false},
		{"stderr interleaved", "echo out; echo err >&2; echo out2", "out\nerr\nout2", false},
		{"non-zero exit", "echo out; echo err >&2; exit 3", "Exit code 3\nout\nerr", true},
		{"failure without output", "false", "Exit code 1", true},
		{"no output", "true", "(no output)", false},
		{"command not found", "no-such-command-xyz", "Exit code 127\nbash: line 1: no-such-command-xyz: command not found", true},
		{"pipeline and list", "echo a | tr a b && echo c", "b\nc", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t)
			r := call(t, Bash{}, env, map[string]any{"command": tt.command, "description": "test"})
			if got := text(t, r); got != tt.want || r.IsError != tt.isError {
				t.Errorf("got %q (error %v), want %q (error %v)", got, r.IsError, tt.want, tt.isError)
			}
		})
	}
}

func TestBashDetail(t *testing.T) {
	env := newEnv(t)
	r := call(t, Bash{}, env, map[string]any{"command": "echo hi"})
	want := map[string]any{"stdout": "hi", "stderr": "", "interrupted": false, "isImage": false, "noOutputExpected": false}
	if diff := cmp.Diff(want, detail(t, r)); diff != "" {
		t.Errorf("detail (-want +got):\n%s", diff)
	}
}

func TestBashRunsInCwd(t *testing.T) {
	env := newEnv(t)
	sub := filepath.Join(env.ProjectDir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	env.SetCwd(sub)
	if got := text(t, call(t, Bash{}, env, map[string]any{"command": "pwd"})); got != sub {
		t.Errorf("pwd = %q, want %q", got, sub)
	}
}

func TestBashCdTracking(t *testing.T) {
	env := newEnv(t)
	sub := filepath.Join(env.ProjectDir, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}

	r := call(t, Bash{}, env, map[string]any{"command": "cd a/b"})
	if r.IsError || env.Cwd() != sub {
		t.Fatalf("after cd a/b: cwd %q (result %q), want %q", env.Cwd(), text(t, r), sub)
	}
	if got := text(t, call(t, Bash{}, env, map[string]any{"command": "pwd"})); got != sub {
		t.Errorf("next command ran in %q, want %q", got, sub)
	}
	// A failing command still moves.
	call(t, Bash{}, env, map[string]any{"command": "cd .. && false"})
	if want := filepath.Join(env.ProjectDir, "a"); env.Cwd() != want {
		t.Errorf("after cd .. && false: cwd %q, want %q", env.Cwd(), want)
	}
	// So does exit.
	call(t, Bash{}, env, map[string]any{"command": "cd b; exit 2"})
	if env.Cwd() != sub {
		t.Errorf("after cd b; exit 2: cwd %q, want %q", env.Cwd(), sub)
	}

	r = call(t, Bash{}, env, map[string]any{"command": "cd / && pwd"})
	if env.Cwd() != env.ProjectDir {
		t.Errorf("after cd /: cwd %q, want the project %q", env.Cwd(), env.ProjectDir)
	}
	if want := "/\nShell cwd was reset to " + env.ProjectDir; text(t, r) != want {
		t.Errorf("text = %q, want %q", text(t, r), want)
	}
}

func TestBashCwdGone(t *testing.T) {
	env := newEnv(t)
	gone := filepath.Join(env.ProjectDir, "gone")
	if err := os.Mkdir(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	env.SetCwd(gone)
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	r := call(t, Bash{}, env, map[string]any{"command": "pwd"})
	if got := text(t, r); !strings.HasPrefix(got, env.ProjectDir+"\n") || !strings.Contains(got, "no longer exists") {
		t.Errorf("got %q", got)
	}
}

func TestBashTimeoutKillsGroup(t *testing.T) {
	tests := []struct {
		name    string
		command string
	}{
		{"child obeys SIGTERM", "sleep 30 & echo $!; wait"},
		{"child ignores SIGTERM", "trap '' TERM; sleep 30 & echo $!; wait"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t)
			start := time.Now()
			r := call(t, Bash{KillGrace: 100 * time.Millisecond}, env, map[string]any{"command": tt.command, "timeout": 200})
			if elapsed := time.Since(start); elapsed > 5*time.Second {
				t.Errorf("took %v", elapsed)
			}
			got := text(t, r)
			if !r.IsError || !strings.Contains(got, "Command timed out after 200ms") {
				t.Errorf("got %q (error %v), want a timeout error", got, r.IsError)
			}
			if d := r.Detail.(bashDetail); !d.Interrupted {
				t.Error("interrupted = false")
			}
			proctest.WaitGone(t, proctest.PidIn(t, got), "the call returned")
		})
	}
}

func TestBashCancel(t *testing.T) {
	env := newEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	r := callCtx(t, ctx, Bash{}, env, map[string]any{"command": "sleep 30 & echo $!; wait"})
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("took %v", elapsed)
	}
	got := text(t, r)
	if !r.IsError || !strings.Contains(got, "interrupted") || !r.Detail.(bashDetail).Interrupted {
		t.Errorf("got %q (error %v), want an interrupted result", got, r.IsError)
	}
	proctest.WaitGone(t, proctest.PidIn(t, got), "the call returned")
}

func TestBashLeavesBackgroundJobsAlone(t *testing.T) {
	// A job the command starts with & keeps running and keeps the output
	// open; the call still returns when the shell exits.
	env := newEnv(t)
	start := time.Now()
	r := call(t, Bash{}, env, map[string]any{"command": "sleep 30 & echo $!"})
	pid := proctest.PidIn(t, text(t, r))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("took %v", elapsed)
	}
	if r.IsError {
		t.Errorf("got error %q", text(t, r))
	}
}

func TestBashOutputCap(t *testing.T) {
	env := newEnv(t)
	r := call(t, Bash{}, env, map[string]any{"command": "seq 1 300000"}) // about 2 MB
	got := text(t, r)
	if len(got) > BashMaxOutput+100 {
		t.Errorf("output is %d bytes, want about %d", len(got), BashMaxOutput)
	}
	if !strings.HasPrefix(got, "1\n2\n3\n") || !strings.HasSuffix(got, "\n299999\n300000") {
		t.Errorf("output does not keep the start and the end: %q … %q", got[:20], got[len(got)-20:])
	}
	full := 0
	for i := 1; i <= 300000; i++ {
		full += len(strconv.Itoa(i)) + 1
	}
	// The note says how much was cut, and it adds up.
	_, after, ok := strings.Cut(got, "\n\n... [")
	if !ok {
		t.Fatalf("no cut note in output")
	}
	n, err := strconv.Atoi(after[:strings.IndexByte(after, ' ')])
	if err != nil {
		t.Fatal(err)
	}
	if kept := BashMaxOutput; n != full-kept {
		t.Errorf("note says %d bytes cut, want %d", n, full-kept)
	}
}

func TestHeadTail(t *testing.T) {
	h := &headTail{max: 9}
	for _, s := range []string{"ab", "cdef", "ghijk", "lmn", "op"} {
		h.write([]byte(s))
	}
	if got, want := h.String(), "abcdef\n\n... [7 bytes of output cut] ...\n\nnop"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	h = &headTail{max: 9}
	h.write([]byte("short"))
	if got := h.String(); got != "short" {
		t.Errorf("got %q", got)
	}
	// Cuts never split a character.
	h = &headTail{max: 6}
	h.write([]byte("aéééééééééb"))
	if got := h.String(); !strings.HasPrefix(got, "aé\n") || !strings.HasSuffix(got, "\n\nb") {
		t.Errorf("got %q", got)
	}
}

func TestBashBackground(t *testing.T) {
	env := newEnv(t)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	r := call(t, Bash{}, env, map[string]any{"command": "echo from background; echo done > " + fifo, "run_in_background": true})
	if r.IsError {
		t.Fatal(text(t, r))
	}
	id := r.Detail.(bashDetail).BackgroundTaskID
	logPath := filepath.Join(env.SessionDir, "shells", id+".log")
	// The exit code is written after the command ends, by a goroutine the
	// test cannot join: wait for the file before the folder is removed.
	exitPath := filepath.Join(env.SessionDir, "shells", id+".exit")
	t.Cleanup(func() {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if b, err := os.ReadFile(exitPath); err == nil && len(b) > 0 {
				return
			}
		}
		t.Errorf("no exit code in %s", exitPath)
	})
	if id == "" || !strings.Contains(text(t, r), logPath) {
		t.Fatalf("result %q does not name the output file %s", text(t, r), logPath)
	}
	// Reading the fifo waits for the command to get there.
	if got, err := os.ReadFile(fifo); err != nil || string(got) != "done\n" {
		t.Fatalf("fifo: %q, %v", got, err)
	}
	if got := readTestFile(t, logPath); got != "from background\n" {
		t.Errorf("log = %q", got)
	}
}

func TestBashInputErrors(t *testing.T) {
	env := newEnv(t)
	for name, input := range map[string]any{
		"no command":      map[string]any{},
		"empty command":   map[string]any{"command": "  "},
		"bad timeout":     map[string]any{"command": "true", "timeout": -5},
		"unknown field":   map[string]any{"command": "true", "cwd": "/"},
		"command as list": map[string]any{"command": []string{"ls"}},
	} {
		if r := call(t, Bash{}, env, input); !r.IsError || !strings.Contains(text(t, r), "InputValidationError") {
			t.Errorf("%s: got %q", name, text(t, r))
		}
	}
}

func TestBashSafetyFromInput(t *testing.T) {
	in := func(cmd string) json.RawMessage {
		raw, _ := json.Marshal(map[string]string{"command": cmd})
		return raw
	}
	b := Bash{}
	if !b.ReadOnly(in("ls -la | grep go")) || !b.ConcurrencySafe(in("git status")) {
		t.Error("read-only commands not recognised")
	}
	if b.ReadOnly(in("npm install")) || b.ConcurrencySafe(in("npm install")) {
		t.Error("npm install judged read-only")
	}
	if !b.Destructive(in("rm -rf build")) || b.Destructive(in("go test ./...")) {
		t.Error("destructive judged wrong")
	}
	if b.ReadOnly(json.RawMessage(`{`)) || b.Destructive(json.RawMessage(`{`)) {
		t.Error("an input that does not decode must be neither")
	}
}
