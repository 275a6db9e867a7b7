package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// stdinWait is how long a headless run given a prompt argument waits for
// the first byte of a stdin that is not a terminal: a pipe nobody writes
// to (a script's inherited stdin) must not hang the run.
const stdinWait = 3 * time.Second

// headlessPrompt is the prompt of a headless run, as Claude Code builds
// it: the argument; else stdin, trimmed; and with both, the argument, a
// newline, then stdin as it came (`git diff | cairn -p "review"`). A
// terminal on stdin is never read.
func headlessPrompt(env Env, arg string) (string, error) {
	if env.Stdin == nil {
		return arg, nil
	}
	if file, ok := env.Stdin.(*os.File); ok && isTerminal(file) {
		return arg, nil
	}
	if arg == "" {
		b, err := io.ReadAll(env.Stdin)
		if err != nil {
			return "", fmt.Errorf("read the prompt from stdin: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	b, err := readPiped(env.Stdin, stdinWait)
	if err != nil {
		return "", fmt.Errorf("read stdin, which follows the prompt: %w", err)
	}
	if len(b) == 0 {
		return arg, nil
	}
	return arg + "\n" + string(b), nil
}

// readPiped reads r to its end, unless nothing at all arrives within
// wait: then it returns nothing (the reading goes on in the background
// and is dropped).
func readPiped(r io.Reader, wait time.Duration) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	first, done := make(chan struct{}), make(chan result, 1)
	go func() {
		var buf bytes.Buffer
		p := make([]byte, 32<<10)
		for {
			n, err := r.Read(p)
			if n > 0 && buf.Len() == 0 {
				close(first)
			}
			buf.Write(p[:n])
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				done <- result{buf.Bytes(), err}
				return
			}
		}
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-first:
	case res := <-done:
		return res.b, res.err
	case <-timer.C:
		return nil, nil
	}
	res := <-done
	return res.b, res.err
}
