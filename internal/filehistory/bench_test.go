package filehistory

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

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

// BenchmarkShadow measures the looks TrackShell takes around a command,
// on a 5,000-file project (10 MB):
//
//	go test -run '^$' -bench Shadow -benchtime 20x ./internal/filehistory/
func BenchmarkShadow(b *testing.B) {
	root := benchTree(b, 5000)
	ctx := context.Background()
	newSh := func() *Shadow {
		return newShadow(root, filepath.Join(b.TempDir(), "shadow"), nil, ShadowOptions{Budget: time.Minute}, time.Now, func(s string) { b.Log(s) })
	}
	b.Run("first-look", func(b *testing.B) {
		for b.Loop() {
			if err := newSh().Before(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	sh := newSh()
	if err := sh.Before(ctx); err != nil {
		b.Fatal(err)
	}
	b.Run("before-unchanged", func(b *testing.B) {
		for b.Loop() {
			if err := sh.Before(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("after-unchanged", func(b *testing.B) {
		for b.Loop() {
			if _, err := sh.After(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("command-changing-10-files", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if err := sh.Before(ctx); err != nil {
				b.Fatal(err)
			}
			for k := range 10 {
				p := filepath.Join(root, fmt.Sprintf("pkg%03d", k*5), "file007.go")
				os.WriteFile(p, []byte(fmt.Sprintf("changed %d\n", i)), 0o644)
			}
			i++
			changes, err := sh.After(ctx)
			if err != nil || len(changes) != 10 {
				b.Fatalf("%d changes, %v", len(changes), err)
			}
		}
	})
}
