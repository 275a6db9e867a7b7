//go:build unix

package agent_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/bench/gen"
	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model/anthropic"
	"github.com/cairn-dev/cairn/session"
)

// BenchmarkOpenResume measures agent.Open of a resumed session, from the
// pick of its file to the engine ready for the first request: the load,
// the file-history snapshots read beside it, the writer, the tools and
// the state they take from the conversation (todos, plan, pins). The
// transcript is generated (one unbroken chain, no compaction) with a
// file-history snapshot after each prompt, as Claude Code writes them.
//
//	go test -run '^$' -bench OpenResume -benchtime 5x ./internal/agent/
func BenchmarkOpenResume(b *testing.B) {
	for _, size := range []int64{10 << 20, 100 << 20} {
		b.Run(fmt.Sprintf("%dMB", size>>20), func(b *testing.B) {
			home, cwd := session.Home{Dir: b.TempDir()}, b.TempDir()
			store := home.Store(cwd)
			id := writeResumable(b, store.Path, size)
			m, err := anthropic.New(anthropic.Config{BaseURL: "http://127.0.0.1:1", APIKey: "k"})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(size)
			runtime.GC() // the generator's garbage is not the open's
			cpu := cpuTime()
			for b.Loop() {
				a, err := agent.Open(b.Context(), agent.Options{
					Home: home, Cwd: cwd, Store: store, Resume: id, Model: m, ModelName: "claude-test",
					MaxTokens: 4000, Tools: tools.Core(), Entrypoint: "sdk-cli",
				})
				if err != nil {
					b.Fatal(err)
				}
				if len(a.History()) == 0 {
					b.Fatal("nothing resumed")
				}
				if err := a.Close(); err != nil {
					b.Fatal(err)
				}
			}
			// On a shared machine the CPU an open takes (on all cores)
			// varies less than its wall time.
			b.ReportMetric(float64(cpuTime()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// writeResumable generates a session of about size bytes at the path
// pathOf gives its id, with a file-history snapshot after each prompt,
// and returns the id.
func writeResumable(b *testing.B, pathOf func(string) string, size int64) string {
	b.Helper()
	var buf bytes.Buffer
	st, err := gen.Generate(&buf, gen.Options{Size: size, Seed: 13})
	if err != nil {
		b.Fatal(err)
	}
	path := pathOf(st.SessionID)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	n := 0
	for line := range bytes.Lines(buf.Bytes()) {
		w.Write(line)
		if bytes.HasPrefix(line, []byte(`{"type":"last-prompt"`)) {
			n++
			fmt.Fprintf(w, `{"type":"file-history-snapshot","messageId":"m%d","snapshot":{"messageId":"m%d","trackedFileBackups":{"/p/f%d.go":{"backupFileName":"0123456789abcdef@v%d","version":%d,"backupTime":"2026-01-12T10:00:00.000Z"}},"timestamp":"2026-01-12T10:00:00.000Z"},"isSnapshotUpdate":false}`+"\n", n, n, n%7, n, n)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	return st.SessionID
}
