// Package cli is cairn's command line: one file per command, each a cobra
// command built from an Env so tests run it in-process with their own
// streams, clock and environment.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/session"
)

// Env is what a command may touch of the outside world.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	Now            func() time.Time
	// Cwd is the working directory; the project is derived from it.
	Cwd string
}

// OSEnv is the process's real environment.
func OSEnv() Env {
	cwd, _ := os.Getwd()
	return Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Now: time.Now, Cwd: cwd}
}

// Home returns the cairn home folder from CAIRN_HOME, else ~/.cairn.
func (e Env) Home() (session.Home, error) {
	if e.Getenv != nil {
		if d := e.Getenv("CAIRN_HOME"); d != "" {
			return session.Home{Dir: d}, nil
		}
	}
	return session.DefaultHome()
}

// usageError marks a command-line mistake (exit code 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// Run executes the command line args and returns the exit code: 0 on
// success, 1 on failure, 2 on bad usage.
func Run(ctx context.Context, args []string, env Env) int {
	format := ""
	if agentLine(newRoot(env), args) {
		format = outputFormat(args)
	}
	out := &watchedWriter{w: env.Stdout}
	if format == "json" || format == "stream-json" {
		env.Stdout = out // (these formats are headless: stdout need not be a terminal)
	}
	root := newRoot(env)
	args, err := claudeArgs(root, args)
	cmd := root
	if err == nil {
		root.SetArgs(args)
		root.SetIn(env.Stdin)
		root.SetOut(env.Stdout)
		root.SetErr(env.Stderr)
		cmd, err = root.ExecuteContextC(ctx)
	}
	if err == nil {
		return 0
	}
	fmt.Fprintln(env.Stderr, "cairn:", err)
	if env.Stdout == out && !out.written {
		// A host reading JSON learns of a failure before the run, too (a
		// run that printed anything has printed its own result).
		_ = writeJSON(env.Stdout, errorResult(err))
	}
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		if cmd != nil {
			fmt.Fprintf(env.Stderr, "usage: %s (more: %s --help)\n", cmd.UseLine(), cmd.CommandPath())
		}
		return 2
	}
	return 1
}

// watchedWriter notes whether anything was written through it.
type watchedWriter struct {
	w       io.Writer
	written bool
}

func (w *watchedWriter) Write(p []byte) (int, error) {
	w.written = w.written || len(p) > 0
	return w.w.Write(p)
}

// errorResult is the result object of a run that failed before its turn
// began (a bad flag, no API key), shaped as a turn's result.
func errorResult(err error) map[string]any {
	return map[string]any{
		"type": "result", "subtype": "error_during_execution", "is_error": true, "num_turns": 0,
		"result": err.Error(), "session_id": "", "duration_ms": 0, "duration_api_ms": 0,
		"total_cost_usd": 0, "usage": model.Usage{}, "permission_denials": []any{}, "uuid": uuid.NewString(),
	}
}

// isCobraUsage recognises cobra's own argument and flag errors.
func isCobraUsage(err error) bool {
	var fe flagError
	return errors.As(err, &fe)
}

type flagError struct{ error }

func newRoot(env Env) *cobra.Command {
	root := &cobra.Command{
		Use:           "cairn",
		Short:         "A coding agent with sessions that survive anything",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       agent.Version,
	}
	root.SetVersionTemplate(versionLine(agent.Version))
	addAgentFlags(root, env)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagError{err} })
	root.AddCommand(newSessionsCmd(env))
	root.AddCommand(newContextCmd(env))
	root.AddCommand(newPermissionsCmd(env))
	root.AddCommand(newMemoryCmd(env))
	root.AddCommand(newMCPCmd(env))
	root.AddCommand(newHooksCmd(env))
	root.AddCommand(newServeCmd(env))
	unknownSubcommands(root)
	return root
}

// args wraps cobra's argument validators so their errors count as usage
// errors.
func args(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := v(cmd, a); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// writeJSON prints v as one JSON document followed by a newline.
func writeJSON(w io.Writer, v any) error {
	b, err := jsonw.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
