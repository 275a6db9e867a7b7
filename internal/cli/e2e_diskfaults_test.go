package cli_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-dev/cairn/internal/filehistory"
	"github.com/cairn-dev/cairn/internal/proctest"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/transcript"
)

var (
	straceOnce sync.Once
	straceErr  error
)

// needStrace skips the test when strace cannot trace here: the disk-fault
// tests make the real binary's system calls fail with it.
func needStrace(t *testing.T) string {
	t.Helper()
	path := proctest.Command(t, "strace", "the disk-fault tests inject ENOSPC and EIO into cairn's system calls with it (apt-get install strace)")
	straceOnce.Do(func() {
		if out, err := exec.Command(path, "-f", "-qq", "-o", os.DevNull, "true").CombinedOutput(); err != nil {
			straceErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	if straceErr != nil {
		skipOrFail(t, fmt.Sprintf("strace cannot trace processes here (ptrace not permitted?): %v", straceErr))
	}
	return path
}

// fault is a system call made to fail on one file: strace's -P scopes the
// injection to calls on that path (or on a descriptor opened on it).
type fault struct {
	path   string
	inject string // strace's inject expression, e.g. "write:error=ENOSPC:when=1"
}

// cairnFaulty runs the binary under strace with f injected.
// It returns strace's log too.
func (p *project) cairnFaulty(t *testing.T, f fault, args ...string) (code int, stdout, stderr, straceLog string) {
	t.Helper()
	st := needStrace(t)
	syscall, _, _ := strings.Cut(f.inject, ":")
	log := filepath.Join(t.TempDir(), "strace.log")
	full := append([]string{"-f", "-qq", "--seccomp-bpf", "-o", log, "-P", f.path, "-e", "signal=none", "-e", "trace=" + syscall, "-e", "inject=" + f.inject, binary}, args...)
	cmd := exec.Command(st, full...)
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
	l, _ := os.ReadFile(log)
	if !bytes.Contains(l, []byte("(INJECTED)")) {
		t.Fatalf("strace injected no fault (%s on %s); its log:\n%s\ncairn's stderr:\n%s", f.inject, f.path, l, errb.String())
	}
	return code, out.String(), errb.String(), string(l)
}

// savedAfterFault reports whether strace's log shows a write on the
// faulty path that succeeded after one it made fail. strace counts a
// syscall's invocations per thread ("per tracee"), so "when=2+" fails a
// thread's second write on, and the writer's retry may run on a thread
// that has not written yet: then the retry saved the lines, and the run
// rightly ends well.
func savedAfterFault(straceLog string) bool {
	failed := false
	for line := range strings.Lines(straceLog) {
		_, call, _ := strings.Cut(line, " ")
		if !strings.HasPrefix(strings.TrimSpace(call), "write(") {
			continue
		}
		switch {
		case strings.Contains(line, "(INJECTED)"):
			failed = true
		case failed && !strings.Contains(line, "= -1 "):
			return true
		}
	}
	return false
}

// TestTranscriptDiskFaults makes the transcript's writes and syncs fail in
// the real binary: the person is told plainly at once, a prompt that could
// not be saved is not sent, what was on disk stays as it was, and the next
// run resumes what was saved.
func TestTranscriptDiskFaults(t *testing.T) {
	needStrace(t)
	tests := []struct {
		name   string
		inject string
		// saved: the faulty run's prompt reached the file.
		saved bool
		// requests the faulty run may make: 0 when its prompt could not be
		// made durable.
		requests int
		want     string
	}{
		{"prompt write, disk full", "write:error=ENOSPC:when=1+", false, 0, "the session could not be saved: disk full; nothing after "},
		{"prompt write, I/O error", "write:error=EIO:when=1+", false, 0, "the session could not be saved: I/O error; nothing after "},
		{"prompt sync, I/O error", "fsync:error=EIO:when=1", true, 0, "the session could not be saved: I/O error; what was written after "},
		{"prompt sync, disk full", "fsync:error=ENOSPC:when=1", true, 0, "the session could not be saved: disk full; what was written after "},
		{"reply write, disk full", "write:error=ENOSPC:when=2+", true, 2, "the session could not be saved: disk full; nothing after "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProject(t)
			id := "3e8a1c5f-7b2d-4f6e-9a0c-1d2e3f4a5b6c"
			p.srv.Enqueue(modeltest.Text("the first answer"))
			if code, _, e := p.cairn(t, "-p", "one", "--session-id", id); code != 0 {
				t.Fatal(e)
			}
			path := session.Home{Dir: p.home}.Store(p.dir).Path(id)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(p.dir, "hello.py")
			p.srv.Enqueue(
				modeltest.Reply{Content: append(modeltest.Text("Reading it.").Content, modeltest.ToolUse("toolu_r", "Read", fmt.Sprintf(`{"file_path":%q}`, file)))},
				modeltest.Text("never sent"),
			)
			sent := len(p.srv.Requests())
			code, _, errOut, straceLog := p.cairnFaulty(t, fault{path, tt.inject}, "-r", id, "-p", "two")
			switch {
			case code != 0:
			case savedAfterFault(straceLog):
				t.Logf("a retry on another thread saved the lines strace made fail (it counts per thread): exit 0 is right")
			default:
				t.Errorf("the run whose session could not be saved exited 0; stderr %q", errOut)
			}
			if !strings.Contains(errOut, tt.want) {
				t.Errorf("stderr does not say plainly what happened (want %q):\n%s", tt.want, errOut)
			}
			if n := len(p.srv.Requests()) - sent; n > tt.requests {
				t.Errorf("the faulty run made %d model requests, at most %d allowed", n, tt.requests)
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(after, before) {
				t.Fatalf("what was on disk changed:\nbefore %q\nafter  %q", before, after)
			}
			if got := bytes.Contains(after[len(before):], []byte(`"two"`)); got != tt.saved {
				t.Errorf("the faulty run's prompt on disk: %v, want %v", got, tt.saved)
			}
			if !tt.saved && len(after) != len(before) {
				t.Errorf("the faulty run added %q", after[len(before):])
			}

			// The next run resumes what was saved.
			p.srv.Enqueue(modeltest.Text("the third answer"))
			if code, _, e := p.cairn(t, "-r", id, "-p", "three"); code != 0 {
				t.Fatalf("the next run: exit %d: %s", code, e)
			}
			body := string(p.srv.Last().Body)
			if !strings.Contains(body, "the first answer") || !strings.Contains(body, "three") {
				t.Errorf("the next run's request lacks the saved conversation: %.600s", body)
			}
			conv := p.loadOnly(t)
			if len(conv.Warnings) > 0 {
				t.Errorf("the transcript loads with warnings %q", conv.Warnings)
			}
			unanswered(t, conv)
		})
	}
}

// unanswered fails the test for a tool_use of conv without a result.
func unanswered(t *testing.T, conv *transcript.Conversation) {
	t.Helper()
	msgs := conv.Messages()
	for i, m := range msgs {
		for _, b := range m.ToolUses() {
			answered := false
			if i+1 < len(msgs) {
				for _, r := range msgs[i+1].Content {
					answered = answered || r.ToolUseID == b.ID
				}
			}
			if !answered {
				t.Errorf("tool_use %s has no result", b.ID)
			}
		}
	}
}

// TestSideFileDiskFaults makes the file-history backup and the spill of a
// large tool result fail: the person is told, the project file is not
// changed without its backup, the large result stays in the transcript,
// and the session goes on and resumes.
func TestSideFileDiskFaults(t *testing.T) {
	needStrace(t)
	const id = "9d4b2a6c-1e3f-4a5b-8c7d-6e5f4a3b2c1d"
	t.Run("file-history backup, disk full", func(t *testing.T) {
		p := newProject(t)
		file := filepath.Join(p.dir, "hello.py")
		p.srv.Enqueue(
			modeltest.Reply{Content: append(modeltest.Text("Reading it.").Content, modeltest.ToolUse("toolu_r", "Read", fmt.Sprintf(`{"file_path":%q}`, file)))},
			modeltest.Reply{Content: append(modeltest.Text("Editing.").Content, modeltest.ToolUse("toolu_e", "Edit", fmt.Sprintf(`{"file_path":%q,"old_string":"hello","new_string":"goodbye"}`, file)))},
			modeltest.Text("Could not change it."),
		)
		backup := filepath.Join(session.Home{Dir: p.home}.FileHistory(id), filehistory.BackupName(file, 1))
		code, _, errOut, _ := p.cairnFaulty(t, fault{backup, "rename,renameat,renameat2:error=ENOSPC"}, "-p", "change the greeting", "--session-id", id, "--permission-mode", "acceptEdits")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if want := "file history could not back up " + file + ": disk full"; !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
		if got, _ := os.ReadFile(file); string(got) != "print('hello')\n" {
			t.Errorf("the file was changed without a backup: %q", got)
		}
		if reqs := p.srv.Requests(); len(reqs) != 3 || !bytes.Contains(reqs[2].Body, []byte("no space left on device")) {
			t.Errorf("the model was not told the edit failed (%d requests)", len(reqs))
		}
		resumeAfter(t, p, id)
	})
	t.Run("tool-result spill, disk full", func(t *testing.T) {
		p := newProject(t)
		p.srv.Enqueue(
			modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_big", "Bash", `{"command":"head -c 200000 /dev/zero | tr '\\0' x"}`)}},
			modeltest.Text("That was long."),
		)
		spill := filepath.Join(session.Home{Dir: p.home}.ProjectDir(p.dir), id, "tool-results", "toolu_big.txt")
		code, _, errOut, _ := p.cairnFaulty(t, fault{spill, "rename,renameat,renameat2:error=ENOSPC"}, "-p", "print a lot", "--session-id", id, "--permission-mode", "bypassPermissions")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if want := "a large result of Bash could not be saved to a file (disk full"; !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
		if _, err := os.Stat(spill); err == nil {
			t.Error("the spill file exists though its rename failed")
		}
		reqs := p.srv.Requests()
		if len(reqs) < 2 || !bytes.Contains(reqs[1].Body, bytes.Repeat([]byte("x"), 200000)) {
			t.Errorf("the whole result did not stay inline (%d requests)", len(reqs))
		}
		resumeAfter(t, p, id)
	})
}

// resumeAfter resumes the session id and checks that it loads cleanly
// with every call answered.
func resumeAfter(t *testing.T, p *project, id string) {
	t.Helper()
	p.srv.Enqueue(modeltest.Text("resumed"))
	if code, _, e := p.cairn(t, "-r", id, "-p", "and now?"); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, e)
	}
	conv := p.loadOnly(t)
	if len(conv.Warnings) > 0 {
		t.Errorf("the transcript loads with warnings %q", conv.Warnings)
	}
	unanswered(t, conv)
}

// TestReadOnlyHome runs cairn with its home on a read-only mount (bwrap):
// a new session and a resume are both refused plainly before any request,
// and the saved session is untouched and resumes once the home is
// writable again.
func TestReadOnlyHome(t *testing.T) {
	bwrap := proctest.Command(t, "bwrap", "this test mounts cairn's home read-only with it (apt-get install bubblewrap)")
	if out, err := exec.Command(bwrap, "--bind", "/", "/", "true").CombinedOutput(); err != nil {
		skipOrFail(t, fmt.Sprintf("bwrap cannot make a mount namespace here: %v: %s", err, out))
	}
	p := newProject(t)
	id := "1f2e3d4c-5b6a-4798-8a7b-6c5d4e3f2a1b"
	p.srv.Enqueue(modeltest.Text("the first answer"))
	if code, _, e := p.cairn(t, "-p", "one", "--session-id", id); code != 0 {
		t.Fatal(e)
	}
	path := session.Home{Dir: p.home}.Store(p.dir).Path(id)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readOnly := func(args ...string) (int, string) {
		cmd := exec.Command(bwrap, append([]string{"--bind", "/", "/", "--ro-bind", p.home, p.home, binary}, args...)...)
		cmd.Dir = p.dir
		cmd.Env = []string{"CAIRN_HOME=" + p.home, "ANTHROPIC_BASE_URL=" + p.srv.URL, "ANTHROPIC_API_KEY=test-key", "HOME=" + p.home, "PATH=" + os.Getenv("PATH")}
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), errb.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, errb.String()
	}
	sent := len(p.srv.Requests())
	for _, args := range [][]string{{"-p", "a new one"}, {"-r", id, "-p", "two"}} {
		code, errOut := readOnly(args...)
		if code != 1 || !strings.Contains(errOut, "the session cannot be saved, so it was not started: the file system is read-only") {
			t.Errorf("%v on a read-only home: exit %d, stderr %q", args, code, errOut)
		}
	}
	if n := len(p.srv.Requests()) - sent; n != 0 {
		t.Errorf("%d model requests from runs that could not save", n)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("the saved session changed")
	}
	resumeAfter(t, p, id)
}

// skipOrFail skips a test the machine cannot run, except under CI, where
// .ci/run provides what it needs and a skip would hide a failure.
func skipOrFail(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// TestSavedAfterFault: a write that succeeds after an injected failure
// (on another thread, which strace counts apart) shows in its log; writes
// that all fail after the first do not.
func TestSavedAfterFault(t *testing.T) {
	for log, want := range map[string]bool{
		"12748 write(1, \"a\\n\", 2) = 2\n12748 write(1, \"b\\n\", 2) = -1 ENOSPC (No space left on device) (INJECTED)\n12749 write(1, \"c\\n\", 2) = 2\n":                                              true,
		"12748 write(1, \"a\\n\", 2) = 2\n12748 write(1, \"b\\n\", 2) = -1 ENOSPC (No space left on device) (INJECTED)\n12749 write(1, \"c\\n\", 2) = -1 ENOSPC (No space left on device) (INJECTED)\n": false,
		"12748 write(1, \"a\\n\", 2) = 2\n": false,
	} {
		if got := savedAfterFault(log); got != want {
			t.Errorf("savedAfterFault(%q) = %v, want %v", log, got, want)
		}
	}
}
