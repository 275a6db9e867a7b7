package longrun

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/model/modeltest"
)

// Window is the context window the fake server enforces.
const Window = 200_000

// ModelName is the model both programs are told to use.
const ModelName = "claude-sonnet-4-5-20250929"

// Program is a coding agent to measure: how to start it headless on a
// project, talking to the fake server at url.
type Program struct {
	// Name is "cairn" or "claude".
	Name string
	// Bin is the executable.
	Bin string
	// Env is added to the environment (after the common part).
	Env []string
	// Provider is the API it talks to: ProviderAnthropic ("" too) or,
	// for cairn, ProviderOpenAI.
	Provider string
}

// Cairn is the cairn binary at bin.
func Cairn(bin string, env ...string) Program { return Program{Name: "cairn", Bin: bin, Env: env} }

// CairnOpenAI is the cairn binary at bin talking to an OpenAI-compatible
// server, with the same model name (and so the same window and reserves)
// as on Anthropic's API.
func CairnOpenAI(bin string, env ...string) Program {
	return Program{Name: "cairn", Bin: bin, Env: env, Provider: ProviderOpenAI}
}

// Claude is Claude Code's binary at bin (ORACLE.md), compacting for a
// 200,000-token window.
func Claude(bin string) Program {
	return Program{Name: "claude", Bin: bin, Env: []string{
		"IS_SANDBOX=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1", fmt.Sprintf("CLAUDE_CODE_AUTO_COMPACT_WINDOW=%d", Window),
	}}
}

// command builds the program's headless command line.
func (p Program) command(ctx context.Context, cwd, home, url, prompt string, cont bool) *exec.Cmd {
	args := []string{"-p", prompt, "--output-format", "stream-json", "--verbose", "--model", ModelName}
	if cont {
		args = append([]string{"-c"}, args...)
	}
	if p.Name == "claude" {
		args = append(args, "--dangerously-skip-permissions")
	} else {
		args = append(args, "--permission-mode", "bypassPermissions")
	}
	bin := p.Bin
	if abs, err := filepath.Abs(bin); err == nil && strings.ContainsRune(bin, filepath.Separator) {
		bin = abs
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = cwd
	cmd.Env = append(os.Environ(), "HOME="+home, "CAIRN_HOME="+filepath.Join(home, ".cairn"))
	if p.Provider == ProviderOpenAI {
		cmd.Env = append(cmd.Env, "CAIRN_PROVIDER=openai", "OPENAI_BASE_URL="+url, "OPENAI_API_KEY=bench")
	} else {
		cmd.Env = append(cmd.Env, "ANTHROPIC_BASE_URL="+url, "ANTHROPIC_API_KEY=bench", "ANTHROPIC_MODEL="+ModelName)
	}
	cmd.Env = append(cmd.Env, p.Env...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// SeedClaude writes Claude Code's ~/.claude.json in home so that, run in
// project with the API key key, it asks nothing first: its onboarding,
// the folder's trust and the key's approval answered (ORACLE.md).
func SeedClaude(home, project, key string) error {
	seed, _ := json.Marshal(map[string]any{"hasCompletedOnboarding": true, "theme": "dark",
		"customApiKeyResponses": map[string]any{"approved": []string{key}},
		"projects":              map[string]any{project: map[string]any{"hasTrustDialogAccepted": true}}})
	return os.WriteFile(filepath.Join(home, ".claude.json"), seed, 0o644)
}

// Run runs w through prog in a fresh project and home under dir and
// measures it.
func Run(ctx context.Context, w *Workload, prog Program, dir string) (*Report, error) {
	cwd, home := filepath.Join(dir, "project"), filepath.Join(dir, "home")
	for path, text := range w.Files {
		full := filepath.Join(cwd, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, err
	}
	if err := SeedClaude(home, cwd, "bench"); err != nil {
		return nil, err
	}
	pl := newPlayer(w, cwd)
	var url string
	var requests func() []*modeltest.Request
	if prog.Provider == ProviderOpenAI {
		chat := newChatServer(pl)
		defer chat.srv.Close()
		url, requests = chat.srv.URL, chat.requests
	} else {
		srv := modeltest.New(modeltest.Config{ContextWindow: Window, Respond: pl.respond})
		defer srv.Close()
		url, requests = srv.URL, srv.Requests
	}

	start := time.Now()
	rep := &Report{Program: prog.Name, Provider: cmp.Or(prog.Provider, ProviderAnthropic), Workload: w.Name, Steps: w.Steps(), OutputBytes: w.OutputBytes(), Facts: len(w.Facts)}
	var runErr error
	turn := 0
	// One process a turn, each later one continuing the session (-c), as
	// a person coming back to it would.
	for ; turn < len(w.Turns) && runErr == nil; turn++ {
		runErr = runTurn(ctx, prog, cwd, home, url, w.Turns[turn].Prompt, turn > 0, rep)
		if runErr != nil {
			runErr = fmt.Errorf("turn %d: %w", turn+1, runErr)
			break
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	rep.Completed = pl.done() && turn == len(w.Turns)
	reqs := requests()
	rep.measure(w, reqs, pl)
	if err := writeLog(filepath.Join(dir, "requests.tsv"), reqs, pl); err != nil {
		return rep, err
	}
	if runErr != nil {
		return rep, runErr
	}
	if !rep.Completed {
		return rep, fmt.Errorf("%s ran all %d turns but not the script to its end (the fake model replied %d of %d times)", prog.Name, turn, pl.pos, len(pl.items))
	}
	return rep, nil
}

// runTurn runs one turn of the session: prog with prompt, continuing the
// session when cont; it counts the compactions and notes the errors the
// program printed.
func runTurn(ctx context.Context, prog Program, cwd, home, url, prompt string, cont bool, rep *Report) error {
	cmd := prog.command(ctx, cwd, home, url, prompt, cont)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", prog.Bin, err)
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	gotResult := false
	for sc.Scan() {
		var ev struct {
			Type, Subtype string
			IsError       bool `json:"is_error"`
			Result        string
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		switch {
		case ev.Type == "system" && ev.Subtype == "compact_boundary":
			rep.Compactions++
		case ev.Type == "result":
			gotResult = true
			if ev.IsError {
				rep.Errors = append(rep.Errors, fmt.Sprintf("%s %s", ev.Subtype, firstLine(ev.Result)))
			}
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil || !gotResult {
		return fmt.Errorf("%s ended without a result (%v):\n%s", prog.Name, err, tail(stderr.String(), 2000))
	}
	if s := strings.TrimSpace(stderr.String()); s != "" {
		for _, line := range strings.Split(s, "\n") {
			if strings.Contains(line, "compact") || strings.Contains(line, "notes") {
				rep.Warnings = append(rep.Warnings, line)
			}
		}
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// ErrNoClaude is returned when Claude Code's binary is not installed.
var ErrNoClaude = errors.New("Claude Code is not installed: npm install @anthropic-ai/claude-code@2.1.332 (ORACLE.md), or pass its path")

// writeLog writes one line a request: kind, status, usage, what the
// server cleared, and the facts the model saw, for looking into a run.
func writeLog(path string, reqs []*modeltest.Request, pl *player) error {
	var b strings.Builder
	b.WriteString("id\tkind\tstatus\ttokens\tinput\tcache_read\tcache_write\tcleared\tfacts_seen\n")
	for _, q := range reqs {
		cleared := 0
		for _, e := range q.ContextEdits {
			cleared += e.ClearedToolUses
		}
		fmt.Fprintf(&b, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", q.ID, pl.kind(q.ID), q.Status, q.Tokens,
			q.Usage.InputTokens, q.Usage.CacheReadInputTokens, q.Usage.CacheCreationInputTokens, cleared, len(seenFacts(q)))
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
