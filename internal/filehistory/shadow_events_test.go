package filehistory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// shadowModes are the two ways a Shadow looks: kept current by folder
// watches, or walking the tree each time.
var shadowModes = []struct {
	name  string
	watch func() (dirWatcher, error)
}{
	{"events", openWatcher},
	{"walk", noWatcher},
}

// shadowFixture is a project with a Shadow, and what a look reports.
type shadowFixture struct {
	t        *testing.T
	root     string
	sh       *Shadow
	warnings []string
}

func newShadowFixture(t *testing.T, watch func() (dirWatcher, error), files map[string]string) *shadowFixture {
	t.Helper()
	f := &shadowFixture{t: t, root: t.TempDir()}
	for name, content := range files {
		f.write(name, content)
	}
	f.sh = newShadow(f.root, filepath.Join(t.TempDir(), "shadow"), nil, ShadowOptions{Budget: time.Hour}, time.Now, func(s string) { f.warnings = append(f.warnings, s) })
	f.sh.openWatch = watch
	t.Cleanup(func() { f.sh.remove() })
	return f
}

func (f *shadowFixture) path(name string) string {
	return filepath.Join(f.root, filepath.FromSlash(name))
}

func (f *shadowFixture) write(name, content string) {
	f.t.Helper()
	if err := os.MkdirAll(filepath.Dir(f.path(name)), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(f.path(name), []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// command runs cmd between two looks and returns what the looks saw it
// do, as "created a", "modified b: <content before>", "deleted c:
// <content before>".
func (f *shadowFixture) command(cmd func()) []string {
	f.t.Helper()
	ctx := context.Background()
	if err := f.sh.Before(ctx); err != nil {
		f.t.Fatal(err)
	}
	cmd()
	changes, err := f.sh.After(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	out := []string{}
	for _, c := range changes {
		rel, _ := filepath.Rel(f.root, c.path)
		rel = filepath.ToSlash(rel)
		switch {
		case c.kind == created:
			out = append(out, "created "+rel)
			continue
		case c.obj == "":
			out = append(out, fmt.Sprintf("%s %s: no copy (%s)", kindName(c.kind), rel, c.why))
			continue
		}
		dst := filepath.Join(f.t.TempDir(), "copy")
		if err := f.sh.export(c.obj, dst, c.mode); err != nil {
			f.t.Fatal(err)
		}
		b, _ := os.ReadFile(dst)
		out = append(out, fmt.Sprintf("%s %s: %s", kindName(c.kind), rel, b))
	}
	return out
}

func kindName(k changeKind) string {
	return [...]string{"created", "modified", "deleted"}[k]
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestShadowLooks runs commands that change a project in every way a
// look must see, with watches and by walking; both must report the same.
func TestShadowLooks(t *testing.T) {
	start := map[string]string{
		".gitignore":     "*.log\nbuild/\n",
		"a.txt":          "a",
		"b.txt":          "b",
		"keep.txt":       "keep",
		"dir/x.txt":      "x",
		"dir/sub/y.txt":  "y",
		"app.log":        "log",
		"build/out.bin":  "out",
		".git/HEAD":      "ref: refs/heads/main\n",
		"other/z.txt":    "z",
		"other/deep/w.c": "w",
	}
	tests := []struct {
		name string
		cmd  func(t *testing.T, f *shadowFixture)
		want []string
	}{
		{"nothing", func(t *testing.T, f *shadowFixture) {}, []string{}},
		{"create", func(t *testing.T, f *shadowFixture) { f.write("new.txt", "n") }, []string{"created new.txt"}},
		{"modify in place", func(t *testing.T, f *shadowFixture) {
			fh, err := os.OpenFile(f.path("a.txt"), os.O_WRONLY|os.O_APPEND, 0)
			must(t, err)
			fh.WriteString("ppended")
			must(t, fh.Close())
		}, []string{"modified a.txt: a"}},
		{"same size and time", func(t *testing.T, f *shadowFixture) {
			// The content changes; size and modification time are put back.
			fi, _ := os.Stat(f.path("a.txt"))
			f.write("a.txt", "A")
			must(t, os.Chtimes(f.path("a.txt"), fi.ModTime(), fi.ModTime()))
		}, []string{"modified a.txt: a"}},
		{"mode", func(t *testing.T, f *shadowFixture) { must(t, os.Chmod(f.path("a.txt"), 0o600)) }, []string{"modified a.txt: a"}},
		{"rename", func(t *testing.T, f *shadowFixture) { must(t, os.Rename(f.path("a.txt"), f.path("c.txt"))) },
			[]string{"deleted a.txt: a", "created c.txt"}},
		{"rename over another", func(t *testing.T, f *shadowFixture) { must(t, os.Rename(f.path("a.txt"), f.path("b.txt"))) },
			[]string{"deleted a.txt: a", "modified b.txt: b"}},
		{"delete", func(t *testing.T, f *shadowFixture) { must(t, os.Remove(f.path("b.txt"))) }, []string{"deleted b.txt: b"}},
		{"delete and make again", func(t *testing.T, f *shadowFixture) {
			must(t, os.Remove(f.path("b.txt")))
			f.write("b.txt", "B")
		}, []string{"modified b.txt: b"}},
		{"create and delete", func(t *testing.T, f *shadowFixture) {
			f.write("tmp.txt", "t")
			must(t, os.Remove(f.path("tmp.txt")))
		}, []string{}},
		{"new folders with files", func(t *testing.T, f *shadowFixture) {
			f.write("pkg/one.go", "1")
			f.write("pkg/inner/two.go", "2")
			f.write("pkg/inner/three.log", "ignored")
			f.write("pkg/build/four.go", "ignored")
		}, []string{"created pkg/inner/two.go", "created pkg/one.go"}},
		{"folder deleted", func(t *testing.T, f *shadowFixture) { must(t, os.RemoveAll(f.path("dir"))) },
			[]string{"deleted dir/sub/y.txt: y", "deleted dir/x.txt: x"}},
		{"folder moved", func(t *testing.T, f *shadowFixture) { must(t, os.Rename(f.path("dir"), f.path("other/moved"))) },
			[]string{"deleted dir/sub/y.txt: y", "deleted dir/x.txt: x", "created other/moved/sub/y.txt", "created other/moved/x.txt"}},
		{"folder moved out and back", func(t *testing.T, f *shadowFixture) {
			away := filepath.Join(t.TempDir(), "away")
			must(t, os.Rename(f.path("dir"), away))
			must(t, os.WriteFile(filepath.Join(away, "x.txt"), []byte("X"), 0o644))
			must(t, os.Rename(away, f.path("dir")))
		}, []string{"modified dir/x.txt: x"}},
		{"ignored files", func(t *testing.T, f *shadowFixture) {
			f.write("app.log", "more")
			f.write("new.log", "new")
			f.write("build/out.bin", "again")
			f.write("build/deeper/x", "x")
			f.write(".git/index", "i")
			f.write("dir/debug.log", "d")
		}, []string{}},
		{"gitignore changed", func(t *testing.T, f *shadowFixture) {
			// app.log comes into sight; it was there before, so it is not
			// new (a rewind must not delete it). new.txt is.
			f.write(".gitignore", "build/\n")
			f.write("new.txt", "n")
			f.write("build/x", "x")
		}, []string{"modified .gitignore: *.log\nbuild/\n", "created new.txt"}},
		{"symlink", func(t *testing.T, f *shadowFixture) {
			must(t, os.Symlink(f.path("a.txt"), f.path("link.txt")))
			must(t, os.Symlink(f.path("dir"), f.path("dirlink")))
		}, []string{}},
		{"file becomes folder", func(t *testing.T, f *shadowFixture) {
			must(t, os.Remove(f.path("b.txt")))
			f.write("b.txt/inside.txt", "i")
		}, []string{"deleted b.txt: b", "created b.txt/inside.txt"}},
	}
	for _, mode := range shadowModes {
		for _, tt := range tests {
			t.Run(mode.name+"/"+tt.name, func(t *testing.T) {
				f := newShadowFixture(t, mode.watch, start)
				// A first command that changes nothing, then a change
				// between commands (a person's edit), which the next look
				// must take in as the state before the command.
				if got := f.command(func() {}); len(got) != 0 {
					t.Fatalf("the first command changed %q", got)
				}
				f.write("keep.txt", "edited between commands")
				got := f.command(func() { tt.cmd(t, f) })
				if d := cmp.Diff(tt.want, got); d != "" {
					t.Errorf("changes (-want +got):\n%s", d)
				}
				// And the next command sees the tree as this one left it.
				if got := f.command(func() { f.write("keep.txt", "last") }); !cmp.Equal(got, []string{"modified keep.txt: edited between commands"}) {
					t.Errorf("the next command: %q", got)
				}
				if mode.name == "events" && runtime.GOOS == "linux" {
					want := 1
					if tt.name == "gitignore changed" {
						want = 2 // the ignore rules changed: the tree is walked again
					}
					if f.sh.walks != want {
						t.Errorf("the tree was walked %d times, want %d", f.sh.walks, want)
					}
				}
				if len(f.warnings) > 0 {
					t.Errorf("warnings: %q", f.warnings)
				}
			})
		}
	}
}

// faultyWatcher wraps a real watcher: it refuses folders past a limit,
// or loses events.
type faultyWatcher struct {
	dirWatcher
	limit    int // folders it watches before errWatchLimit; 0 for no limit
	n        int
	overflow bool // the next read reports lost events
}

func (w *faultyWatcher) add(dir string) (int32, error) {
	if w.n++; w.limit > 0 && w.n > w.limit {
		return 0, fmt.Errorf("inotify_add_watch %s: %w", dir, errWatchLimit)
	}
	return w.dirWatcher.add(dir)
}

func (w *faultyWatcher) read(fn func(watchEvent)) error {
	if w.overflow {
		w.overflow = false
		fn(watchEvent{kind: evOverflow})
	}
	return w.dirWatcher.read(fn)
}

func TestShadowWatchFaults(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("folder watches need Linux")
	}
	files := map[string]string{"a.txt": "a", "d1/b.txt": "b", "d2/c.txt": "c", "d3/d.txt": "d"}
	t.Run("watch limit", func(t *testing.T) {
		fw := &faultyWatcher{limit: 2}
		f := newShadowFixture(t, func() (dirWatcher, error) {
			w, err := openWatcher()
			fw.dirWatcher = w
			return fw, err
		}, files)
		got := f.command(func() { f.write("d3/d.txt", "D"); f.write("d3/e.txt", "e") })
		got = append(got, f.command(func() { must(t, os.Remove(f.path("d1/b.txt"))) })...)
		want := []string{"modified d3/d.txt: d", "created d3/e.txt", "deleted d1/b.txt: b"}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("changes (-want +got):\n%s", d)
		}
		wantOnce(t, f.warnings, "the inotify watch limit (fs.inotify.max_user_watches) is reached after 2 folders")
		if f.sh.watch != nil || f.sh.walks != 4 {
			t.Errorf("still watching (%v), or %d walks, want every look to walk", f.sh.watch, f.sh.walks)
		}
	})
	t.Run("lost events", func(t *testing.T) {
		fw := &faultyWatcher{}
		f := newShadowFixture(t, func() (dirWatcher, error) {
			w, err := openWatcher()
			fw.dirWatcher = w
			return fw, err
		}, files)
		f.command(func() {})
		got := f.command(func() {
			f.write("d2/c.txt", "C")
			fw.overflow = true
		})
		if d := cmp.Diff([]string{"modified d2/c.txt: c"}, got); d != "" {
			t.Errorf("changes (-want +got):\n%s", d)
		}
		// The look after the loss walked the tree, and made it current
		// again: the next command is seen through events.
		walks := f.sh.walks
		if got := f.command(func() { f.write("a.txt", "A") }); !cmp.Equal(got, []string{"modified a.txt: a"}) || f.sh.walks != walks {
			t.Errorf("after the loss: %q, %d walks (was %d)", got, f.sh.walks, walks)
		}
	})
	t.Run("no inotify", func(t *testing.T) {
		f := newShadowFixture(t, func() (dirWatcher, error) { return nil, errors.New("inotify is unavailable: too many open files") }, files)
		got := f.command(func() { f.write("a.txt", "A") })
		got = append(got, f.command(func() { f.write("a.txt", "AA") })...)
		if d := cmp.Diff([]string{"modified a.txt: a", "modified a.txt: A"}, got); d != "" {
			t.Errorf("changes (-want +got):\n%s", d)
		}
		wantOnce(t, f.warnings, "inotify is unavailable: too many open files; cairn looks through the whole project")
	})
	t.Run("project folder moved", func(t *testing.T) {
		f := newShadowFixture(t, openWatcher, files)
		f.command(func() {})
		away := filepath.Join(t.TempDir(), "away")
		got := f.command(func() { must(t, os.Rename(f.root, away)) })
		if len(got) != 4 || !strings.HasPrefix(got[0], "deleted a.txt") {
			t.Errorf("changes: %q, want every file deleted", got)
		}
	})
}
