package permission

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPathEscapes: paths that leave the project by .. or through a
// symbolic link inside it are outside the project, whatever the mode and
// whatever a rule written for the project says; a deny rule catches a
// file by its real path too. The Checker is used as the agent uses it.
func TestPathEscapes(t *testing.T) {
	root := t.TempDir()
	proj, outside := filepath.Join(root, "proj"), filepath.Join(root, "outside")
	write(t, filepath.Join(outside, "secret.txt"), "s\n")
	write(t, filepath.Join(proj, "src", "main.go"), "package main\n")
	write(t, filepath.Join(proj, ".env"), "KEY=1\n")
	for link, target := range map[string]string{"linkdir": outside, "linkfile": filepath.Join(outside, "secret.txt"), "alias": filepath.Join(proj, ".env")} {
		if err := os.Symlink(target, filepath.Join(proj, link)); err != nil {
			t.Skip("no symlinks:", err)
		}
	}
	write(t, filepath.Join(proj, ".cairn", "settings.json"), `{"permissions": {"allow": ["Edit(/**)", "Read(/**)"], "deny": ["Read(./.env)"]}}`)
	for _, mode := range []Mode{ModeDefault, ModeAcceptEdits} {
		c, err := New(Options{ProjectDir: proj, Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			tool, key, value string
			want             Behavior
		}{
			{"Read", "file_path", filepath.Join(proj, "src", "main.go"), Allow},
			{"Read", "file_path", proj + "/../outside/secret.txt", Ask},
			{"Read", "file_path", "../outside/secret.txt", Ask},
			{"Read", "file_path", filepath.Join(proj, "linkfile"), Ask},
			{"Read", "file_path", filepath.Join(proj, "linkdir", "secret.txt"), Ask},
			{"Grep", "path", filepath.Join(proj, "linkdir"), Ask},
			{"Edit", "file_path", proj + "/../outside/x.go", Ask},
			{"Write", "file_path", filepath.Join(proj, "linkdir", "new.txt"), Ask},
			{"Write", "file_path", filepath.Join(proj, "linkfile"), Ask},
			{"Edit", "file_path", filepath.Join(proj, "src", "main.go"), Allow},
			{"Read", "file_path", filepath.Join(proj, "alias"), Deny},
			{"Bash", "command", "cat linkdir/secret.txt", Ask},
			{"Bash", "command", "cat ../outside/secret.txt", Ask},
			{"Bash", "command", "echo x > linkfile", Ask},
			{"Bash", "command", "cat alias", Deny},
			{"Bash", "command", "cat src/main.go", Allow},
		} {
			in, _ := json.Marshal(map[string]string{tc.key: tc.value})
			ro, de := traits(tc.tool, in, proj)
			d := c.Check(context.Background(), named{tc.tool, ro, de}, in)
			if d.Behavior != tc.want {
				t.Errorf("%s: %s %s = %s, want %s (%s)", mode, tc.tool, strings.TrimPrefix(tc.value, root), d.Behavior, tc.want, d.Reason)
			}
		}
	}
}
