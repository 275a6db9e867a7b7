package hook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Defaults of the runner.
const (
	// DefaultTimeout is how long a hook without its own timeout may run.
	DefaultTimeout = 60 * time.Second
	// maxOutput caps what is kept of a hook's stdout and of its stderr.
	maxOutput = 1 << 20
	// pipeGrace is how long a hook's output is still read after the hook
	// has exited or been killed, for processes it left behind that hold
	// the output open.
	pipeGrace = time.Second
)

// ErrTimeout is the cause of a hook killed at its timeout.
var ErrTimeout = errors.New("the hook ran past its timeout")

// Options are how a Runner runs hooks.
type Options struct {
	// ProjectDir is the folder hooks run in; CLAUDE_PROJECT_DIR and
	// CAIRN_PROJECT_DIR name it in their environment.
	ProjectDir string
	// Env is the environment hooks start from; nil is this process's.
	Env []string
	// Session says what every hook input carries about the session; it
	// is called for each event, so it may change (a new permission mode).
	// Nil leaves those fields empty.
	Session func() Session
	// Timeout applies to hooks without their own; 0 is DefaultTimeout.
	Timeout time.Duration
	// Shell runs each command as Shell -c COMMAND; "" is "sh".
	Shell string
}

// Session is what every hook input says about the session.
type Session struct {
	ID             string
	TranscriptPath string
	Cwd            string
	PermissionMode string
}

// Runner runs the hooks of a Config. It is safe for concurrent use.
type Runner struct {
	cfg  *Config
	opts Options
}

// NewRunner returns a runner for cfg (nil runs nothing).
func NewRunner(cfg *Config, opts Options) *Runner {
	if cfg == nil {
		cfg = &Config{}
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Shell == "" {
		opts.Shell = "sh"
	}
	return &Runner{cfg: cfg, opts: opts}
}

// Config returns the hooks the runner runs.
func (r *Runner) Config() *Config { return r.cfg }

// Result is what one hook did.
type Result struct {
	Command Command
	// Exit is the command's exit code; -1 when it did not exit by itself
	// (Err says why).
	Exit           int
	Stdout, Stderr string
	// Output is Stdout decoded, when the hook exited 0 and Stdout is a
	// JSON object of Claude Code's hook output shape; nil otherwise (the
	// output is plain text).
	Output *Output
	// Err is set when the hook did not run to its end: it could not
	// start, it was killed at its timeout (errors.Is ErrTimeout), or ctx
	// was cancelled.
	Err      error
	Duration time.Duration
}

// Run runs every hook of event that matches query, all at once, each
// given input on stdin, and returns their results in settings order once
// every one has exited or been killed. A hook that outlives its timeout
// is killed with every process it started (its process group) and
// reported with ErrTimeout; cancelling ctx kills the hooks still running.
// Run never fails: what went wrong is in the results.
func (r *Runner) Run(ctx context.Context, event Event, query string, input []byte) []Result {
	cmds := r.cfg.Commands(event, query)
	if len(cmds) == 0 {
		return nil
	}
	results := make([]Result, len(cmds))
	var wg sync.WaitGroup
	for i, c := range cmds {
		wg.Go(func() { results[i] = r.exec(ctx, c, input) })
	}
	wg.Wait()
	return results
}

// has reports whether any hook of event matches query.
func (r *Runner) has(event Event, query string) bool {
	return len(r.cfg.Commands(event, query)) > 0
}

// exec runs one hook to its end, its timeout, or ctx's cancellation.
func (r *Runner) exec(ctx context.Context, c Command, input []byte) Result {
	res := Result{Command: c, Exit: -1}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = r.opts.Timeout
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, ErrTimeout)
	defer cancel()

	cmd := exec.CommandContext(ctx, r.opts.Shell, "-c", c.Command)
	cmd.Dir = r.opts.ProjectDir
	cmd.Env = r.environ()
	cmd.Stdin = bytes.NewReader(input)
	stdout, stderr := &capped{max: maxOutput}, &capped{max: maxOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Its own process group, so that a timeout stops everything it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = pipeGrace

	start := time.Now()
	err := cmd.Run()
	res.Duration = time.Since(start)
	res.Stdout, res.Stderr = stdout.String(), stderr.String()
	if cmd.ProcessState != nil && cmd.ProcessState.Exited() {
		res.Exit = cmd.ProcessState.ExitCode()
	}
	switch {
	case ctx.Err() != nil && res.Exit < 0:
		res.Err = context.Cause(ctx)
		if errors.Is(res.Err, ErrTimeout) {
			res.Err = fmt.Errorf("%w (%s); it was stopped with every process it started", ErrTimeout, timeout)
		}
	case cmd.ProcessState == nil:
		res.Err = fmt.Errorf("could not start: %w", err)
	case res.Exit < 0:
		res.Err = fmt.Errorf("ended by %v", cmd.ProcessState)
	}
	if res.Exit == 0 {
		res.Output = parseOutput(res.Stdout)
	}
	return res
}

// environ is a hook's environment: the base one with the project named.
func (r *Runner) environ() []string {
	env := r.opts.Env
	if env == nil {
		env = os.Environ()
	}
	env = append(env[:len(env):len(env)],
		"CLAUDE_PROJECT_DIR="+r.opts.ProjectDir,
		"CAIRN_PROJECT_DIR="+r.opts.ProjectDir,
	)
	return env
}

// capped keeps the first max bytes written to it and drops the rest,
// without failing the writer (a hook is not killed for talking too much).
type capped struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}
