package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/cairn-dev/cairn/transcript"
)

// indexCmd measures the index pass over a transcript (transcript.Index):
// one read of the file, the chain to its leaf, the raw token estimate of
// the chain. It is what a resume costs before any body is decoded.
func indexCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("index")
	tsv := fs.Bool("tsv", false, "print one tab-separated line: size, lines, chain lines, chain tokens, warnings, seconds, peak RSS bytes, CPU seconds, bytes allocated, heap in use after")
	if err := parseFlags(fs, args, 1); err != nil {
		return err
	}
	path := fs.Arg(0)
	start := time.Now()
	src, err := transcript.OpenFile(path)
	if err != nil {
		return err
	}
	defer src.Close()
	x, err := transcript.NewIndex(ctx, src, src.Size())
	if err != nil {
		return fmt.Errorf("index %s: %w", path, err)
	}
	chain, chainWarns, err := x.Chain("")
	if err != nil {
		return fmt.Errorf("index %s: %w", path, err)
	}
	var tokens int64
	for _, i := range chain {
		tokens += int64(x.Lines[i].Tokens)
	}
	wall := time.Since(start)
	rss, cpu := usage()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	warns := append(x.Warnings, chainWarns...)
	if *tsv {
		fmt.Fprintf(stdout, "%d\t%d\t%d\t%d\t%d\t%.4f\t%d\t%.4f\t%d\t%d\n", src.Size(), len(x.Lines), len(chain), tokens, len(warns), wall.Seconds(), rss, cpu.Seconds(), ms.TotalAlloc, ms.HeapInuse)
		return nil
	}
	fmt.Fprintf(stdout, "index %s\n  file        %s\n  lines       %d\n  chain       %d lines, about %d tokens\n  warnings    %d\n  wall        %s\n  CPU         %s (the whole process)\n  peak RSS    %s\n  allocated   %s\n  heap in use %s (the index held)\n",
		path, mb(src.Size()), len(x.Lines), len(chain), tokens, len(warns), wall.Round(time.Microsecond), cpu.Round(time.Microsecond), mb(rss), mb(int64(ms.TotalAlloc)), mb(int64(ms.HeapInuse)))
	for _, w := range warns[:min(len(warns), 5)] {
		fmt.Fprintf(stdout, "  warning: %s\n", w)
	}
	runtime.KeepAlive(x)
	return nil
}
