package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/cairn-dev/cairn/bench/longrun"
	"github.com/cairn-dev/cairn/internal/jsonl"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/transcript"
)

// tuiResumeCmd measures how long `cairn -r ID` takes, in the terminal UI,
// from its start until the resumed conversation and the prompt are on the
// screen, and with -claude `claude -r ID` the same way, runs alternating.
// Each runs in a tmux window of 120×40 whose screen is captured every
// -poll; the program is ready when the screen shows the transcript's
// last assistant text and the program's prompt line under it. The peak
// RSS is the program's VmHWM when it is ready. Claude Code's scratch home
// is seeded so that it asks nothing first (onboarding, trust, the key).
func tuiResumeCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("tuiresume")
	pf := newBenchFlags(fs)
	poll := fs.Duration("poll", 50*time.Millisecond, "how often the screen is captured")
	tsv := fs.Bool("tsv", false, "print one tab-separated line per program: name, median seconds, median peak RSS bytes")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	resume, n := pf.resume, pf.n
	if *pf.bin == "" || *resume == "" {
		return usageError{"tuiresume: -cairn BIN and -resume FILE are required"}
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		return fmt.Errorf("tuiresume runs the programs in tmux, which is not installed (apt-get install tmux)")
	}
	id, err := sessionIDOf(*resume)
	if err != nil {
		return err
	}
	last, err := lastAssistantText(*resume)
	if err != nil {
		return err
	}
	progs, err := pf.programs(nil)
	if err != nil {
		return err
	}
	front := newTimingFront(0)
	defer front.Close()
	for round := range *n {
		for _, i := range turnOrder(round, len(progs)) {
			r, err := tuiOnce(ctx, &progs[i], front.URL, *resume, id, last, *poll)
			if err != nil {
				return err
			}
			progs[i].runs = append(progs[i].runs, r)
		}
	}
	for _, p := range progs {
		wall, rss, _ := p.medians()
		if *tsv {
			fmt.Fprintf(stdout, "%s\t%.4f\t%d\n", p.name, wall.Seconds(), rss)
			continue
		}
		fmt.Fprintf(stdout, "%-6s -r %-24s start → conversation and prompt on screen: median %v (min %v, max %v), peak RSS median %s\n",
			p.name, filepath.Base(*resume), wall.Round(time.Millisecond), p.min().Round(time.Millisecond), p.max().Round(time.Millisecond), mb(rss))
	}
	printPaired(stdout, progs, *tsv)
	return nil
}

// lastAssistantText returns the start of the transcript's last assistant
// text, as a screen shows it: the first words of its first line. It reads
// the file from its end (jsonl.Backward), at most 4 MB of it.
func lastAssistantText(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	sc := jsonl.NewBackward(f, st.Size(), 0, 0, nil)
	for sc.Offset() > st.Size()-4<<20 {
		line, ok, err := sc.Next()
		if err != nil {
			return "", err
		}
		if !ok {
			break
		}
		e, err := transcript.DecodeEntry(line.Bytes)
		if err != nil || e.Type != transcript.TypeAssistant {
			continue
		}
		m, ok, err := e.DecodeMessage()
		if err != nil || !ok {
			continue
		}
		for _, b := range m.Content {
			if b.Type != model.BlockText {
				continue
			}
			if words := plainWords(b.Text); len(words) > 0 {
				return strings.Join(words[:min(len(words), 3)], " "), nil
			}
		}
	}
	return "", fmt.Errorf("%s: no assistant text in its last 4 MB", path)
}

func tuiOnce(ctx context.Context, p *program, url, resume, id, last string, poll time.Duration) (runResult, error) {
	s, err := newScratch(p, url, resume, id)
	if err != nil {
		return runResult{}, err
	}
	defer s.remove()
	env := append(s.env[:len(s.env):len(s.env)], "TERM=xterm-256color")
	prompt := ">" // the mark that starts cairn's prompt line
	if p.name == "claude" {
		if err := longrun.SeedClaude(s.home, s.project, "bench"); err != nil {
			return runResult{}, err
		}
		prompt = "❯"
	}
	pidFile := filepath.Join(s.home, "pid")
	// The shell writes its pid and becomes the program, so the pid is the
	// program's.
	cd, err1 := shellWords("cd", s.project)
	pid, err2 := shellWords(pidFile)
	run, err3 := shellWords(append(append([]string{"exec", "env", "-i"}, env...), p.bin, "-r", id)...)
	if err := errors.Join(err1, err2, err3); err != nil {
		return runResult{}, err
	}
	script := cd + " && echo $$ > " + pid + " && " + run
	// A tmux server of the bench's own, running the script with sh
	// whatever the user's shell, whose pane stays when the program exits,
	// so that its last screen says why.
	conf := filepath.Join(s.home, "tmux.conf")
	if err := os.WriteFile(conf, []byte("set -g default-shell /bin/sh\nset -g remain-on-exit on\n"), 0o600); err != nil {
		return runResult{}, err
	}
	sock := fmt.Sprintf("cairn-bench-%d", os.Getpid())
	tmux := func(args ...string) ([]byte, error) {
		return exec.CommandContext(ctx, "tmux", append([]string{"-L", sock, "-f", conf}, args...)...).Output()
	}
	start := time.Now()
	if _, err := tmux("new-session", "-d", "-s", "bench", "-x", "120", "-y", "40", script); err != nil {
		return runResult{}, fmt.Errorf("start tmux: %w", err)
	}
	defer func() {
		tmux("kill-server")
		// The next run starts once this one's program has gone.
		if pid, err := os.ReadFile(pidFile); err == nil {
			for range 100 {
				if _, err := os.Stat("/proc/" + strings.TrimSpace(string(pid))); err != nil {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}()
	deadline := start.Add(2 * time.Minute)
	for {
		screen, err := tmux("capture-pane", "-p", "-t", "bench")
		if err != nil {
			return runResult{}, fmt.Errorf("%s: capture the screen: %w", p.name, err)
		}
		if ready(string(screen), last, prompt) {
			break
		}
		if dead, _ := tmux("display-message", "-p", "-t", "bench", "#{pane_dead}"); strings.TrimSpace(string(dead)) == "1" {
			return runResult{}, fmt.Errorf("%s exited before it was ready; its screen:\n%s", p.name, screen)
		}
		if time.Now().After(deadline) {
			return runResult{}, fmt.Errorf("%s was not ready after 2 minutes; its screen:\n%s", p.name, screen)
		}
		time.Sleep(poll)
	}
	r := runResult{wall: time.Since(start)}
	if pid, err := os.ReadFile(pidFile); err == nil {
		r.rss = peakRSS(strings.TrimSpace(string(pid)))
	}
	return r, nil
}

// plainWords returns the words of the first line of Markdown text with
// the marks a terminal draws as style (emphasis, code, headings, a list
// item's marker) taken out.
func plainWords(text string) []string {
	first, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	var words []string
	for i, w := range strings.Fields(first) {
		if n := strings.TrimLeft(w, "0123456789"); i == 0 && (w == "-" || w == "*" || w == "+" || (n == "." || n == ")") && len(n) < len(w)) {
			continue // a list item's marker
		}
		if w = strings.Trim(w, "*_`#>~"); w != "" {
			words = append(words, w)
		}
	}
	return words
}

// ready reports whether the screen shows the last text (its words, however
// spaced) and, on a line below it, the prompt's mark.
func ready(screen, last, prompt string) bool {
	lines := strings.Split(screen, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if !strings.Contains(strings.Join(strings.Fields(lines[i]), " "), last) {
			continue
		}
		for _, l := range lines[i+1:] {
			// tmux drops the spaces that end a line: an empty prompt is
			// its mark alone.
			if l = strings.TrimSpace(strings.TrimLeft(l, " │")); l == prompt || strings.HasPrefix(l, prompt+" ") {
				return true
			}
		}
		return false
	}
	return false
}

// peakRSS returns the VmHWM of the process pid, in bytes (0 if unknown).
func peakRSS(pid string) int64 {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// shellWords quotes words for sh (mvdan.cc/sh's syntax.Quote) and joins
// them into a command line.
func shellWords(words ...string) (string, error) {
	q := make([]string, len(words))
	for i, w := range words {
		var err error
		if q[i], err = syntax.Quote(w, syntax.LangPOSIX); err != nil {
			return "", fmt.Errorf("quote %q for sh: %w", w, err)
		}
	}
	return strings.Join(q, " "), nil
}
