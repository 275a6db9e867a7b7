package ccoracle_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/ccoracle"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/session"
)

// golden is what testdata/<scenario>/view.json holds: the session, where
// it ran, and the conversation Claude Code sent on its resume of it.
type golden struct {
	Version  string          `json:"claudeCodeVersion"`
	Session  string          `json:"session"`
	Cwd      string          `json:"cwd"`
	Messages []model.Message `json:"messages"`
}

// writeGolden replaces testdata/<name> with the scenario's files (the
// project folder of home, redacted) and Claude Code's resume view.
func writeGolden(t *testing.T, name, home, dir, id string, want []model.Message) {
	t.Helper()
	root := filepath.Join("testdata", name)
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	proj := session.Home{Dir: filepath.Join(home, ".claude")}.ProjectDir(dir)
	err := filepath.Walk(proj, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(proj, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, ".jsonl") {
			b = ccoracle.RedactTranscript(b)
		}
		dst := filepath.Join(root, "files", rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	g := golden{Version: ccoracle.Version, Session: id, Cwd: dir, Messages: ccoracle.Normalize(ccoracle.RedactMessages(want))}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // as the transcripts have it
	enc.SetIndent("", "  ")
	if err := enc.Encode(g); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "view.json"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGoldens loads each recorded Claude Code transcript in testdata with
// cairn and compares its resume view with the one Claude Code sent, so
// the loader is held to real 2.1.332 files even where the binary is not
// installed. Regenerate with: go test ./internal/ccoracle -run TestMatrix -update
func TestGoldens(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "*", "view.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no goldens in testdata; record them with go test ./internal/ccoracle -run TestMatrix -update")
	}
	for _, v := range dirs {
		root := filepath.Dir(v)
		t.Run(filepath.Base(root), func(t *testing.T) {
			b, err := os.ReadFile(v)
			if err != nil {
				t.Fatal(err)
			}
			var g golden
			if err := json.Unmarshal(b, &g); err != nil {
				t.Fatal(err)
			}
			got, warnings := loadView(t, filepath.Join(root, "files", g.Session+".jsonl"))
			if d := diffViews(g.Messages, ccoracle.RedactMessages(got)); d != "" {
				t.Errorf("cairn's resume view of Claude Code %s's file differs from Claude Code's own resume (-claude +cairn):\n%s", g.Version, d)
			}
			if len(warnings) > 0 {
				t.Errorf("cairn warned on Claude Code's own file: %q", warnings)
			}
		})
	}
}
