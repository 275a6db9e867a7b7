package filehistory

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/tool"
)

// shellFixture is a fixture whose History tracks a real Bash tool.
func shellFixture(t *testing.T, bounds ShadowOptions) (*fixture, func(cmd string)) {
	t.Helper()
	f := &fixture{dir: filepath.Join(t.TempDir(), "file-history", "sess"), project: t.TempDir(), rec: &records{}}
	opts := f.options()
	if bounds.Budget == 0 {
		bounds.Budget = time.Hour // the fixture's clock moves a second a reading
	}
	opts.Shell = bounds
	f.h = New(opts, nil)
	t.Cleanup(func() { f.h.Close() })
	bash := TrackShell(tools.Bash{}, f.h)
	env := tool.NewEnv(f.project)
	return f, func(cmd string) {
		t.Helper()
		input, _ := json.Marshal(map[string]string{"command": cmd})
		res, err := bash.Run(context.Background(), env, input)
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", cmd, err, res.Content)
		}
	}
}

func TestShellChangesAreBackedUp(t *testing.T) {
	f, run := shellFixture(t, ShadowOptions{})
	os.Mkdir(f.path(".git"), 0o755)
	f.write(t, ".gitignore", "*.log\nbuild/\n", 0o644)
	f.write(t, "sed.txt", "alpha\n", 0o644)
	f.write(t, "gone.txt", "bye\n", 0o600)
	f.write(t, "old/name.txt", "moving\n", 0o644)
	f.write(t, "app.log", "ignored\n", 0o644)
	f.write(t, "build/out.bin", "ignored\n", 0o644)
	f.write(t, ".git/HEAD", "ref: refs/heads/main\n", 0o644)
	before := tree(t, f.project)

	f.prompt(t, "m1")
	run("cat sed.txt")
	if f.h.shadow != nil {
		t.Error("a read-only command made the shadow")
	}
	run("sed -i s/alpha/beta/ sed.txt")
	run("echo hi > new.txt && rm gone.txt")
	run("mv old/name.txt moved.txt && echo more >> app.log && echo x > build/out.bin")

	s, _ := f.h.Snapshot("m1")
	got := map[string]string{}
	for path, b := range s.Files {
		rel, _ := filepath.Rel(f.project, path)
		got[rel] = "absent"
		if b.Exists() {
			data, err := os.ReadFile(filepath.Join(f.dir, b.Name))
			if err != nil {
				t.Fatal(err)
			}
			fi, _ := os.Stat(filepath.Join(f.dir, b.Name))
			got[rel] = fmt.Sprintf("v%d %v %s", b.Version, fi.Mode().Perm(), data)
		}
	}
	want := map[string]string{
		"sed.txt":      "v1 -rw-r--r-- alpha\n",
		"new.txt":      "absent",
		"gone.txt":     "v1 -rw------- bye\n",
		"old/name.txt": "v1 -rw-r--r-- moving\n",
		"moved.txt":    "absent",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("snapshot after the commands (-want +got):\n%s", d)
	}
	if len(f.warnings) > 0 {
		t.Errorf("warnings: %q", f.warnings)
	}

	// Rewinding brings back everything but what git ignores.
	if _, err := f.h.Rewind(context.Background(), "m1", "undo"); err != nil {
		t.Fatal(err)
	}
	after := tree(t, f.project)
	before["app.log"] = after["app.log"]
	before["build/out.bin"] = after["build/out.bin"]
	if d := cmp.Diff(before, after); d != "" {
		t.Errorf("after the rewind (-want +got):\n%s", d)
	}

	// A file Edit backed up this turn is not backed up again by a command.
	f.prompt(t, "m2")
	f.edit(t, "sed.txt", "gamma\n")
	run("echo delta > sed.txt")
	s2, _ := f.h.Snapshot("m2")
	if b, _ := os.ReadFile(filepath.Join(f.dir, s2.Files[f.path("sed.txt")].Name)); string(b) != "alpha\n" {
		t.Errorf("sed.txt in m2 holds %q, want its state when m2 was sent", b)
	}

	// Close removes the shadow, not the backups.
	f.h.Close()
	if _, err := os.Stat(filepath.Join(f.dir, "shadow")); !os.IsNotExist(err) {
		t.Errorf("the shadow is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(f.dir, BackupName(f.path("gone.txt"), 1))); err != nil {
		t.Errorf("a backup went with the shadow: %v", err)
	}
}

// TestShellRacyChange: a command that rewrites a file with content of the
// same size within the same clock tick leaves its stat as it was; the
// shadow compares such files by content.
func TestShellRacyChange(t *testing.T) {
	f, run := shellFixture(t, ShadowOptions{})
	f.write(t, "a.txt", "aaaa", 0o644)
	future := time.Now().Add(time.Hour).Truncate(time.Second)
	os.Chtimes(f.path("a.txt"), future, future)
	f.prompt(t, "m1")
	stamp := future.Format("200601021504.05")
	run("printf bbbb > a.txt && touch -m -t " + stamp + " a.txt")
	s, _ := f.h.Snapshot("m1")
	b, ok := s.Files[f.path("a.txt")]
	if !ok {
		t.Fatal("the same-size change with the same mtime went unseen")
	}
	if data, _ := os.ReadFile(filepath.Join(f.dir, b.Name)); string(data) != "aaaa" {
		t.Errorf("backup holds %q", data)
	}
}

func TestShellBounds(t *testing.T) {
	t.Run("files", func(t *testing.T) {
		f, run := shellFixture(t, ShadowOptions{MaxFiles: 2})
		for _, n := range []string{"a", "b", "c", "d"} {
			f.write(t, n, n+"\n", 0o644)
		}
		f.prompt(t, "m1")
		run("echo x > a; echo x > d")
		run("echo y > b; echo y > c")
		s, _ := f.h.Snapshot("m1")
		if _, ok := s.Files[f.path("a")]; !ok || len(s.Files) != 2 {
			t.Errorf("tracked %v, want a and b only", keys(s.Files))
		}
		wantOnce(t, f.warnings, "more than 2 files")
	})
	t.Run("file size", func(t *testing.T) {
		f, run := shellFixture(t, ShadowOptions{MaxFileSize: 16})
		f.write(t, "big", strings.Repeat("x", 100), 0o644)
		f.write(t, "small", "s\n", 0o644)
		f.prompt(t, "m1")
		run("echo y >> big; echo y >> small")
		s, _ := f.h.Snapshot("m1")
		if _, ok := s.Files[f.path("big")]; ok || len(s.Files) != 1 {
			t.Errorf("tracked %v, want small only", keys(s.Files))
		}
		wantOnce(t, f.warnings, "larger than 16 bytes")
	})
	t.Run("bytes", func(t *testing.T) {
		f, run := shellFixture(t, ShadowOptions{MaxBytes: 10})
		f.write(t, "a", "1234567\n", 0o644)
		f.write(t, "b", "7654321\n", 0o644)
		f.prompt(t, "m1")
		run("echo x > a; echo x > b")
		s, _ := f.h.Snapshot("m1")
		if _, ok := s.Files[f.path("a")]; !ok || len(s.Files) != 1 {
			t.Errorf("tracked %v, want a only", keys(s.Files))
		}
		wantOnce(t, f.warnings, "more than 10 bytes")
		wantOnce(t, f.warnings, "had not been copied yet")
	})
	t.Run("repack", func(t *testing.T) {
		// Each look copies the changed file anew; the pack is rewritten
		// with only what is in use when it would outgrow its bound, and
		// what commands changed still comes out right.
		root, store := t.TempDir(), filepath.Join(t.TempDir(), "shadow")
		sh := newShadow(root, store, nil, ShadowOptions{MaxBytes: 25, Budget: time.Hour}, time.Now, func(s string) { t.Error(s) })
		defer sh.remove()
		os.WriteFile(filepath.Join(root, "a"), []byte("version 0\n"), 0o644)
		for i := 1; i <= 5; i++ {
			if err := sh.Before(context.Background()); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(root, "a"), []byte(fmt.Sprintf("version %d\n", i)), 0o644)
			changes, err := sh.After(context.Background())
			if err != nil || len(changes) != 1 {
				t.Fatalf("%d: %+v, %v", i, changes, err)
			}
			dst := filepath.Join(t.TempDir(), "b")
			if err := sh.export(changes[0].obj, dst, 0o644); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(dst); string(b) != fmt.Sprintf("version %d\n", i-1) {
				t.Errorf("%d: the copy holds %q", i, b)
			}
			if sh.bytes > 25 {
				t.Errorf("%d: the pack holds %d bytes", i, sh.bytes)
			}
		}
	})
	t.Run("time", func(t *testing.T) {
		// Every reading of this clock is past the budget: the walk stops
		// at its first check, and nothing is copied.
		f, run := shellFixture(t, ShadowOptions{Budget: time.Millisecond})
		for i := range 200 {
			f.write(t, fmt.Sprintf("f%03d", i), "x\n", 0o644)
		}
		f.prompt(t, "m1")
		run("true")
		run("echo y > f000 && echo y > f199 && rm f150")
		wantOnce(t, f.warnings, "looking through the project takes longer")
		wantOnce(t, f.warnings, "copying the project's files takes longer")
		// Nothing beyond the point the walk reached is taken for new or
		// deleted; the change to f000 has no copy to back it up.
		s, _ := f.h.Snapshot("m1")
		if len(s.Files) != 0 {
			t.Errorf("tracked %v, want nothing", keys(s.Files))
		}
		wantOnce(t, f.warnings, "f000, which cannot be rewound: it had not been copied yet")
	})
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, filepath.Base(k))
	}
	return out
}

func wantOnce(t *testing.T, warnings []string, s string) {
	t.Helper()
	n := 0
	for _, w := range warnings {
		if strings.Contains(w, s) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d warnings say %q, want 1: %q", n, s, warnings)
	}
}

func TestShellBackgroundAndReadOnlyPassThrough(t *testing.T) {
	f, _ := shellFixture(t, ShadowOptions{})
	f.prompt(t, "m1")
	bash := TrackShell(tools.Bash{}, f.h)
	for _, cmd := range []string{"ls", "git status"} {
		input, _ := json.Marshal(map[string]string{"command": cmd})
		if !bash.ReadOnly(input) {
			t.Errorf("%q: the wrapper changed ReadOnly", cmd)
		}
	}
	if bash.Spec().Name != "Bash" {
		t.Errorf("spec %q", bash.Spec().Name)
	}
	input := json.RawMessage(`{"command":"echo x > bg.txt","run_in_background":true}`)
	env := tool.NewEnv(f.project)
	env.SessionDir = t.TempDir()
	if _, err := bash.Run(context.Background(), env, input); err != nil {
		t.Fatal(err)
	}
	if f.h.shadow != nil {
		t.Error("a background command made the shadow")
	}
}
