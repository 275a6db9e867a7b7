package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gofrs/flock"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/transcript"
)

// killCount is how many times TestKillAtScale kills cairn: 200 in CI
// (CI=true), fewer on a shared workstation; CAIRN_TEST_KILLS overrides.
func killCount(t *testing.T) int {
	if v := os.Getenv("CAIRN_TEST_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("CAIRN_TEST_KILLS=%q is not a positive number", v)
		}
		return n
	}
	if os.Getenv("CI") == "true" {
		return 200
	}
	return 40
}

// killer answers the model requests of the runs TestKillAtScale starts and
// kills the run now and then while it waits for an answer: mid-turn, in a
// compaction's summary request, while a subagent works, between parallel
// tool calls. It notes every prompt a request carried: those prompts were
// acknowledged (made durable before the request went out).
type killer struct {
	mu    sync.Mutex
	rng   *rand.Rand
	proc  *os.Process // the run under way
	kills int
	acked map[string]bool
	seen  map[string]int // requests by kind
}

func (k *killer) respond(r *modeltest.Request) modeltest.Reply {
	k.mu.Lock()
	defer k.mu.Unlock()
	kind := "turn"
	switch {
	case bytes.Contains(r.Body, []byte("<summary></summary>")):
		kind = "summary"
	case childTask(r) != "":
		kind = "subagent"
	}
	k.seen[kind]++
	if r.Params != nil && kind == "turn" {
		for _, m := range r.Params.Messages {
			for _, b := range m.Content {
				if i := strings.Index(b.Text, "kill-run-"); i >= 0 {
					k.acked[strings.Fields(b.Text[i:])[0]] = true
				}
			}
		}
	}
	// Kill now (the request is out, nothing answered), or a moment after
	// the answer starts (while it streams, its lines are written, its
	// tools run).
	if k.proc != nil && k.rng.IntN(3) == 0 {
		if k.rng.IntN(2) == 0 {
			k.kill()
		} else {
			proc, d := k.proc, time.Duration(k.rng.IntN(40))*time.Millisecond
			time.AfterFunc(d, func() {
				k.mu.Lock()
				defer k.mu.Unlock()
				if k.proc == proc {
					k.kill()
				}
			})
		}
	}
	switch kind {
	case "summary":
		return modeltest.Text("<summary>The work so far: the runs that were killed and resumed.</summary>")
	case "subagent":
		return modeltest.Text("The subagent looked and found nothing wrong.")
	}
	last := r.Params.Messages[len(r.Params.Messages)-1]
	afterTools := len(last.Content) > 0 && last.Content[0].Type == model.BlockToolResult
	if afterTools && k.rng.IntN(2) == 0 {
		return modeltest.Text("Done for now.")
	}
	n := k.seen["turn"]
	switch k.rng.IntN(4) {
	case 0:
		return modeltest.Text("Nothing to change.")
	case 1: // a subagent
		return modeltest.Reply{Content: []model.Block{modeltest.ToolUse(fmt.Sprintf("toolu_task_%d", n), "Task",
			`{"description":"Look around","prompt":"Look at hello.py and report.","subagent_type":"general-purpose"}`)}}
	}
	// Parallel calls: large outputs fill the small window, so
	// compactions come often.
	var calls []model.Block
	for i := range 2 + k.rng.IntN(2) {
		calls = append(calls, modeltest.ToolUse(fmt.Sprintf("toolu_%d_%d", n, i), "Bash", `{"command":"head -c 9000 /dev/zero | tr '\\0' a"}`))
	}
	calls = append(calls, modeltest.ToolUse(fmt.Sprintf("toolu_%d_read", n), "Read", `{"file_path":"hello.py"}`))
	return modeltest.Reply{Content: calls}
}

// kill kills the run under way; k.mu is held.
func (k *killer) kill() {
	if k.proc != nil && k.proc.Signal(syscall.SIGKILL) == nil {
		k.kills++
		k.proc = nil
	}
}

// TestKillAtScale kills the real binary again and again — in new sessions
// and resumes, during start-up, mid-turn, in compactions, while subagents
// and parallel tool calls run — and checks after every kill that every
// transcript loads, every acknowledged prompt is on disk, and every
// tool_use of every session has its result.
func TestKillAtScale(t *testing.T) {
	kills := killCount(t)
	p := newProject(t)
	k := &killer{rng: rand.New(rand.NewPCG(20261201, 11)), acked: map[string]bool{}, seen: map[string]int{}}
	p.srv = modeltest.Start(t, modeltest.Config{Respond: k.respond})
	p.env = []string{"CAIRN_CONTEXT_WINDOW=40000", "CAIRN_DISABLE_AUTO_MEMORY=1"}
	start := time.Now()
	seen := checked{}
	runs := 0
	for ; ; runs++ {
		k.mu.Lock()
		done := k.kills >= kills
		k.mu.Unlock()
		if done {
			break
		}
		if runs > 6*kills {
			t.Fatalf("only %d kills in %d runs", k.kills, runs)
		}
		args := []string{"-c", "-p"}
		if runs == 0 || k.rng.IntN(5) == 0 {
			args = []string{"-p"} // a new session
		}
		args = append(args, fmt.Sprintf("kill-run-%d look at hello.py", runs), "--output-format", "stream-json", "--verbose", "--permission-mode", "bypassPermissions")
		cmd := exec.Command(binary, args...)
		cmd.Dir = p.dir
		cmd.Env = append([]string{"CAIRN_HOME=" + p.home, "ANTHROPIC_BASE_URL=" + p.srv.URL, "ANTHROPIC_API_KEY=test-key", "HOME=" + p.home, "PATH=" + os.Getenv("PATH")}, p.env...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		k.mu.Lock()
		k.proc = cmd.Process
		if k.rng.IntN(6) == 0 { // during start-up or the resume's read
			proc, d := cmd.Process, time.Duration(k.rng.IntN(60))*time.Millisecond
			time.AfterFunc(d, func() {
				k.mu.Lock()
				defer k.mu.Unlock()
				if k.proc == proc {
					k.kill()
				}
			})
		}
		k.mu.Unlock()
		err := cmd.Wait()
		k.mu.Lock()
		killed := k.proc == nil
		k.proc = nil
		k.mu.Unlock()
		if !killed && err != nil {
			t.Fatalf("run %d (%v) failed without being killed: %v\n%s", runs, args[:2], err, errb.String())
		}
		if killed {
			awaitLocks(t, p)
		}
		checkKilledHome(t, p, k, seen, runs)
	}
	t.Logf("%d kills in %d runs (%v); requests: %v; %d prompts acknowledged", k.kills, runs, time.Since(start).Round(time.Millisecond), k.seen, len(k.acked))
	if k.seen["summary"] == 0 || k.seen["subagent"] == 0 {
		t.Errorf("the runs made no compaction or no subagent (requests %v): the kills did not reach them", k.seen)
	}
}

// awaitLocks returns once no process holds the lock of a session
// transcript of p. A run killed while it was starting a command (a Bash
// call) has exited, but the child it was forking holds a copy of the
// transcript's lock descriptor until its exec closes it: the next run,
// started at once, would find the session locked. A person never starts
// the next run within that millisecond; the test waits for the lock
// instead.
func awaitLocks(t *testing.T, p *project) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(session.Home{Dir: p.home}.ProjectDir(p.dir), "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		l := flock.New(path)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ok, err := l.TryLockContext(ctx, 5*time.Millisecond)
		cancel()
		if err != nil || !ok {
			t.Fatalf("%s is still locked 10 s after its run was killed: %v", path, err)
		}
		l.Close()
	}
}

// checked remembers the transcripts checked, by path, with their size and
// time then: an unchanged file is not loaded again.
type checked map[string]checkedFile

type checkedFile struct {
	size    int64
	mod     time.Time
	prompts []string // the runs' prompts in a session's file
}

// runPrompt finds the runs' prompts as a transcript stores them.
var runPrompt = regexp.MustCompile(`"(kill-run-[0-9]+) look at hello\.py`)

// checkKilledHome checks every transcript the runs left.
func checkKilledHome(t *testing.T, p *project, k *killer, seen checked, run int) {
	t.Helper()
	stored := map[string]bool{}
	err := filepath.WalkDir(session.Home{Dir: p.home}.ProjectDir(p.dir), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if c, ok := seen[path]; ok && c.size == info.Size() && c.mod.Equal(info.ModTime()) {
			for _, pr := range c.prompts {
				stored[pr] = true
			}
			return nil
		}
		seen[path] = checkedFile{size: info.Size(), mod: info.ModTime()}
		src, err := transcript.OpenFile(path)
		if err != nil {
			return err
		}
		defer src.Close()
		conv, err := transcript.Load(context.Background(), src, transcript.LoadOptions{})
		if err != nil {
			return fmt.Errorf("run %d: %s does not load: %w", run, path, err)
		}
		if !strings.Contains(path, string(filepath.Separator)+"subagents"+string(filepath.Separator)) {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			c := checkedFile{size: info.Size(), mod: info.ModTime()}
			for _, m := range runPrompt.FindAllSubmatch(data, -1) {
				c.prompts = append(c.prompts, string(m[1]))
				stored[string(m[1])] = true
			}
			seen[path] = c
			unanswered(t, conv)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for prompt := range k.acked {
		if !stored[prompt] {
			t.Fatalf("run %d: the acknowledged prompt %s is in no transcript", run, prompt)
		}
	}
}
