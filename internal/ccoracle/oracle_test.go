package ccoracle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFind: a binary of another version, or none, is refused with a
// message naming what was found and what is needed.
func TestFind(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "claude-old")
	if err := os.WriteFile(old, []byte("#!/bin/sh\necho '2.1.197 (Claude Code)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	right := filepath.Join(dir, "claude-right")
	if err := os.WriteFile(right, []byte("#!/bin/sh\necho '"+Version+" (Claude Code)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, bin string
		want      []string // in the error; nil: found
	}{
		{"other version", old, []string{"2.1.197", Version, old}},
		{"missing", filepath.Join(dir, "nope"), []string{EnvBinary, "nope", "npm install @anthropic-ai/claude-code@" + Version}},
		{"pinned version", right, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvBinary, tt.bin)
			o, err := Find()
			if tt.want == nil {
				if err != nil || o.Path != tt.bin {
					t.Fatalf("Find() = %v, %v; want %s", o, err, tt.bin)
				}
				return
			}
			if err == nil {
				t.Fatalf("Find() found %s; want an error", o.Path)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

// A line of output longer than Run reads is an error naming the limit,
// not output that ends silently; the program is stopped.
func TestRunLineTooLong(t *testing.T) {
	defer func(n int) { maxEventLine = n }(maxEventLine)
	maxEventLine = 4096
	dir := t.TempDir()
	fake := filepath.Join(dir, "claude")
	script := "#!/bin/sh\necho '{\"type\":\"system\",\"session_id\":\"s1\"}'\nhead -c 10000 /dev/zero | tr '\\0' x\necho\necho '{\"type\":\"result\",\"session_id\":\"s1\"}'\nexec sleep 30\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	o := &Oracle{Path: fake}
	res, err := o.Run(t.Context(), Run{Home: t.TempDir(), Dir: dir, BaseURL: "http://127.0.0.1:1", Prompt: "hi", Timeout: 20 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "token too long") || !strings.Contains(err.Error(), "4096 bytes") || !strings.Contains(err.Error(), "after 1 events") {
		t.Fatalf("err = %v, want the too-long line named", err)
	}
	if res == nil || len(res.Events) != 1 || res.SessionID != "s1" {
		t.Errorf("result %+v: want the event before the long line", res)
	}
}
