package ccoracle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
