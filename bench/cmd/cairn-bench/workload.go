package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/cairn-dev/cairn/bench/workload"
)

// workloadCmd runs the long compaction workload (bench/workload) and
// prints its report.
func workloadCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("workload")
	turns := fs.Int("turns", 5, "user prompts")
	steps := fs.Int("steps", 32, "tool steps per prompt")
	window := fs.Int64("window", 200_000, "the enforced context window, in tokens")
	minOut := fs.Int("min-output", 1_000, "smallest tool output, in bytes")
	maxOut := fs.Int("max-output", 100_000, "largest tool output, in bytes")
	seed := fs.Uint64("seed", 1, "random seed")
	collapse := fs.Bool("collapse", false, "turn context collapse on")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	home, err := os.MkdirTemp("", "cairn-workload-home")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	cwd, err := os.MkdirTemp("", "cairn-workload-project")
	if err != nil {
		return err
	}
	defer os.RemoveAll(cwd)
	rep, err := workload.Run(ctx, workload.Options{Turns: *turns, StepsPerTurn: *steps, Window: *window, MinOutput: *minOut, MaxOutput: *maxOut, Seed: *seed, Home: home, Cwd: cwd, Collapse: *collapse})
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, rep)
	return nil
}
