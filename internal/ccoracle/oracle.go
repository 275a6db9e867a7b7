// Package ccoracle runs the real Claude Code CLI, pinned at one version, as
// a black box: headless, in a scratch home, against cairn's fake Anthropic
// server (model/modeltest). It returns what the program printed, the
// requests it sent (the server records them) and the transcripts it wrote,
// so tests can hold cairn's reading and writing of those files against the
// program that defines them. Nothing of Claude Code is read or reused: it is
// run, and its files and requests are observed.
//
// The binary is found through $CAIRN_CLAUDE_BIN, else
// /opt/ccoracle/node_modules/.bin/claude, else `claude` on PATH. Tests that
// need it call Require, which skips them (naming what is missing) when the
// binary is absent or of another version, and fails them instead when
// $CI is "true": CI installs the binary, so its absence there is a defect.
package ccoracle

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Version is the Claude Code version the oracle is pinned at.
const Version = "2.1.332"

// DefaultPath is where the project's machines keep the pinned binary.
const DefaultPath = "/opt/ccoracle/node_modules/.bin/claude"

// EnvBinary names the environment variable that points at the binary.
const EnvBinary = "CAIRN_CLAUDE_BIN"

// Oracle is a located Claude Code binary of the pinned version.
type Oracle struct {
	// Path is the binary.
	Path string
}

// Find locates the binary and checks its version. The error says what was
// looked for and how to install the right one.
func Find() (*Oracle, error) {
	path, err := locate()
	if err != nil {
		return nil, err
	}
	got, err := versionOf(path)
	if err != nil {
		return nil, err
	}
	if got != Version {
		return nil, fmt.Errorf("Claude Code at %s is version %s; the oracle needs %s (npm install @anthropic-ai/claude-code@%s, then set %s to its node_modules/.bin/claude)", path, got, Version, Version, EnvBinary)
	}
	return &Oracle{Path: path}, nil
}

func locate() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %v; point it at an installed Claude Code %s (npm install @anthropic-ai/claude-code@%s)", EnvBinary, p, err, Version, Version)
		}
		return p, nil
	}
	if _, err := os.Stat(DefaultPath); err == nil {
		return DefaultPath, nil
	}
	if p, err := exec.LookPath("claude"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("no Claude Code binary: %s is unset, %s does not exist and no claude is on PATH; install it with npm install @anthropic-ai/claude-code@%s and set %s to its node_modules/.bin/claude", EnvBinary, DefaultPath, Version, EnvBinary)
}

// versionOf runs `path --version` and returns the version it names.
func versionOf(path string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	home, err := os.MkdirTemp("", "ccoracle-home")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(home)
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Env = append(baseEnv(home), "ANTHROPIC_API_KEY=x")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v; reinstall Claude Code %s", path, err, Version)
	}
	f := strings.Fields(string(out))
	if len(f) == 0 {
		return "", fmt.Errorf("%s --version printed nothing; reinstall Claude Code %s", path, Version)
	}
	return f[0], nil
}

// Require returns the oracle, or ends the test: skipped with the reason
// when the binary is missing or of another version, failed when $CI is
// "true" (CI must run the oracle tests, never pass them silently).
func Require(tb testing.TB) *Oracle {
	tb.Helper()
	o, err := cached()
	if err == nil {
		return o
	}
	if os.Getenv("CI") == "true" {
		tb.Fatalf("Claude Code oracle unavailable in CI: %v", err)
	}
	tb.Skipf("Claude Code oracle unavailable: %v", err)
	return nil
}

var found struct {
	done bool
	o    *Oracle
	err  error
}

func cached() (*Oracle, error) {
	if !found.done {
		found.o, found.err = Find()
		found.done = true
	}
	return found.o, found.err
}

// baseEnv is the environment every run gets: a scratch home and the
// switches that keep Claude Code offline and quiet.
func baseEnv(home string) []string {
	env := []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"),
		"IS_SANDBOX=1",
		"DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"TERM=dumb",
	}
	for _, k := range []string{"TMPDIR", "LANG"} {
		if v := os.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// maxEventLine is the longest line of output Run reads; a variable so a
// test can make it small.
var maxEventLine = 64 << 20

// Run describes one headless run of Claude Code.
type Run struct {
	// Home is the scratch HOME; the transcripts go under Home/.claude.
	Home string
	// Dir is the working directory (the project).
	Dir string
	// BaseURL is the fake server's URL.
	BaseURL string
	// Prompt is the -p prompt.
	Prompt string
	// Args are more arguments, e.g. "--resume", id.
	Args []string
	// Env adds to the environment (KEY=VALUE).
	Env []string
	// Timeout bounds the run; 0 means two minutes.
	Timeout time.Duration
	// KillWhen, when set, is called with each stream-json event as it is
	// printed; when it returns true the process is killed with SIGKILL,
	// as a crash would end it.
	KillWhen func(Event) bool
	// KillWhenExists, when set, kills the process with SIGKILL as soon as
	// this file exists (e.g. one a scripted Bash command creates before it
	// sleeps): a crash in the middle of a tool call.
	KillWhenExists string
}

// Event is one line of stream-json output.
type Event struct {
	Type    string          `json:"type"`
	Subtype string          `json:"subtype"`
	Session string          `json:"session_id"`
	Raw     json.RawMessage `json:"-"`
}

// Result is what a run left behind.
type Result struct {
	Stdout, Stderr string
	// ExitCode is the process's exit status; -1 when it was killed.
	ExitCode int
	// Events are the stream-json lines of stdout, in order.
	Events []Event
	// SessionID is the session the run worked in (from its events).
	SessionID string
	// Killed reports that KillWhen or KillWhenExists ended the process.
	Killed bool
}

// Run runs Claude Code headless: -p PROMPT --output-format stream-json
// --verbose --dangerously-skip-permissions, plus r.Args. A non-zero exit
// is not an error (the caller decides); failing to start or a timeout is.
func (o *Oracle) Run(ctx context.Context, r Run) (*Result, error) {
	if r.Home == "" || r.Dir == "" || r.BaseURL == "" {
		return nil, errors.New("ccoracle: Run needs Home, Dir and BaseURL")
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := append([]string{"-p", r.Prompt, "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"}, r.Args...)
	cmd := exec.CommandContext(ctx, o.Path, args...)
	cmd.Dir = r.Dir
	cmd.Env = append(baseEnv(r.Home), "ANTHROPIC_BASE_URL="+r.BaseURL, "ANTHROPIC_API_KEY=oracle-key")
	cmd.Env = append(cmd.Env, r.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", o.Path, err)
	}
	res := &Result{}
	var killed atomic.Bool
	if r.KillWhenExists != "" {
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			t := time.NewTicker(20 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					if _, err := os.Stat(r.KillWhenExists); err == nil {
						killed.Store(true)
						_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
						return
					}
				}
			}
		}()
	}
	var out bytes.Buffer
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, min(1<<20, maxEventLine)), maxEventLine)
	for sc.Scan() {
		line := sc.Bytes()
		out.Write(line)
		out.WriteByte('\n')
		var ev Event
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		ev.Raw = append(json.RawMessage(nil), line...)
		res.Events = append(res.Events, ev)
		if res.SessionID == "" && ev.Session != "" {
			res.SessionID = ev.Session
		}
		if r.KillWhen != nil && !res.Killed && r.KillWhen(ev) {
			res.Killed = true
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	if scanErr := sc.Err(); scanErr != nil {
		// Reading stopped before the output ended: the program would block
		// on a full pipe, so it is stopped, and the run is a failure.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		res.Stdout, res.Stderr = out.String(), stderr.String()
		return res, fmt.Errorf("claude %s: reading its output after %d events: %v (a line over %d bytes ends the reading; raise ccoracle's maxEventLine if Claude Code's events grew that large)", strings.Join(args, " "), len(res.Events), scanErr, maxEventLine)
	}
	err = cmd.Wait()
	if killed.Load() {
		res.Killed = true
	}
	res.Stdout, res.Stderr = out.String(), stderr.String()
	if ctx.Err() != nil {
		return res, fmt.Errorf("claude %s: no end within %v (stderr: %s)", strings.Join(args, " "), timeout, tail(res.Stderr))
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
	default:
		return res, err
	}
	return res, nil
}

func tail(s string) string {
	if len(s) > 2000 {
		return "…" + s[len(s)-2000:]
	}
	return s
}

// Transcripts returns the transcripts under home/.claude/projects, keyed by
// their path relative to that folder, e.g. "-tmp-x/<id>.jsonl" or
// "-tmp-x/<id>/subagents/agent-<a>.jsonl".
func Transcripts(home string) (map[string][]byte, error) {
	root := filepath.Join(home, ".claude", "projects")
	out := make(map[string][]byte)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = b
		return nil
	})
	return out, err
}

// TranscriptPath returns the path of session id's transcript under home,
// whatever project folder it is in.
func TranscriptPath(home, id string) (string, error) {
	matches, err := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", id+".jsonl"))
	if err != nil {
		return "", err
	}
	if len(matches) != 1 {
		sort.Strings(matches)
		return "", fmt.Errorf("session %s: %d transcripts under %s (%v)", id, len(matches), home, matches)
	}
	return matches[0], nil
}

// AttachedTexts returns the texts that the attachment lines of a piece of
// transcript record as sent (rendered), in order: what a turn attached to
// its prompt.
func AttachedTexts(lines []byte) []string {
	var out []string
	for line := range bytes.Lines(lines) {
		var e struct {
			Type     string `json:"type"`
			Rendered []struct {
				Content json.RawMessage `json:"content"`
			} `json:"rendered"`
		}
		if json.Unmarshal(line, &e) != nil || e.Type != "attachment" {
			continue
		}
		for _, r := range e.Rendered {
			var s string
			if json.Unmarshal(r.Content, &s) == nil {
				out = append(out, s)
				continue
			}
			var blocks []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if json.Unmarshal(r.Content, &blocks) == nil {
				for _, b := range blocks {
					if b.Type == "text" {
						out = append(out, b.Text)
					}
				}
			}
		}
	}
	return out
}
