// Command cairn-bench measures cairn's transcript store on synthetic Claude
// Code sessions:
//
//	cairn-bench gen -size 100MB -out FILE [-seed N] [-compact] [-damage] [-chinese 0.5] [-terse] [-window 200000]
//	cairn-bench resume [-tsv] [-map] [-cache] [-huge=false] [-pace=false] [-cpuprofile FILE] [-memprofile FILE] FILE
//	cairn-bench append [-tsv] [-n 10000] DIR
//	cairn-bench firstreq -cairn BIN [-claude BIN] [-against BIN] [-resume FILE] [-n 5] [-tsv] [-env K=V] [-pages as-is|dropped|read] [-second] [-min-body 204800]
//	cairn-bench tuiresume -cairn BIN [-claude BIN] [-against BIN] -resume FILE [-n 5] [-poll 50ms] [-tsv] [-pages as-is|dropped|read]
//	cairn-bench workload [-turns 5] [-steps 32] [-window 200000] …
//	cairn-bench context [-workload basic,hard] [-live-claude] …
//
// gen writes a session with bench/gen; resume loads a session the way a
// resumed cairn does (transcript.Load, then Conversation.Messages) and
// reports the wall time, the process's peak resident memory and how much of
// the file was read; append times durable user appends through a
// transcript.Writer on a FileStore in DIR; firstreq times the cairn
// binary from its start to its first request to a fake server, fresh or
// resuming a transcript; tuiresume times `cairn -r ID` in the terminal
// UI, in tmux, until the conversation and the prompt are on the screen. Run each resume in a fresh
// process: the peak RSS is the whole process's.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-dev/cairn/bench/gen"
	"github.com/cairn-dev/cairn/internal/gcpace"
	"github.com/cairn-dev/cairn/internal/hugeheap"
	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/transcript"
)

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdout)
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "cairn-bench:", err)
	var u usageError
	if errors.As(err, &u) || errors.Is(err, flag.ErrHelp) {
		os.Exit(2)
	}
	os.Exit(1)
}

const usageText = `usage:
  cairn-bench gen -size 100MB -out FILE [-seed N] [-compact [-compact-every 1.5MB]] [-damage] [-chinese 0.5] [-terse] [-window 200000]
  cairn-bench resume [-tsv] [-map] [-cache] [-huge=false] [-pace=false] [-cpuprofile FILE] [-memprofile FILE] FILE
  cairn-bench index [-tsv] FILE
  cairn-bench append [-tsv] [-n 10000] DIR
  cairn-bench firstreq -cairn BIN [-claude BIN] [-against BIN] [-resume FILE] [-n 5] [-tsv] [-env K=V] [-pages as-is|dropped|read] [-second] [-min-body 204800]
  cairn-bench tuiresume -cairn BIN [-claude BIN] [-against BIN] -resume FILE [-n 5] [-poll 50ms] [-tsv] [-pages as-is|dropped|read]
  cairn-bench workload [-turns 5] [-steps 32] [-window 200000] [-min-output 1000] [-max-output 100000] [-seed 1] [-collapse]
  cairn-bench context [-workload basic,hard] [-cairn BIN] [-live-claude [-claude BIN] [-only-claude]] [-seed 1] [-steps N] [-env K=V,...] [-json]`

// usageError is a command-line mistake.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg + "\n" + usageText }

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usageError{"no command given"}
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "gen":
		return genCmd(rest, stdout)
	case "resume":
		return resumeCmd(ctx, rest, stdout)
	case "index":
		return indexCmd(ctx, rest, stdout)
	case "append":
		return appendCmd(ctx, rest, stdout)
	case "firstreq":
		return firstReqCmd(ctx, rest, stdout)
	case "tuiresume":
		return tuiResumeCmd(ctx, rest, stdout)
	case "workload":
		return workloadCmd(ctx, rest, stdout)
	case "context":
		return contextCmd(ctx, rest, stdout)
	default:
		return usageError{fmt.Sprintf("unknown command %q", cmd)}
	}
}

func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string, operands int) error {
	if err := fs.Parse(args); err != nil {
		return usageError{fs.Name() + ": " + err.Error()}
	}
	if fs.NArg() != operands {
		return usageError{fmt.Sprintf("%s: want %d operand(s), got %d", fs.Name(), operands, fs.NArg())}
	}
	return nil
}

func genCmd(args []string, stdout io.Writer) error {
	fs := newFlags("gen")
	size := fs.String("size", "10MB", "size to reach (B, KB, MB, GB; binary units)")
	every := fs.String("compact-every", "1.5MB", "with -compact: transcript written between compactions")
	out := fs.String("out", "", "file to write")
	seed := fs.Uint64("seed", 1, "chooses the session")
	damage := fs.Bool("damage", false, "then damage the file as gen.Damage does: garbage in the middle, a 20 MB line that is no entry, a torn last line")
	compact := fs.Bool("compact", false, "compact about every -compact-every bytes (default: one unbroken chain, no compaction)")
	terse := fs.Bool("terse", false, "every tool result a few lines, as in a session of many small steps: several times the lines in the same bytes")
	window := fs.Int64("window", 0, "cap the usage each response records at this many tokens, as a server with this window would (200000 for Claude's); 0 lets it follow the context")
	chinese := fs.Float64("chinese", 0, "the share (0 to 1) of the prose written in Chinese: prompts, the model's sentences, code comments (tool results stay mostly ASCII: 0.5 makes about 5% of the bytes multi-byte UTF-8, 1 about 11%)")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	if *out == "" {
		return usageError{"gen: -out is required"}
	}
	if !(*chinese >= 0 && *chinese <= 1) { // NaN too
		return usageError{"gen: -chinese: want a share from 0 to 1"}
	}
	n, err := parseSize(*size)
	if err != nil {
		return usageError{"gen: -size: " + err.Error()}
	}
	e, err := parseSize(*every)
	if err != nil {
		return usageError{"gen: -compact-every: " + err.Error()}
	}
	if !*compact {
		e = 0
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	start := time.Now()
	st, err := gen.Generate(f, gen.Options{Size: n, Seed: *seed, Compact: *compact, CompactEvery: e, Chinese: *chinese, Terse: *terse, Window: *window})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", *out, err)
	}
	if *damage {
		b, err := os.ReadFile(*out)
		if err != nil {
			return err
		}
		if err := os.WriteFile(*out, gen.Damage(b), 0o600); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "wrote %s: %s, %d lines, %d turns, %d tool calls, %d compactions, %d entries to resume, in %s\n",
		*out, mb(st.Bytes), st.Lines, st.Turns, st.ToolCalls, st.Compactions, len(st.Resume), time.Since(start).Round(time.Millisecond))
	return nil
}

// parseSize reads a byte count such as 100MB, 1.5MB or 4096. Units are
// binary: 1MB is 1<<20 bytes.
func parseSize(s string) (int64, error) {
	num := strings.TrimRight(strings.ToUpper(strings.TrimSpace(s)), "BI")
	mult := 1.0
	if num != "" {
		switch num[len(num)-1] {
		case 'K':
			mult, num = 1<<10, num[:len(num)-1]
		case 'M':
			mult, num = 1<<20, num[:len(num)-1]
		case 'G':
			mult, num = 1<<30, num[:len(num)-1]
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("%q is not a size (try 100MB)", s)
	}
	return int64(v * mult), nil
}

func resumeCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("resume")
	tsv := fs.Bool("tsv", false, "print one tab-separated line: size, read, entries, messages, warnings, seconds, peak RSS bytes, CPU seconds")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the resume to this file")
	memProfile := fs.String("memprofile", "", "write a heap profile, taken once the messages are built, to this file")
	mapped := fs.Bool("map", false, "keep the messages in the file's mapping, as a headless resume does (LoadOptions.Map)")
	cached := fs.Bool("cache", false, "fill a LineCache, as a session that goes on in the file does (LoadOptions.Cache)")
	huge := fs.Bool("huge", true, "back the heap the load builds with huge pages (hugeheap.Grow by transcript.HeapOf; a resume grows a quarter more, for its start); -huge=false for the plain heap")
	paced := fs.Bool("pace", true, "set the collector as a resume does while it loads (gcpace.Load: off, under a memory limit), fitted once the load is done; -pace=false for the default collector")
	if err := parseFlags(fs, args, 1); err != nil {
		return err
	}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	path := fs.Arg(0)
	start := time.Now()
	store, key := transcript.FileStoreOf(path)
	src, err := store.OpenSource(ctx, key)
	if err != nil {
		return err
	}
	defer src.Close()
	loaded := func() {}
	if *paced {
		// Before Grow, as a resume does: Grow stays under the limit.
		loaded = gcpace.Load()
	}
	var grown uint64 // what Grow allocated to grow the heap, not the load's
	if *huge {
		heap := int(transcript.HeapOf(src, src.Size())) // its sample read is the resume's, not Grow's
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		defer hugeheap.Grow(heap)()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		grown = after.TotalAlloc - before.TotalAlloc
	}
	opts := transcript.LoadOptions{Map: *mapped}
	if *cached {
		opts.Cache = &transcript.LineCache{}
	}
	conv, err := transcript.Load(ctx, src, opts)
	loaded() // as a resume ends the load's pace: before what it builds on it
	if err != nil {
		return fmt.Errorf("load %s: %w", path, err)
	}
	msgs := conv.Messages()
	wall := time.Since(start)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if *memProfile != "" {
		if err := writeHeapProfile(*memProfile); err != nil {
			return err
		}
	}
	rss, cpu := usage()
	if *tsv {
		fmt.Fprintf(stdout, "%d\t%d\t%d\t%d\t%d\t%.4f\t%d\t%.4f\n", src.Size(), conv.BytesRead, len(conv.Entries), len(msgs), len(conv.Warnings), wall.Seconds(), rss, cpu.Seconds())
		return nil
	}
	fmt.Fprintf(stdout, "resume %s\n  file      %s\n  read      %s\n  entries   %d (%d repaired)\n  messages  %d\n  warnings  %d\n  wall      %s\n  CPU       %s (the whole process)\n  peak RSS  %s\n  allocated %s (the whole process, less what hugeheap.Grow allocated)\n",
		path, mb(src.Size()), mb(conv.BytesRead), len(conv.Entries), conv.Repaired, len(msgs), len(conv.Warnings), wall.Round(time.Microsecond), cpu.Round(time.Microsecond), mb(rss), mb(int64(ms.TotalAlloc-grown)))
	for _, w := range conv.Warnings[:min(len(conv.Warnings), 5)] {
		fmt.Fprintf(stdout, "  warning: %s\n", w)
	}
	return nil
}

// writeHeapProfile writes what is in use on the heap now to path.
func writeHeapProfile(path string) error {
	runtime.GC() // the profile describes the heap as of the last collection
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// usage returns the process's peak resident set size in bytes and the CPU
// time it used so far (user and system): on a busy machine the CPU time
// says more about the work done than the wall time.
func usage() (rss int64, cpu time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1, -1
	}
	rss = int64(ru.Maxrss) << 10 // KiB on Linux
	if runtime.GOOS == "darwin" {
		rss = int64(ru.Maxrss) // bytes there
	}
	return rss, time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func appendCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("append")
	n := fs.Int("n", 10000, "number of durable user appends")
	tsv := fs.Bool("tsv", false, "print one tab-separated line: count, then p50, p90, p99, max, total, and the bare disk's p50 and p99, in nanoseconds")
	if err := parseFlags(fs, args, 1); err != nil {
		return err
	}
	if *n <= 0 {
		return usageError{"append: -n must be positive"}
	}
	store := transcript.NewFileStore(fs.Arg(0))
	id := uuid.NewString()
	app, err := store.OpenAppender(ctx, id)
	if err != nil {
		return err
	}
	w := transcript.NewWriter(app, transcript.WriterOptions{})
	lat := make([]time.Duration, 0, *n)
	parent := ""
	start := time.Now()
	for i := range *n {
		e := userEntry(id, parent, fmt.Sprintf("prompt %d: run the tests again and fix whatever fails in the store package, then summarise what changed", i))
		t0 := time.Now()
		if err := w.AppendDurable(ctx, e); err != nil {
			w.Close()
			return fmt.Errorf("append %d: %w", i, err)
		}
		lat = append(lat, time.Since(t0))
		parent = e.UUID
	}
	total := time.Since(start)
	if err := w.Close(); err != nil {
		return err
	}
	line, err := userEntry(id, parent, "a line as long as the prompts above, written with a bare write and fsync for comparison").MarshalJSON()
	if err != nil {
		return err
	}
	base, err := baseline(filepath.Join(fs.Arg(0), "baseline.jsonl"), append(line, '\n'), *n)
	if err != nil {
		return err
	}
	q := quantiles(lat)
	b := quantiles(base)
	if *tsv {
		fmt.Fprintf(stdout, "%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", *n, q(0.50), q(0.90), q(0.99), q(1), total, b(0.50), b(0.99))
		return nil
	}
	fmt.Fprintf(stdout, "append %d durable user entries to %s in %s\n  p50 %s\n  p90 %s\n  p99 %s\n  max %s\n",
		*n, store.Path(id), total.Round(time.Millisecond), q(0.50), q(0.90), q(0.99), q(1))
	fmt.Fprintf(stdout, "the disk alone (write + fsync of the same line, no Writer): p50 %s, p99 %s, max %s\n", b(0.50), b(0.99), b(1))
	return nil
}

// baseline times n appends of line to a fresh file at path with a bare
// write(2) and fsync(2): what the disk costs, without cairn.
func baseline(path string, line []byte, n int) ([]time.Duration, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	defer os.Remove(path)
	defer f.Close()
	lat := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		if _, err := f.Write(line); err != nil {
			return nil, err
		}
		if err := f.Sync(); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}

// quantiles sorts lat and returns a function giving its q-quantile.
func quantiles(lat []time.Duration) func(q float64) time.Duration {
	slices.Sort(lat)
	return func(q float64) time.Duration { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
}

// userEntry is a typed prompt, as a session writes it.
func userEntry(sessionID, parent, text string) transcript.Entry {
	var msg jsonw.Object
	msg.Str("role", "user")
	msg.Str("content", text)
	return transcript.Entry{
		Type:       transcript.TypeUser,
		UUID:       uuid.NewString(),
		ParentUUID: parent,
		PromptID:   uuid.NewString(),
		Message:    msg.Bytes(),
		Timestamp:  transcript.FormatTime(time.Now()),
		UserType:   "external",
		Entrypoint: "cli",
		CWD:        "/home/user/acme-api",
		SessionID:  sessionID,
		Version:    gen.Version,
		GitBranch:  gen.GitBranch,
	}
}

// mb formats a byte count in MB (binary).
func mb(n int64) string {
	return fmt.Sprintf("%.2f MB", float64(n)/(1<<20))
}
