package tools

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/tool"
)

func TestWriteCreate(t *testing.T) {
	env := newEnv(t)
	var backedUp []string
	env.BeforeChange = func(p string) error { backedUp = append(backedUp, p); return nil }
	path := filepath.Join(env.ProjectDir, "new", "dir", "f.txt")
	r := call(t, Write{}, env, map[string]any{"file_path": path, "content": "hi\n"})
	if r.IsError {
		t.Fatal(text(t, r))
	}
	if got, want := text(t, r), "File created successfully at: "+path+stateNote; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	if got := readTestFile(t, path); got != "hi\n" {
		t.Errorf("file = %q", got)
	}
	want := map[string]any{"type": "create", "filePath": path, "content": "hi\n", "structuredPatch": []any{}, "originalFile": nil, "userModified": false}
	if diff := cmp.Diff(want, detail(t, r)); diff != "" {
		t.Errorf("detail (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{path}, backedUp); diff != "" {
		t.Errorf("BeforeChange calls (-want +got):\n%s", diff)
	}
	// The model knows the file it wrote: a second write needs no Read.
	if r := call(t, Write{}, env, map[string]any{"file_path": path, "content": "again\n"}); r.IsError {
		t.Errorf("rewrite of a file just written: %s", text(t, r))
	}
}

func TestWriteUpdate(t *testing.T) {
	env := newEnv(t)
	path := filepath.Join(env.ProjectDir, "f.sh")
	writeTestFile(t, path, "a\nb\nc\n")
	if err := os.Chmod(path, 0o751); err != nil {
		t.Fatal(err)
	}
	call(t, Read{}, env, map[string]any{"file_path": path})
	r := call(t, Write{}, env, map[string]any{"file_path": path, "content": "a\nB\nc\n"})
	if r.IsError {
		t.Fatal(text(t, r))
	}
	if got, want := text(t, r), "The file "+path+" has been updated successfully."+stateNote; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	want := map[string]any{
		"type": "update", "filePath": path, "content": "a\nB\nc\n",
		"structuredPatch": []any{map[string]any{
			"oldStart": 1.0, "oldLines": 3.0, "newStart": 1.0, "newLines": 3.0,
			"lines": []any{" a", "-b", "+B", " c"},
		}},
		"originalFile": "a\nb\nc\n", "userModified": false,
	}
	if diff := cmp.Diff(want, detail(t, r)); diff != "" {
		t.Errorf("detail (-want +got):\n%s", diff)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o751 {
		t.Errorf("mode = %v, want 0751 kept", fi.Mode().Perm())
	}
}

func TestWriteRefused(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, env *tool.Env, path string)
		want  string
	}{
		{
			name:  "not read",
			setup: func(t *testing.T, env *tool.Env, path string) {},
			want:  "has not been read yet",
		},
		{
			name: "changed since read",
			setup: func(t *testing.T, env *tool.Env, path string) {
				call(t, Read{}, env, map[string]any{"file_path": path})
				writeTestFile(t, path, "changed by someone else\n")
			},
			want: "modified since it was last read",
		},
		{
			name: "touched since read",
			setup: func(t *testing.T, env *tool.Env, path string) {
				call(t, Read{}, env, map[string]any{"file_path": path})
				later := time.Now().Add(time.Hour)
				if err := os.Chtimes(path, later, later); err != nil {
					t.Fatal(err)
				}
			},
			want: "modified since it was last read",
		},
		{
			name: "read only in part",
			setup: func(t *testing.T, env *tool.Env, path string) {
				call(t, Read{}, env, map[string]any{"file_path": path, "limit": 1})
			},
			want: "only part of",
		},
		{
			name: "backup fails",
			setup: func(t *testing.T, env *tool.Env, path string) {
				call(t, Read{}, env, map[string]any{"file_path": path})
				env.BeforeChange = func(string) error { return errors.New("disk full") }
			},
			want: "disk full",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t)
			path := filepath.Join(env.ProjectDir, "f.txt")
			writeTestFile(t, path, "one\ntwo\n")
			tt.setup(t, env, path)
			before := readTestFile(t, path)
			r := call(t, Write{}, env, map[string]any{"file_path": path, "content": "new\n"})
			if !r.IsError || !strings.Contains(text(t, r), tt.want) {
				t.Errorf("got %q (error %v), want an error containing %q", text(t, r), r.IsError, tt.want)
			}
			if got := readTestFile(t, path); got != before {
				t.Errorf("the file changed to %q", got)
			}
		})
	}
}

func TestWriteInputErrors(t *testing.T) {
	env := newEnv(t)
	for name, input := range map[string]any{
		"no content":    map[string]any{"file_path": filepath.Join(env.ProjectDir, "x")},
		"relative path": map[string]any{"file_path": "x", "content": ""},
		"directory":     map[string]any{"file_path": env.ProjectDir, "content": ""},
	} {
		if r := call(t, Write{}, env, input); !r.IsError {
			t.Errorf("%s: accepted", name)
		}
	}
	// An empty content is a valid (empty) file.
	path := filepath.Join(env.ProjectDir, "empty")
	if r := call(t, Write{}, env, map[string]any{"file_path": path, "content": ""}); r.IsError {
		t.Errorf("empty content: %s", text(t, r))
	}
}

func TestWriteThroughSymlink(t *testing.T) {
	env := newEnv(t)
	target := filepath.Join(env.ProjectDir, "real.txt")
	link := filepath.Join(env.ProjectDir, "link.txt")
	writeTestFile(t, target, "old\n")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	call(t, Read{}, env, map[string]any{"file_path": link})
	if r := call(t, Write{}, env, map[string]any{"file_path": link, "content": "new\n"}); r.IsError {
		t.Fatal(text(t, r))
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced by a file")
	}
	if got := readTestFile(t, target); got != "new\n" {
		t.Errorf("target = %q", got)
	}
}

func TestWriteSafety(t *testing.T) {
	in := json.RawMessage(`{"file_path":"/x","content":""}`)
	if (Write{}).ReadOnly(in) || (Write{}).Destructive(in) || (Write{}).ConcurrencySafe(in) {
		t.Error("Write must be neither read-only, destructive nor concurrency-safe")
	}
}
