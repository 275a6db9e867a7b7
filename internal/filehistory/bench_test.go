package filehistory

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/bench/gen"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// BenchmarkLoad measures Load of the snapshots of a generated 100 MB
// transcript (one chain, no compaction) with a snapshot after each
// prompt, as Claude Code writes them: each lists every file tracked so
// far (up to 100), one of them at a new version, read from a file.
//
//	go test -run '^$' -bench 'Load$' -benchtime 10x ./internal/filehistory/
func BenchmarkLoad(b *testing.B) {
	var buf bytes.Buffer
	if _, err := gen.Generate(&buf, gen.Options{Size: 100 << 20, Seed: 13}); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "s.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	n := 0
	var versions []int
	for line := range bytes.Lines(buf.Bytes()) {
		w.Write(line)
		if !bytes.HasPrefix(line, []byte(`{"type":"last-prompt"`)) {
			continue
		}
		n++
		if len(versions) < 100 {
			versions = append(versions, 0)
		}
		versions[n%len(versions)]++
		var files []string
		for i, v := range versions {
			files = append(files, fmt.Sprintf(`"/home/user/proj/pkg%d/file%d.go":{"backupFileName":"%s","version":%d,"backupTime":"2026-01-12T10:%02d:00.000Z"}`, i/10, i, BackupName(fmt.Sprint(i), v), v, v%60))
		}
		fmt.Fprintf(w, `{"type":"file-history-snapshot","messageId":"m%d","snapshot":{"messageId":"m%d","trackedFileBackups":{%s},"timestamp":"2026-01-12T10:00:00.000Z"},"isSnapshotUpdate":false}`+"\n", n, n, strings.Join(files, ","))
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	b.SetBytes(int64(buf.Len()))
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		snaps, _, err := Load(context.Background(), f, "/p")
		f.Close()
		if err != nil || len(snaps) != n {
			b.Fatalf("%d snapshots of %d: %v", len(snaps), n, err)
		}
	}
}

// benchTree makes a project of n files of about 2 KB in folders of 100,
// last modified an hour ago (as a checkout is), in a git work tree that
// ignores one folder.
func benchTree(b *testing.B, n int) string {
	b.Helper()
	root := b.TempDir()
	os.Mkdir(filepath.Join(root, ".git"), 0o755)
	os.WriteFile(filepath.Join(root, ".gitignore"), []byte("node_modules/\n*.o\n"), 0o644)
	old := time.Now().Add(-time.Hour)
	line := strings.Repeat("x", 63) + "\n"
	for i := range n {
		dir := filepath.Join(root, fmt.Sprintf("pkg%03d", i/100))
		if i%100 == 0 {
			os.MkdirAll(dir, 0o755)
		}
		p := filepath.Join(dir, fmt.Sprintf("file%03d.go", i%100))
		if err := os.WriteFile(p, []byte(fmt.Sprintf("// %d\n", i)+strings.Repeat(line, 32)), 0o644); err != nil {
			b.Fatal(err)
		}
		os.Chtimes(p, old, old)
	}
	return root
}

// BenchmarkShadow measures the looks of a Shadow on a 5,000-file
// project (10 MB): the first, which walks the tree (and sets the watches
// up), and one before and one after a command that changed nothing, with
// the watches (events) and walking the tree each time (walk).
//
//	go test -run '^$' -bench Shadow -benchtime 20x ./internal/filehistory/
func BenchmarkShadow(b *testing.B) {
	root := benchTree(b, 5000)
	ctx := context.Background()
	for _, mode := range []string{"events", "walk"} {
		newSh := func() *Shadow {
			sh := newShadow(root, filepath.Join(b.TempDir(), "shadow"), nil, ShadowOptions{Budget: time.Minute}, time.Now, func(s string) { b.Log(s) })
			if mode == "walk" {
				sh.openWatch = noWatcher
			}
			return sh
		}
		b.Run(mode+"/first-look", func(b *testing.B) {
			for b.Loop() {
				sh := newSh()
				if err := sh.Before(ctx); err != nil {
					b.Fatal(err)
				}
				sh.remove()
			}
		})
		sh := newSh()
		if err := sh.Before(ctx); err != nil {
			b.Fatal(err)
		}
		b.Run(mode+"/before-unchanged", func(b *testing.B) {
			for b.Loop() {
				if err := sh.Before(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(mode+"/after-unchanged", func(b *testing.B) {
			for b.Loop() {
				if _, err := sh.After(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		sh.remove()
	}
}

// BenchmarkBashCall measures what TrackShell adds to a Bash call on a
// 5,000-file project: both looks, and backing up what the command
// changed; the command's own time is left out. A command changes nothing,
// or rewrites 10 files (others each time, so that each is backed up).
//
//	go test -run '^$' -bench BashCall -benchtime 100x ./internal/filehistory/
func BenchmarkBashCall(b *testing.B) {
	root := benchTree(b, 5000)
	ctx := context.Background()
	for _, mode := range []string{"events", "walk"} {
		for _, n := range []int{0, 10} {
			b.Run(fmt.Sprintf("%s/%d-files", mode, n), func(b *testing.B) {
				h := New(Options{Dir: b.TempDir(), Warn: func(s string) { b.Log(s) }, Shell: ShadowOptions{Budget: time.Minute}}, nil)
				defer h.Close()
				if mode == "walk" {
					h.shadowOf(root).openWatch = noWatcher
				}
				if err := h.Prompt(ctx, "m1"); err != nil {
					b.Fatal(err)
				}
				i := 0
				cmd := &fakeCommand{run: func() {
					b.StopTimer()
					defer b.StartTimer()
					for k := range n {
						f := i*n + k
						p := filepath.Join(root, fmt.Sprintf("pkg%03d", f%50), fmt.Sprintf("file%03d.go", (f/50)%100))
						if err := os.WriteFile(p, []byte(fmt.Sprintf("changed %d\n", i)), 0o644); err != nil {
							b.Fatal(err)
						}
					}
					i++
				}}
				bash := TrackShell(cmd, h)
				env := tool.NewEnv(root)
				// The first call makes the shadow: the first look walks
				// the tree.
				if _, err := bash.Run(ctx, env, json.RawMessage(`{"command":"x"}`)); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := bash.Run(ctx, env, json.RawMessage(`{"command":"x"}`)); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				s, _ := h.Snapshot("m1")
				if want := n * i; len(s.Files) != want {
					b.Fatalf("%d files backed up, want %d", len(s.Files), want)
				}
			})
		}
	}
}

// noWatcher makes a Shadow walk the tree at every look.
func noWatcher() (dirWatcher, error) { return nil, nil }

// fakeCommand is a shell tool whose every call runs run.
type fakeCommand struct{ run func() }

func (*fakeCommand) Spec() model.ToolSpec                 { return model.ToolSpec{Name: "Bash"} }
func (*fakeCommand) ReadOnly(json.RawMessage) bool        { return false }
func (*fakeCommand) Destructive(json.RawMessage) bool     { return false }
func (*fakeCommand) ConcurrencySafe(json.RawMessage) bool { return false }
func (c *fakeCommand) Run(context.Context, *tool.Env, json.RawMessage) (tool.Result, error) {
	c.run()
	return tool.Text("ok"), nil
}
