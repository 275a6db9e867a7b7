package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEdit(t *testing.T) {
	tests := []struct {
		name    string
		content string
		input   map[string]any
		want    string // the file afterwards
	}{
		{
			name:    "unique match",
			content: "func a() {}\nfunc b() {}\n",
			input:   map[string]any{"old_string": "b()", "new_string": "c()"},
			want:    "func a() {}\nfunc c() {}\n",
		},
		{
			name:    "replace all",
			content: "x := 1\ny := x + x\n",
			input:   map[string]any{"old_string": "x", "new_string": "count", "replace_all": true},
			want:    "count := 1\ny := count + count\n",
		},
		{
			name:    "replace_all as a string",
			content: "a a\n",
			input:   map[string]any{"old_string": "a", "new_string": "b", "replace_all": "true"},
			want:    "b b\n",
		},
		{
			name:    "deleting a line takes its newline",
			content: "keep\ndrop me\nkeep too\n",
			input:   map[string]any{"old_string": "drop me", "new_string": ""},
			want:    "keep\nkeep too\n",
		},
		{
			name:    "CRLF file edited with LF text",
			content: "one\r\ntwo\r\nthree\r\n",
			input:   map[string]any{"old_string": "one\ntwo", "new_string": "1\n2"},
			want:    "1\r\n2\r\nthree\r\n",
		},
		{
			name:    "filling an empty file",
			content: "",
			input:   map[string]any{"old_string": "", "new_string": "hello\n"},
			want:    "hello\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t)
			path := filepath.Join(env.ProjectDir, "f.go")
			writeTestFile(t, path, tt.content)
			call(t, Read{}, env, map[string]any{"file_path": path})
			var backedUp int
			env.BeforeChange = func(string) error { backedUp++; return nil }
			input := map[string]any{"file_path": path}
			for k, v := range tt.input {
				input[k] = v
			}
			r := call(t, Edit{}, env, input)
			if r.IsError {
				t.Fatal(text(t, r))
			}
			if got, want := text(t, r), "The file "+path+" has been updated successfully."+stateNote; got != want {
				t.Errorf("text = %q, want %q", got, want)
			}
			if got := readTestFile(t, path); got != tt.want {
				t.Errorf("file = %q, want %q", got, tt.want)
			}
			if backedUp != 1 {
				t.Errorf("BeforeChange called %d times, want 1", backedUp)
			}
			d := r.Detail.(editDetail)
			if d.OriginalFile != tt.content || d.FilePath != path {
				t.Errorf("detail = %+v", d)
			}
			// The state is current: a second edit needs no new Read.
			r = call(t, Edit{}, env, map[string]any{"file_path": path, "old_string": tt.want, "new_string": tt.want + "more"})
			if r.IsError {
				t.Errorf("second edit: %s", text(t, r))
			}
		})
	}
}

func TestEditDetail(t *testing.T) {
	env := newEnv(t)
	path := filepath.Join(env.ProjectDir, "f.txt")
	var lines []string
	for i := range 20 {
		lines = append(lines, "line "+string(rune('a'+i)))
	}
	content := strings.Join(lines, "\n") // no final newline
	writeTestFile(t, path, content)
	call(t, Read{}, env, map[string]any{"file_path": path})
	r := call(t, Edit{}, env, map[string]any{"file_path": path, "old_string": "line b", "new_string": "line B"})
	r2 := call(t, Edit{}, env, map[string]any{"file_path": path, "old_string": "line t", "new_string": "line T"})
	want := map[string]any{
		"filePath": path, "oldString": "line b", "newString": "line B", "originalFile": content,
		"structuredPatch": []any{map[string]any{
			"oldStart": 1.0, "oldLines": 5.0, "newStart": 1.0, "newLines": 5.0,
			"lines": []any{" line a", "-line b", "+line B", " line c", " line d", " line e"},
		}},
		"userModified": false, "replaceAll": false,
	}
	if diff := cmp.Diff(want, detail(t, r)); diff != "" {
		t.Errorf("detail (-want +got):\n%s", diff)
	}
	wantPatch := []hunk{{
		OldStart: 17, OldLines: 4, NewStart: 17, NewLines: 4,
		Lines: []string{" line q", " line r", " line s", "-line t", noNewline, "+line T", noNewline},
	}}
	if diff := cmp.Diff(wantPatch, r2.Detail.(editDetail).StructuredPatch); diff != "" {
		t.Errorf("patch at the end of a file without newline (-want +got):\n%s", diff)
	}
}

func TestEditRefused(t *testing.T) {
	tests := []struct {
		name    string
		content string
		read    bool
		change  string // written after the Read
		input   map[string]any
		want    string
	}{
		{"not read", "a\n", false, "", map[string]any{"old_string": "a", "new_string": "b"}, "has not been read yet"},
		{"stale", "a\n", true, "a\nadded by the user\n", map[string]any{"old_string": "a", "new_string": "b"}, "modified since it was last read"},
		{"not found", "a\n", true, "", map[string]any{"old_string": "zzz", "new_string": "b"}, "String to replace not found"},
		{"ambiguous", "x x\n", true, "", map[string]any{"old_string": "x", "new_string": "y"}, "Found 2 matches of old_string"},
		{"same strings", "a\n", true, "", map[string]any{"old_string": "a", "new_string": "a"}, "No changes to make"},
		{"empty old_string on a full file", "a\n", true, "", map[string]any{"old_string": "", "new_string": "b"}, "already has content"},
		{"missing new_string", "a\n", true, "", map[string]any{"old_string": "a"}, `"new_string" is missing`},
		{"replace_all not a boolean", "a\n", true, "", map[string]any{"old_string": "a", "new_string": "b", "replace_all": "yes"}, `"replace_all" must be true or false`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t)
			path := filepath.Join(env.ProjectDir, "f.txt")
			writeTestFile(t, path, tt.content)
			if tt.read {
				call(t, Read{}, env, map[string]any{"file_path": path})
			}
			if tt.change != "" {
				writeTestFile(t, path, tt.change)
			}
			before := readTestFile(t, path)
			input := map[string]any{"file_path": path}
			for k, v := range tt.input {
				input[k] = v
			}
			r := call(t, Edit{}, env, input)
			if !r.IsError || !strings.Contains(text(t, r), tt.want) {
				t.Errorf("got %q (error %v), want an error containing %q", text(t, r), r.IsError, tt.want)
			}
			if got := readTestFile(t, path); got != before {
				t.Errorf("the file changed to %q", got)
			}
		})
	}
}

func TestEditPartialRead(t *testing.T) {
	env := newEnv(t)
	path := filepath.Join(env.ProjectDir, "f.txt")
	writeTestFile(t, path, "a\nb\nc\n")
	call(t, Read{}, env, map[string]any{"file_path": path, "offset": 2, "limit": 1})
	if r := call(t, Edit{}, env, map[string]any{"file_path": path, "old_string": "b", "new_string": "B"}); r.IsError {
		t.Fatalf("edit after a partial read: %s", text(t, r))
	}
	if seen, _ := env.Files.Seen(path); !seen.Partial {
		t.Error("an edit made a partial read look complete")
	}
}

func TestEditCreates(t *testing.T) {
	env := newEnv(t)
	path := filepath.Join(env.ProjectDir, "sub", "new.txt")
	r := call(t, Edit{}, env, map[string]any{"file_path": path, "old_string": "", "new_string": "fresh\n"})
	if r.IsError {
		t.Fatal(text(t, r))
	}
	if got := readTestFile(t, path); got != "fresh\n" {
		t.Errorf("file = %q", got)
	}
	r = call(t, Edit{}, env, map[string]any{"file_path": filepath.Join(env.ProjectDir, "nope.txt"), "old_string": "x", "new_string": "y"})
	if !r.IsError || !strings.Contains(text(t, r), "File does not exist") {
		t.Errorf("edit of a missing file: %q", text(t, r))
	}
	if _, err := os.Stat(filepath.Join(env.ProjectDir, "nope.txt")); err == nil {
		t.Error("a missing file was created")
	}
}

func TestEditSafety(t *testing.T) {
	in := json.RawMessage(`{"file_path":"/x","old_string":"a","new_string":"b"}`)
	if (Edit{}).ReadOnly(in) || (Edit{}).Destructive(in) || (Edit{}).ConcurrencySafe(in) {
		t.Error("Edit must be neither read-only, destructive nor concurrency-safe")
	}
}
