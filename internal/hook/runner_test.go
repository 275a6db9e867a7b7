package hook

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/proctest"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestRunExitCodesAndOutput(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   Result
	}{
		{
			name:   "exit 0 with plain text",
			script: "echo all good; echo note >&2",
			want:   Result{Exit: 0, Stdout: "all good\n", Stderr: "note\n"},
		},
		{
			name:   "exit 0 with JSON",
			script: `echo '{"systemMessage":"hi","continue":false,"stopReason":"enough"}'`,
			want: Result{Exit: 0, Stdout: "{\"systemMessage\":\"hi\",\"continue\":false,\"stopReason\":\"enough\"}\n",
				Output: &Output{SystemMessage: "hi", Continue: new(false), StopReason: "enough"}},
		},
		{
			name:   "malformed JSON is plain text",
			script: `echo '{"systemMessage": "unterminated'`,
			want:   Result{Exit: 0, Stdout: "{\"systemMessage\": \"unterminated\n"},
		},
		{
			name:   "JSON of the wrong shape is plain text",
			script: `echo '{"continue": "yes"}'`,
			want:   Result{Exit: 0, Stdout: "{\"continue\": \"yes\"}\n"},
		},
		{
			name:   "exit 2 keeps stderr and ignores JSON",
			script: `echo '{"decision":"approve"}'; echo "no rm here" >&2; exit 2`,
			want:   Result{Exit: 2, Stdout: "{\"decision\":\"approve\"}\n", Stderr: "no rm here\n"},
		},
		{
			name:   "exit 1",
			script: "echo broken >&2; exit 1",
			want:   Result{Exit: 1, Stderr: "broken\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := project(t, hookSpec{event: Stop, script: tt.script})
			got := r.Run(t.Context(), Stop, "", []byte("{}"))
			if len(got) != 1 {
				t.Fatalf("%d results, want 1", len(got))
			}
			if diff := cmp.Diff(tt.want, got[0], cmpopts.IgnoreFields(Result{}, "Command", "Duration")); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunStdinEnvAndDir(t *testing.T) {
	r, dir := project(t, hookSpec{event: Stop, script: `cat; echo; echo "$CLAUDE_PROJECT_DIR"; echo "$CAIRN_PROJECT_DIR"; pwd -P`})
	input := `{"hook_event_name":"Stop","stop_hook_active":false}`
	got := r.Run(t.Context(), Stop, "", []byte(input))
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{input, dir, dir, real}, "\n") + "\n"
	if got[0].Stdout != want {
		t.Errorf("stdout %q, want %q", got[0].Stdout, want)
	}
}

func TestRunInParallel(t *testing.T) {
	// Each hook waits for the other through two named pipes: run one at a
	// time, the first would wait for the second until its timeout.
	dir := t.TempDir()
	ping, pong := mkfifo(t, dir, "ping"), mkfifo(t, dir, "pong")
	r, _ := project(t,
		hookSpec{event: Stop, script: "echo a > " + ping + "; read x < " + pong + "; echo got $x", timeout: 20},
		hookSpec{event: Stop, script: "read x < " + ping + "; echo b > " + pong + "; echo got $x", timeout: 20},
	)
	got := r.Run(t.Context(), Stop, "", []byte("{}"))
	var outs []string
	for _, res := range got {
		if res.Err != nil || res.Exit != 0 {
			t.Fatalf("hook %q: exit %d, %v", res.Command.Command, res.Exit, res.Err)
		}
		outs = append(outs, res.Stdout)
	}
	if diff := cmp.Diff([]string{"got b\n", "got a\n"}, outs); diff != "" {
		t.Errorf("outputs in settings order (-want +got):\n%s", diff)
	}
}

func TestRunKillsHangingHookAtTimeout(t *testing.T) {
	r, _ := project(t,
		hookSpec{event: Stop, script: "sleep 60 & echo $!; wait", timeout: 1},
		hookSpec{event: Stop, script: "echo quick"},
	)
	start := time.Now()
	got := r.Run(t.Context(), Stop, "", []byte("{}"))
	if elapsed := time.Since(start); elapsed > 20*time.Second {
		t.Errorf("Run took %v; the hook should be stopped after 1 s", elapsed)
	}
	hung := got[0]
	if !errors.Is(hung.Err, ErrTimeout) || hung.Exit != -1 {
		t.Fatalf("hanging hook: exit %d, err %v; want ErrTimeout", hung.Exit, hung.Err)
	}
	proctest.WaitGone(t, proctest.PidIn(t, hung.Stdout), "the hook was stopped")
	if got[1].Stdout != "quick\n" || got[1].Err != nil {
		t.Errorf("the other hook: %+v", got[1])
	}
	o := Outcome{Event: Stop, Name: "Stop", Results: got}
	o.fold()
	if len(o.Messages) != 1 || !strings.Contains(o.Messages[0], "timeout (1s)") || o.Blocked {
		t.Errorf("outcome %+v; want one message about the timeout and no block", o)
	}
}

func TestRunCancelKillsHooks(t *testing.T) {
	dir := t.TempDir()
	started := mkfifo(t, dir, "started")
	r, _ := project(t, hookSpec{event: Stop, script: "sleep 60 & echo $!; echo up > " + started + "; wait"})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan []Result)
	go func() { done <- r.Run(ctx, Stop, "", []byte("{}")) }()
	b, err := os.ReadFile(started) // blocks until the hook is running
	if err != nil || string(b) != "up\n" {
		t.Fatalf("read %q: %v", b, err)
	}
	cancel()
	got := <-done
	if !errors.Is(got[0].Err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", got[0].Err)
	}
	proctest.WaitGone(t, proctest.PidIn(t, got[0].Stdout), "the hook was stopped")
	o := Outcome{Event: Stop, Name: "Stop", Results: got}
	o.fold()
	if len(o.Messages) != 0 {
		t.Errorf("a cancelled hook is not worth a message: %q", o.Messages)
	}
}

func TestRunCannotStart(t *testing.T) {
	c := &Config{}
	c.Add("s.json", []byte(`{"Stop":[{"hooks":[{"type":"command","command":"true"}]}]}`))
	r := NewRunner(c, Options{ProjectDir: t.TempDir(), Shell: filepath.Join(t.TempDir(), "no-shell")})
	got := r.Run(t.Context(), Stop, "", nil)
	if got[0].Err == nil || !strings.Contains(got[0].Err.Error(), "could not start") {
		t.Errorf("err %v, want could not start", got[0].Err)
	}
}

func TestRunNothingToRun(t *testing.T) {
	r := NewRunner(nil, Options{})
	if got := r.Run(t.Context(), PreToolUse, "Bash", nil); got != nil {
		t.Errorf("got %v", got)
	}
	if o := r.PreToolUse(t.Context(), ToolCall{Name: "Bash"}); o.Ran() || o.Decision != "" {
		t.Errorf("outcome %+v", o)
	}
}

func TestRunDeduplicates(t *testing.T) {
	c := &Config{}
	one := `{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"echo once"}]},{"matcher":"*","hooks":[{"type":"command","command":"echo once"},{"type":"command","command":"echo twice"}]}]}`
	c.Add("a.json", []byte(one))
	c.Add("b.json", []byte(`{"PreToolUse":[{"hooks":[{"type":"command","command":"echo once"}]}]}`))
	got := NewRunner(c, Options{ProjectDir: t.TempDir()}).Run(t.Context(), PreToolUse, "Bash", nil)
	var outs []string
	for _, r := range got {
		outs = append(outs, r.Stdout)
	}
	if diff := cmp.Diff([]string{"once\n", "twice\n"}, outs); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestRunLeavesBackgroundJobsAlone(t *testing.T) {
	// A job the hook starts with & keeps the output open; the hook still
	// counts as done soon after its shell exits.
	r, _ := project(t, hookSpec{event: Stop, script: "sleep 60 & echo $!"})
	start := time.Now()
	got := r.Run(t.Context(), Stop, "", []byte("{}"))
	pid := proctest.PidIn(t, got[0].Stdout)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if elapsed := time.Since(start); elapsed > 20*time.Second {
		t.Errorf("Run took %v", elapsed)
	}
	if got[0].Exit != 0 || got[0].Err != nil {
		t.Errorf("exit %d, err %v", got[0].Exit, got[0].Err)
	}
}

// Notification and SessionEnd hooks get Claude Code's input, matched on
// the notification's kind and the end's reason; List shows every hook
// with its event, matcher and file.
func TestNotificationAndSessionEnd(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	c := &Config{}
	raw := `{"Notification":[{"matcher":"permission_prompt","hooks":[{"type":"command","command":"cat >> ` + out + `; echo >> ` + out + `"}]}],` +
		`"SessionEnd":[{"matcher":"clear|other","hooks":[{"type":"command","command":"cat >> ` + out + `; echo >> ` + out + `","timeout":5}]}]}`
	if w := c.Add("s.json", json.RawMessage(raw)); len(w) != 0 {
		t.Fatalf("warnings %q", w)
	}
	r := NewRunner(c, Options{ProjectDir: dir, Session: func() Session { return Session{ID: "s1", Cwd: dir} }})
	r.Notification(context.Background(), NotifyIdle, "waiting") // not matched
	r.Notification(context.Background(), NotifyPermission, "cairn needs your permission to use Bash")
	r.SessionEnd(context.Background(), EndExit) // not matched
	r.SessionEnd(context.Background(), EndOther)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%v: %q", err, line)
		}
		delete(m, "transcript_path")
		got = append(got, m)
	}
	want := []map[string]any{
		{"session_id": "s1", "cwd": dir, "hook_event_name": "Notification", "message": "cairn needs your permission to use Bash", "title": "cairn", "notification_type": "permission_prompt"},
		{"session_id": "s1", "cwd": dir, "hook_event_name": "SessionEnd", "reason": "other"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("inputs (-want +got):\n%s", diff)
	}
	list := c.List()
	if len(list) != 2 || list[0].Event != Notification || list[0].Matcher != "permission_prompt" || list[1].Event != SessionEnd || list[1].Timeout != 5*time.Second || list[1].File != "s.json" {
		t.Errorf("List = %+v", list)
	}
}
