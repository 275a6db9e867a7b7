package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/cairn-dev/cairn/internal/sandbox"
	"github.com/cairn-dev/cairn/internal/shellsafe"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// Defaults of Bash.
const (
	BashDefaultTimeout = 2 * time.Minute
	BashMaxTimeout     = 10 * time.Minute
	// BashKillGrace is how long a command has to exit after SIGTERM before
	// its process group gets SIGKILL.
	BashKillGrace = 3 * time.Second
	// BashMaxOutput is how many bytes of output a call keeps; from a
	// longer output the start (two thirds) and the end (one third) are
	// kept and the middle is cut. It bounds memory: what the model sees
	// inline is decided later, by the session's large-result layer
	// (internal/compact), which keeps 30,000 characters inline and saves
	// the rest to a file the model can read.
	BashMaxOutput = 1 << 20
)

// bashDrain is how long output is still collected after the shell exits,
// from processes it left running in the background that hold its output.
const bashDrain = 100 * time.Millisecond

// Bash runs a shell command with bash -c in the working directory.
//
// The command runs in its own process group; on timeout or when ctx is
// cancelled the whole group gets SIGTERM, then SIGKILL after KillGrace.
// Output (stdout and stderr interleaved, as a terminal shows them) is
// capped. A cd carries over to the next call while it stays inside
// env.ProjectDir; leaving the project resets the working directory to it.
//
// With run_in_background the command is started and left running in its
// own process group, not tied to ctx: its output goes to
// <SessionDir>/shells/<id>.log (the system's temporary folder when there
// is no SessionDir) and its exit code, when it ends, to <id>.exit. The
// model reads those files to follow it and kills the group to stop it.
//
// The zero value uses the defaults above.
type Bash struct {
	DefaultTimeout time.Duration
	MaxTimeout     time.Duration
	KillGrace      time.Duration
	MaxOutput      int
	// Sandbox, when active, runs every command under it (SPEC G6) but
	// those of its excluded commands and those the model asks to run
	// outside it (dangerouslyDisableSandbox, which the permission check
	// makes ask the person).
	Sandbox *sandbox.Sandbox
}

var bashSchema = schema(`{
	"type": "object",
	"properties": {
		"command": {"type": "string", "description": "The command to run"},
		"timeout": {"type": "number", "description": "Time limit in milliseconds (at most 600000; 120000 when left out)"},
		"description": {"type": "string", "description": "What the command does, in 5–10 words, in the active voice (\"List files in the current folder\")"},
		"run_in_background": {"type": "boolean", "description": "Start the command and return at once; its output goes to a file you can read later"}
	},
	"required": ["command"],
	"additionalProperties": false
}`)

// bashSandboxSchema is bashSchema with the parameter that runs a command
// outside the sandbox.
var bashSandboxSchema = schema(strings.Replace(string(bashSchema), `"run_in_background": {`,
	`"dangerouslyDisableSandbox": {"type": "boolean", "description": "Run the command outside the sandbox; only after it failed because of the sandbox. The person is asked first."},
		"run_in_background": {`, 1))

// Spec describes Bash to the model.
func (b Bash) Spec() model.ToolSpec {
	spec := b.spec()
	if b.Sandbox.Active() {
		spec.InputSchema = bashSandboxSchema
		spec.Description += "\n- Commands run in " + b.Sandbox.Describe() + ". When a command fails because of that (a read-only file system, a missing network), say so, and run it again with dangerouslyDisableSandbox: true only if it must run outside: the person is asked first."
	}
	return spec
}

func (Bash) spec() model.ToolSpec {
	return model.ToolSpec{
		Name: "Bash",
		Description: `Runs a command with bash and returns its output (stdout and stderr together) and exit code.

- The working directory carries over between calls: after "cd sub", the next command runs in sub. It must stay inside the project; a cd outside it is undone after the command. Prefer absolute paths over cd.
- Quote paths that contain spaces: cd "/path/with spaces".
- Commands time out after 2 minutes unless you give timeout (in milliseconds, at most 10 minutes); a command that times out is stopped together with everything it started.
- Output beyond 30,000 characters is saved to a file: you get its start and the file's path, which you can Read or Grep. Pipe long output through head, tail or grep when you only need part of it.
- There is no terminal and no input: commands must not wait for a person (pass -y and the like; no editors, pagers or interactive git commands such as rebase -i).
- For long-running programs (servers, watchers), set run_in_background; you get an output file to read later and a process group to kill. Do not add "&" yourself.
- Use the dedicated tools instead of shell equivalents: Glob rather than find or ls to find files, Grep rather than grep or rg to search contents, Read rather than cat, head or tail to read files, Edit and Write rather than sed, awk or echo redirections to change files.
- Chain dependent commands with && ; independent commands may run as parallel Bash calls.
- Give a short description of what the command does.
- Git: never change git config, never force-push or rewrite published history, never skip hooks, and do not commit or push unless asked.`,
		InputSchema: bashSchema,
	}
}

// command returns the command of an input, if it decodes.
func bashCommand(input json.RawMessage) (string, bool) {
	var in struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(input, &in) != nil {
		return "", false
	}
	return in.Command, true
}

// ReadOnly reports whether every command of the line only reads, as
// internal/shellsafe judges it after parsing the line — the same judgement
// `cairn permissions check` uses.
func (Bash) ReadOnly(input json.RawMessage) bool {
	cmd, ok := bashCommand(input)
	return ok && shellsafe.Classify(cmd).ReadOnly
}

// Destructive reports whether the command line may destroy work (see
// internal/shellsafe). An input that does not decode is not: Run refuses
// it without running anything.
func (Bash) Destructive(input json.RawMessage) bool {
	cmd, ok := bashCommand(input)
	return ok && shellsafe.Classify(cmd).Destructive
}

// ConcurrencySafe reports the same as ReadOnly.
func (b Bash) ConcurrencySafe(input json.RawMessage) bool { return b.ReadOnly(input) }

// bashDetail is Bash's toolUseResult.
type bashDetail struct {
	Stdout           string `json:"stdout"`
	Stderr           string `json:"stderr"`
	Interrupted      bool   `json:"interrupted"`
	IsImage          bool   `json:"isImage"`
	NoOutputExpected bool   `json:"noOutputExpected"`
	BackgroundTaskID string `json:"backgroundTaskId,omitempty"`
}

// Run runs the command.
func (b Bash) Run(ctx context.Context, env *tool.Env, input json.RawMessage) (tool.Result, error) {
	known := []string{"command", "timeout", "description", "run_in_background"}
	if b.Sandbox.Active() {
		known = append(known, "dangerouslyDisableSandbox")
	}
	a := parseArgs("Bash", input, known...)
	command := a.str("command", true)
	timeoutMs, hasTimeout := a.int("timeout")
	a.str("description", false)
	background := a.bool("run_in_background")
	sandboxed := b.Sandbox.Active() && !a.bool("dangerouslyDisableSandbox") && !b.Sandbox.Excluded(command)
	switch {
	case a.err != nil:
	case strings.TrimSpace(command) == "":
		a.err = errors.New(`parameter "command" is empty`)
	case hasTimeout && timeoutMs <= 0:
		a.err = errors.New(`parameter "timeout" must be a positive number of milliseconds`)
	}
	if a.err != nil {
		return a.invalid(), nil
	}
	timeout := orDefault(b.DefaultTimeout, BashDefaultTimeout)
	if hasTimeout {
		timeout = min(time.Duration(timeoutMs)*time.Millisecond, orDefault(b.MaxTimeout, BashMaxTimeout))
	}

	var notes []string
	dir := env.Cwd()
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		notes = append(notes, fmt.Sprintf("The working directory %s no longer exists; the command ran in %s.", dir, env.ProjectDir))
		dir = env.ProjectDir
		env.SetCwd(dir)
	}
	if background {
		return b.runBackground(env, dir, command, sandboxed)
	}
	return b.run(ctx, env, dir, command, timeout, notes, sandboxed)
}

// command makes the process that runs a line: bash -c, under the sandbox
// when sandboxed. Its messages start "bash: line 1:" either way.
func (b Bash) command(dir, line string, sandboxed bool) (*exec.Cmd, error) {
	env := append(os.Environ(), "GIT_EDITOR=true", "GIT_TERMINAL_PROMPT=0")
	if sandboxed {
		return b.Sandbox.Command(dir, env, "bash", "-c", line)
	}
	cmd := exec.Command(bashPath(), "-c", line)
	cmd.Args[0] = "bash"
	cmd.Dir = dir
	cmd.Env = env
	return cmd, nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// cwdTrap makes the shell write its final working directory to fd 3 as it
// exits. It is on the command's own line, so bash's "line N" messages
// keep the user's numbering.
const cwdTrap = `trap 'pwd -P >&3 2>/dev/null' EXIT; `

// run runs a command in the foreground.
func (b Bash) run(ctx context.Context, env *tool.Env, dir, command string, timeout time.Duration, notes []string, sandboxed bool) (tool.Result, error) {
	if err := ctx.Err(); err != nil {
		return tool.Result{}, err
	}
	cwdFile, err := os.CreateTemp("", "cairn-cwd-*")
	if err != nil {
		return tool.Result{}, err
	}
	defer os.Remove(cwdFile.Name())
	defer cwdFile.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return tool.Result{}, err
	}
	defer pr.Close()

	denials := b.Sandbox.Denials()
	cmd, err := b.command(dir, cwdTrap+command, sandboxed)
	if err != nil {
		pw.Close()
		return failf("Cannot start the sandbox: %v. Run the command again with dangerouslyDisableSandbox: true (the person is asked first), or fix the sandbox settings.", err), nil
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.ExtraFiles = []*os.File{cwdFile}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	pw.Close()
	if err != nil {
		return failf("Cannot start bash: %v", err), nil
	}

	out := &headTail{max: orDefault(b.MaxOutput, BashMaxOutput)}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		buf := make([]byte, 32<<10)
		for {
			n, err := pr.Read(buf)
			out.write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	waitDone := make(chan error, 1)
	go func() { waitDone <- cmd.Wait() }()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var interrupted string
	select {
	case err = <-waitDone:
	case <-timer.C:
		interrupted = fmt.Sprintf("Command timed out after %s; it and every process it started were stopped.", timeout)
		err = b.killGroup(cmd.Process.Pid, waitDone)
	case <-ctx.Done():
		interrupted = "Command was interrupted; it and every process it started were stopped."
		err = b.killGroup(cmd.Process.Pid, waitDone)
	}
	// Processes left in the background may hold the output open: collect
	// what they wrote by now, then stop listening.
	_ = pr.SetReadDeadline(time.Now().Add(bashDrain))
	<-readDone

	exitCode := 0
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		exitCode = exitErr.ExitCode()
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			exitCode = 128 + int(ws.Signal())
		}
	default:
		return tool.Result{}, err
	}

	if note := trackCwd(env, cwdFile); note != "" {
		notes = append(notes, note)
	}
	if interrupted != "" {
		notes = append(notes, interrupted)
	}
	output := trimOutput(strings.ToValidUTF8(out.String(), "\uFFFD"))
	if hosts := b.Sandbox.DeniedSince(denials); sandboxed && len(hosts) > 0 {
		notes = append(notes, "The sandbox's network proxy refused "+strings.Join(hosts, ", ")+": not in the setting sandbox.network.allowedDomains. If the command needs it, ask the person to add it there, or run the command again with dangerouslyDisableSandbox: true: the person is asked first.")
	} else if sandboxed && exitCode != 0 && interrupted == "" && b.Sandbox.Blocked(output) {
		notes = append(notes, "The command ran in "+b.Sandbox.Describe()+"; it may have failed because of that. If it must run outside the sandbox, run it again with dangerouslyDisableSandbox: true: the person is asked first.")
	}
	detail := bashDetail{Stdout: output, Stderr: strings.Join(notes, "\n")}
	text := output
	if exitCode != 0 && interrupted == "" {
		text = strings.TrimRight("Exit code "+strconv.Itoa(exitCode)+"\n"+text, "\n")
	}
	if len(notes) > 0 {
		text = strings.TrimLeft(text+"\n"+detail.Stderr, "\n")
	}
	if text == "" {
		text = "(no output)"
	}
	r := tool.Text(text)
	r.IsError = exitCode != 0 || interrupted != ""
	detail.Interrupted = interrupted != ""
	r.Detail = detail
	return r, nil
}

// killGroup stops process group pgid: SIGTERM, then SIGKILL once the
// leader has exited or KillGrace has passed (whichever comes first), so no
// child outlives the call. It returns the leader's wait error.
func (b Bash) killGroup(pgid int, waitDone <-chan error) error {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	grace := time.NewTimer(orDefault(b.KillGrace, BashKillGrace))
	defer grace.Stop()
	var err error
	select {
	case err = <-waitDone:
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	case <-grace.C:
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		err = <-waitDone
	}
	return err
}

// trackCwd carries the shell's final working directory over to env, and
// returns a note for the model when it had to be reset.
func trackCwd(env *tool.Env, f *os.File) string {
	data, err := os.ReadFile(f.Name())
	if err != nil {
		return ""
	}
	dir := strings.TrimRight(string(data), "\n")
	if i := strings.LastIndexByte(dir, '\n'); i >= 0 {
		dir = dir[i+1:]
	}
	if dir == "" || !filepath.IsAbs(dir) {
		return ""
	}
	if env.ProjectDir == "" {
		env.SetCwd(dir)
		return ""
	}
	// pwd -P resolved symbolic links: compare with the resolved project,
	// and keep the project's own spelling.
	project := env.ProjectDir
	if resolved, err := filepath.EvalSymlinks(project); err == nil {
		project = resolved
	}
	rel, err := filepath.Rel(project, dir)
	if err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		env.SetCwd(filepath.Join(env.ProjectDir, rel))
		return ""
	}
	env.SetCwd(env.ProjectDir)
	return "Shell cwd was reset to " + env.ProjectDir
}

// trimOutput drops blank lines at the start and white space at the end.
func trimOutput(s string) string {
	s = strings.TrimRight(s, " \t\r\n")
	for {
		line, rest, ok := strings.Cut(s, "\n")
		if !ok || strings.TrimSpace(line) != "" {
			return s
		}
		s = rest
	}
}

// bashPath returns the bash to run.
func bashPath() string {
	if p, err := exec.LookPath("bash"); err == nil {
		return p
	}
	return "/bin/bash"
}

// headTail keeps the first two thirds and the last third of max bytes of
// what is written to it, and counts the rest.
type headTail struct {
	max   int
	head  []byte
	tail  []byte
	total int
}

func (h *headTail) write(p []byte) {
	h.total += len(p)
	headMax := h.max * 2 / 3
	if n := min(len(p), headMax-len(h.head)); n > 0 {
		h.head = append(h.head, p[:n]...)
		p = p[n:]
	}
	if len(p) == 0 {
		return
	}
	tailMax := h.max - headMax
	h.tail = append(h.tail, p...)
	if len(h.tail) > 2*tailMax {
		h.tail = append(h.tail[:0], h.tail[len(h.tail)-tailMax:]...)
	}
}

// String returns the output, with a note where the middle was cut.
func (h *headTail) String() string {
	if h.total <= h.max {
		return string(h.head) + string(h.tail)
	}
	tail := h.tail[len(h.tail)-(h.max-len(h.head)):]
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	head := h.head
	for i := len(head) - 1; i >= 0 && i >= len(head)-utf8.UTFMax; i-- {
		if utf8.RuneStart(head[i]) {
			if !utf8.FullRune(head[i:]) {
				head = head[:i]
			}
			break
		}
	}
	cut := h.total - len(head) - len(tail)
	return fmt.Sprintf("%s\n\n... [%d bytes of output cut] ...\n\n%s", head, cut, tail)
}

// runBackground starts a command and returns at once.
func (b Bash) runBackground(env *tool.Env, dir, command string, sandboxed bool) (tool.Result, error) {
	base := env.SessionDir
	if base == "" {
		base = os.TempDir()
	}
	shells := filepath.Join(base, "shells")
	if err := os.MkdirAll(shells, 0o755); err != nil {
		return failf("Cannot create %s for the output: %v", shells, err), nil
	}
	logFile, err := os.CreateTemp(shells, "bash-*.log")
	if err != nil {
		return failf("Cannot create the output file: %v", err), nil
	}
	defer logFile.Close()
	id := strings.TrimSuffix(filepath.Base(logFile.Name()), ".log")
	cmd, err := b.command(dir, command, sandboxed)
	if err != nil {
		return failf("Cannot start the sandbox: %v. Run the command again with dangerouslyDisableSandbox: true (the person is asked first), or fix the sandbox settings.", err), nil
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return failf("Cannot start bash: %v", err), nil
	}
	exitPath := filepath.Join(shells, id+".exit")
	go func() {
		code := 0
		if err := cmd.Wait(); err != nil {
			code = -1
			var exitErr *exec.ExitError
			if errors.As(err, &exitErr) {
				code = exitErr.ExitCode()
			}
		}
		_ = os.WriteFile(exitPath, []byte(strconv.Itoa(code)+"\n"), 0o644)
	}()
	pgid := cmd.Process.Pid
	r := tool.Text(fmt.Sprintf("Command running in background with ID: %s (process group %d).\nOutput is being written to %s; when the command ends, its exit code is written to %s.\nRead those files to follow it; stop it with: kill -- -%d",
		id, pgid, logFile.Name(), exitPath, pgid))
	r.Detail = bashDetail{BackgroundTaskID: id}
	return r, nil
}

// Summary implements tool.Summarizer: the command, on one line.
func (Bash) Summary(input json.RawMessage, _ func(string) string) string {
	cmd := strings.TrimSpace(stringArgs(input, "command")[0])
	if first, _, more := strings.Cut(cmd, "\n"); more {
		return first + " …"
	}
	return cmd
}

// Reobtainable implements tool.Reobtainable: the command can be run again.
func (Bash) Reobtainable() bool { return true }

// ResultLimit implements tool.ResultLimiter: Bash's output is capped near
// 30,000 characters anyway (Claude Code's limit for it).
func (Bash) ResultLimit() int { return 30_000 }
