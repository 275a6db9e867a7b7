package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMultiEdit(t *testing.T) {
	tests := []struct {
		name    string
		content string
		edits   any
		want    string // the file afterwards
	}{
		{
			name:    "in order, each on the previous result",
			content: "alpha\nbeta\ngamma\n",
			edits: []map[string]any{
				{"old_string": "alpha", "new_string": "ALPHA"},
				{"old_string": "ALPHA\nbeta", "new_string": "ALPHA\nBETA"},
				{"old_string": "gamma\n", "new_string": ""},
			},
			want: "ALPHA\nBETA\n",
		},
		{
			name:    "replace_all in one edit",
			content: "x := 1\ny := x + x\n",
			edits: []map[string]any{
				{"old_string": "x", "new_string": "n", "replace_all": true},
				{"old_string": "y :=", "new_string": "sum :="},
			},
			want: "n := 1\nsum := n + n\n",
		},
		{
			name:    "CRLF file edited with LF text",
			content: "one\r\ntwo\r\nthree\r\n",
			edits: []map[string]any{
				{"old_string": "one\ntwo", "new_string": "1\n2"},
				{"old_string": "three", "new_string": "3"},
			},
			want: "1\r\n2\r\n3\r\n",
		},
		{
			name:    "edits sent as a JSON string",
			content: "a b\n",
			edits:   `[{"old_string":"a","new_string":"A"},{"old_string":"b","new_string":"B"}]`,
			want:    "A B\n",
		},
		{
			name:    "one edit",
			content: "keep\n",
			edits:   []map[string]any{{"old_string": "keep", "new_string": "kept"}},
			want:    "kept\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t)
			path := filepath.Join(env.ProjectDir, "f.go")
			writeTestFile(t, path, tt.content)
			call(t, Read{}, env, map[string]any{"file_path": path})
			var backedUp []string
			env.BeforeChange = func(p string) error { backedUp = append(backedUp, p); return nil }
			r := call(t, MultiEdit{}, env, map[string]any{"file_path": path, "edits": tt.edits})
			if r.IsError {
				t.Fatal(text(t, r))
			}
			if got := readTestFile(t, path); got != tt.want {
				t.Errorf("file = %q, want %q", got, tt.want)
			}
			if diff := cmp.Diff([]string{path}, backedUp); diff != "" {
				t.Errorf("BeforeChange calls (-want +got):\n%s", diff)
			}
			d := r.Detail.(multiEditDetail)
			if d.OriginalFileContents != tt.content || d.FilePath != path {
				t.Errorf("detail = %+v", d)
			}
			// One patch for the whole change.
			if diff := cmp.Diff(structuredPatch(tt.content, tt.want), d.StructuredPatch); diff != "" {
				t.Errorf("structuredPatch (-want +got):\n%s", diff)
			}
			// The read state is current: another edit needs no Read.
			r = call(t, MultiEdit{}, env, map[string]any{"file_path": path, "edits": []map[string]any{{"old_string": tt.want, "new_string": tt.want + "more"}}})
			if r.IsError {
				t.Errorf("second call: %s", text(t, r))
			}
		})
	}
}

func TestMultiEditResult(t *testing.T) {
	env := newEnv(t)
	path := filepath.Join(env.ProjectDir, "f.txt")
	long := strings.Repeat("z", 60)
	writeTestFile(t, path, "a\nb\n"+long+"\n")
	call(t, Read{}, env, map[string]any{"file_path": path})
	r := call(t, MultiEdit{}, env, map[string]any{"file_path": path, "edits": []map[string]any{
		{"old_string": "a", "new_string": "A"},
		{"old_string": long, "new_string": "short\n\"quoted\""},
	}})
	want := "Applied 2 edits to " + path + ":\n" +
		`1. Replaced "a" with "A"` + "\n" +
		`2. Replaced "` + strings.Repeat("z", 50) + `"… with "short\n\"quoted\""`
	if got := text(t, r); got != want {
		t.Errorf("text =\n%s\nwant\n%s", got, want)
	}
	wantDetail := map[string]any{
		"filePath": path,
		"edits": []any{
			map[string]any{"old_string": "a", "new_string": "A", "replace_all": false},
			map[string]any{"old_string": long, "new_string": "short\n\"quoted\"", "replace_all": false},
		},
		"originalFileContents": "a\nb\n" + long + "\n",
		"structuredPatch": []any{map[string]any{
			"oldStart": 1.0, "oldLines": 3.0, "newStart": 1.0, "newLines": 4.0,
			"lines": []any{"-a", "+A", " b", "-" + long, "+short", `+"quoted"`},
		}},
		"userModified": false,
	}
	if diff := cmp.Diff(wantDetail, detail(t, r)); diff != "" {
		t.Errorf("detail (-want +got):\n%s", diff)
	}
}

func TestMultiEditCreates(t *testing.T) {
	env := newEnv(t)
	path := filepath.Join(env.ProjectDir, "sub", "new.txt")
	r := call(t, MultiEdit{}, env, map[string]any{"file_path": path, "edits": []map[string]any{
		{"old_string": "", "new_string": "hello world\n"},
	}})
	if r.IsError {
		t.Fatal(text(t, r))
	}
	if got := readTestFile(t, path); got != "hello world\n" {
		t.Errorf("file = %q", got)
	}
	if d := r.Detail.(multiEditDetail); d.OriginalFileContents != "" || len(d.StructuredPatch) != 1 {
		t.Errorf("detail = %+v", d)
	}
	if seen, ok := env.Files.Seen(path); !ok || seen.Partial {
		t.Errorf("the new file is not known in full: %+v, %v", seen, ok)
	}
}

func TestMultiEditRefused(t *testing.T) {
	tests := []struct {
		name    string
		content string
		read    bool
		change  string // written after the Read
		edits   any
		want    string
	}{
		{"not read", "a\n", false, "", []map[string]any{{"old_string": "a", "new_string": "b"}}, "has not been read yet"},
		{"stale", "a\n", true, "a\nadded by the user\n", []map[string]any{{"old_string": "a", "new_string": "b"}}, "modified since it was last read"},
		{"a later edit does not match", "a\nb\n", true, "", []map[string]any{
			{"old_string": "a", "new_string": "A"}, {"old_string": "zzz", "new_string": "Z"},
		}, "Edit 2 of 2 failed, so none was applied: String to replace not found"},
		{"a later edit is ambiguous", "a\nx x\n", true, "", []map[string]any{
			{"old_string": "a", "new_string": "A"}, {"old_string": "x", "new_string": "y"},
		}, "Edit 2 of 2 failed, so none was applied: Found 2 matches"},
		{"an edit changes nothing", "a\n", true, "", []map[string]any{
			{"old_string": "a", "new_string": "b"}, {"old_string": "c", "new_string": "c"},
		}, "Edit 2 of 2 failed, so none was applied: No changes to make"},
		{"an edit would match inserted text", "foo\n", true, "", []map[string]any{
			{"old_string": "foo", "new_string": "foo bar"}, {"old_string": "bar", "new_string": "baz"},
		}, "the old_string of edit 2 occurs in the new_string of edit 1"},
		{"the edits cancel out", "a\n", true, "", []map[string]any{
			{"old_string": "a", "new_string": "b"}, {"old_string": "b\n", "new_string": "a\n"},
		}, "exactly as it was"},
		{"empty old_string on a full file", "a\n", true, "", []map[string]any{{"old_string": "", "new_string": "b"}}, "already has content"},
		{"no edits", "a\n", true, "", []map[string]any{}, "must hold at least one edit"},
		{"edits not an array", "a\n", true, "", map[string]any{"old_string": "a"}, `parameter "edits" must be an array`},
		{"an edit lacks new_string", "a\n", true, "", []map[string]any{{"old_string": "a"}}, `edits[0]: the required parameter "new_string" is missing`},
		{"an edit has an unknown field", "a\n", true, "", []map[string]any{{"old_string": "a", "new_string": "b", "expected_replacements": 1}}, `edits[0]: unknown parameter "expected_replacements"; each edit takes old_string, new_string, replace_all`},
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
			env.BeforeChange = func(string) error { t.Error("BeforeChange called for a refused call"); return nil }
			r := call(t, MultiEdit{}, env, map[string]any{"file_path": path, "edits": tt.edits})
			if !r.IsError || !strings.Contains(text(t, r), tt.want) {
				t.Errorf("got %q (error %v), want an error containing %q", text(t, r), r.IsError, tt.want)
			}
			if got := readTestFile(t, path); got != before {
				t.Errorf("the file changed to %q", got)
			}
		})
	}
}

func TestMultiEditMissingFile(t *testing.T) {
	env := newEnv(t)
	path := filepath.Join(env.ProjectDir, "nope.txt")
	r := call(t, MultiEdit{}, env, map[string]any{"file_path": path, "edits": []map[string]any{{"old_string": "x", "new_string": "y"}}})
	if !r.IsError || !strings.Contains(text(t, r), "File does not exist") {
		t.Errorf("edit of a missing file: %q", text(t, r))
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("a missing file was created")
	}
	r = call(t, MultiEdit{}, env, map[string]any{"file_path": "rel.txt", "edits": []map[string]any{{"old_string": "", "new_string": "y"}}})
	if !r.IsError || !strings.Contains(text(t, r), "must be an absolute path") {
		t.Errorf("relative path: %q", text(t, r))
	}
}

func TestMultiEditSafety(t *testing.T) {
	in := json.RawMessage(`{"file_path":"/x","edits":[{"old_string":"a","new_string":"b"}]}`)
	if (MultiEdit{}).ReadOnly(in) || (MultiEdit{}).Destructive(in) || (MultiEdit{}).ConcurrencySafe(in) {
		t.Error("MultiEdit must be neither read-only, destructive nor concurrency-safe")
	}
}
