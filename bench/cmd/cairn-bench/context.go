package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/cairn-dev/cairn/bench/longrun"
)

// figuresFile holds Claude Code's recorded figures, by workload.
const figuresFile = "bench/context-figures.json"

// defaultClaude is where ORACLE.md installs Claude Code 2.1.332.
const defaultClaude = "/opt/ccoracle/node_modules/.bin/claude"

// contextCmd runs the long-session workloads (bench/longrun) through cairn
// and compares with Claude Code's figures: recorded in figuresFile, or
// measured again with -live-claude (slow: minutes per workload).
func contextCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("context")
	workloads := fs.String("workload", "basic,hard", "workloads to run: basic, hard, or both")
	cairnBin := fs.String("cairn", "bench/out/cairn", "the cairn binary")
	claudeBin := fs.String("claude", defaultClaude, "Claude Code's binary")
	live := fs.Bool("live-claude", false, "run Claude Code too, and record its figures in "+figuresFile)
	onlyClaude := fs.Bool("only-claude", false, "with -live-claude: do not run cairn")
	seed := fs.Uint64("seed", 1, "workload seed")
	steps := fs.Int("steps", 0, "keep only this many steps per turn (quick trials; 0: all)")
	env := fs.String("env", "", "extra environment for cairn, comma-separated KEY=VALUE (threshold sweeps)")
	provider := fs.String("provider", longrun.ProviderAnthropic, "the API cairn talks to: anthropic (the Messages API's fake) or openai (an OpenAI-compatible fake: no server-side clearing, the window enforced with context_length_exceeded)")
	asJSON := fs.Bool("json", false, "print the reports as JSON")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	recorded := map[string]*longrun.Report{}
	if data, err := os.ReadFile(figuresFile); err == nil {
		if err := json.Unmarshal(data, &recorded); err != nil {
			return fmt.Errorf("%s: %v (delete it and run with -live-claude to record it again)", figuresFile, err)
		}
	}
	var extra []string
	if *env != "" {
		extra = strings.Split(*env, ",")
	}
	cairnProg := longrun.Cairn(*cairnBin, extra...)
	switch *provider {
	case longrun.ProviderAnthropic:
	case longrun.ProviderOpenAI:
		cairnProg = longrun.CairnOpenAI(*cairnBin, extra...)
	default:
		return usageError{fmt.Sprintf("no provider %q: use anthropic or openai", *provider)}
	}
	var out []*longrun.Report
	for _, name := range strings.Split(*workloads, ",") {
		w, err := longrun.ByName(name, *seed)
		if err != nil {
			return usageError{err.Error()}
		}
		if *steps > 0 {
			w.Cut(*steps)
		}
		key := fmt.Sprintf("%s/seed=%d/steps=%d", name, *seed, w.Steps())
		cc := recorded[key]
		if *live {
			if _, err := os.Stat(*claudeBin); err != nil {
				return fmt.Errorf("%w: %v", longrun.ErrNoClaude, err)
			}
			rep, err := runOne(ctx, w, longrun.Claude(*claudeBin))
			if rep != nil {
				fmt.Fprint(os.Stderr, rep)
			}
			if err != nil {
				return fmt.Errorf("claude on %s: %w", name, err)
			}
			cc, recorded[key] = rep, rep
			data, _ := json.MarshalIndent(recorded, "", "  ")
			if err := os.WriteFile(figuresFile, append(data, '\n'), 0o644); err != nil {
				return err
			}
		}
		if *onlyClaude {
			continue
		}
		rep, err := runOne(ctx, w, cairnProg)
		if rep == nil {
			return fmt.Errorf("cairn on %s: %w", name, err)
		}
		if err != nil {
			rep.Errors = append(rep.Errors, err.Error())
		}
		out = append(out, rep)
		if *asJSON {
			continue
		}
		fmt.Fprint(stdout, rep)
		if rep.Provider == longrun.ProviderOpenAI {
			verdictOpenAI(stdout, rep, cc)
			continue
		}
		if cc == nil {
			fmt.Fprintf(stdout, "  no Claude Code figures for %s in %s: run with -live-claude\n", key, figuresFile)
			continue
		}
		verdict(stdout, rep, cc)
	}
	if *asJSON {
		data, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintln(stdout, string(data))
	}
	return nil
}

// runOne runs w through prog in a scratch folder.
func runOne(ctx context.Context, w *longrun.Workload, prog longrun.Program) (*longrun.Report, error) {
	dir, err := os.MkdirTemp("", "cairn-context-"+prog.Name)
	if err != nil {
		return nil, err
	}
	if os.Getenv("CAIRN_BENCH_KEEP") != "" {
		fmt.Fprintln(os.Stderr, "the run is kept in", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	return longrun.Run(ctx, w, prog, filepath.Join(dir, "run"))
}

// verdict compares cairn's run with Claude Code's against issue 12's bar.
func verdict(out io.Writer, c, cc *longrun.Report) {
	ratio := c.Billed() / cc.Billed()
	check := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	fmt.Fprintf(out, "  vs Claude Code      billed %.0f vs %.0f: %.2fx (<= 0.80x: %s); facts %d/%d vs %d/%d; cache-read share %.1f%% vs %.1f%%; requests %d/%d/%d vs %d/%d/%d\n",
		c.Billed(), cc.Billed(), ratio, check(ratio <= 0.8), c.FactsSeen, c.Facts, cc.FactsSeen, cc.Facts,
		100*c.CacheShare(), 100*cc.CacheShare(), c.Main, c.Summaries, c.Notes, cc.Main, cc.Summaries, cc.Notes)
	fmt.Fprintf(out, "  done when           every fact: %s; task word for word: %s; 0 prompt-too-long: %s; <= 1 rewrite per compaction: %s\n",
		check(c.FactsSeen == c.Facts), check(c.TaskVerbatim), check(c.TooLong == 0), check(c.RewritesPerCompaction() <= 1))
}

// verdictOpenAI checks a run through the OpenAI-compatible provider
// against issue 12's bar for it: the workload completes with every fact
// and no context-length error. The bill is shown beside Claude Code's
// (on Anthropic's API) for scale only: chat completions charge no cache
// writes.
func verdictOpenAI(out io.Writer, c, cc *longrun.Report) {
	check := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	if cc != nil {
		fmt.Fprintf(out, "  for scale           billed %.0f here (no cache writes on this API) vs Claude Code %.0f on Anthropic's: %.2fx\n", c.Billed(), cc.Billed(), c.Billed()/cc.Billed())
	}
	fmt.Fprintf(out, "  done when (OpenAI)  completed: %s; every fact: %s; 0 context-length errors: %s\n",
		check(c.Completed), check(c.FactsSeen == c.Facts), check(c.TooLong == 0))
}
