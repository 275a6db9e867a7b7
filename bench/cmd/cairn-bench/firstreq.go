package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
)

// firstReqCmd measures how long the cairn binary takes from its start to
// its first model request, against a fake server on loopback: for a fresh
// `cairn -p`, or for `cairn -r ID -p` of a given transcript. It reports the
// median of -n runs and the largest peak RSS.
func firstReqCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("firstreq")
	bin := fs.String("cairn", "", "the cairn binary")
	resume := fs.String("resume", "", "a transcript to resume (copied into a temporary home)")
	n := fs.Int("n", 5, "runs")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	if *bin == "" {
		return usageError{"firstreq: -cairn BIN is required"}
	}
	abs, err := filepath.Abs(*bin)
	if err != nil {
		return err
	}
	*bin = abs
	var arrived time.Time
	var mu sync.Mutex
	srv := modeltest.New(modeltest.Config{Respond: func(*modeltest.Request) modeltest.Reply {
		mu.Lock()
		if arrived.IsZero() {
			arrived = time.Now()
		}
		mu.Unlock()
		return modeltest.Text("ok")
	}})
	defer srv.Close()

	var firsts []time.Duration
	var peak int64
	for range *n {
		home, err := os.MkdirTemp("", "cairn-firstreq-home")
		if err != nil {
			return err
		}
		defer os.RemoveAll(home)
		project, err := os.MkdirTemp("", "cairn-firstreq-project")
		if err != nil {
			return err
		}
		defer os.RemoveAll(project)
		argv := []string{"-p", "hi"}
		if *resume != "" {
			id := strings.TrimSuffix(filepath.Base(*resume), ".jsonl")
			dir := session.Home{Dir: home}.ProjectDir(project)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return err
			}
			// A hard link: the copy costs nothing and the file is the same.
			if err := os.Link(*resume, filepath.Join(dir, id+".jsonl")); err != nil {
				return fmt.Errorf("link the transcript into the home (same file system needed): %w", err)
			}
			argv = append(argv, "-r", id)
		}
		cmd := exec.CommandContext(ctx, *bin, argv...)
		cmd.Dir = project
		cmd.Env = []string{"CAIRN_HOME=" + home, "HOME=" + home, "ANTHROPIC_BASE_URL=" + srv.URL, "ANTHROPIC_API_KEY=bench", "PATH=" + os.Getenv("PATH")}
		mu.Lock()
		arrived = time.Time{}
		mu.Unlock()
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("cairn failed: %v\n%s", err, out)
		}
		mu.Lock()
		firsts = append(firsts, arrived.Sub(start))
		mu.Unlock()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			peak = max(peak, ru.Maxrss*1024)
		}
	}
	slices.Sort(firsts)
	what := "fresh -p"
	if *resume != "" {
		what = "-r " + filepath.Base(*resume)
	}
	fmt.Fprintf(stdout, "%-28s start → first request: median %v (min %v, max %v), peak RSS %s\n",
		what, firsts[len(firsts)/2].Round(time.Millisecond), firsts[0].Round(time.Millisecond), firsts[len(firsts)-1].Round(time.Millisecond), mb(peak))
	return nil
}
