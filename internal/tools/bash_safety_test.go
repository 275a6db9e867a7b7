package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestBashSafety(t *testing.T) {
	existing := filepath.Join(t.TempDir(), "exists.txt")
	if err := os.WriteFile(existing, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(filepath.Dir(existing), "missing.txt")
	tests := []struct {
		command     string
		readOnly    bool
		destructive bool
	}{
		// Read-only.
		{"ls -la", true, false},
		{"cat a.go | grep -n func | head -20", true, false},
		{"git status && git log --oneline -5 && git diff HEAD~1", true, false},
		{"git -C sub --no-pager show HEAD:go.mod", true, false},
		{"find . -name '*.go' -type f", true, false},
		{"wc -l *.go 2>/dev/null; echo done", true, false},
		{"rg -n TODO src 2>&1", true, false},
		{"echo $(pwd) \"$HOME\"", true, false},
		{"for f in *.go; do wc -l \"$f\"; done", true, false},
		{"X=1; echo $X", true, false},
		{"sort -u names.txt", true, false},
		{"git branch -a", true, false},
		{"cat <<EOF\nhi\nEOF", true, false},
		{"/bin/ls", true, false},
		{"find . -name x -exec cat {} \\;", true, false}, // the command run for each file only reads
		{"xargs cat", true, false},

		// Not read-only, not destructive.
		{"npm install", false, false},
		{"go test ./...", false, false},
		{"echo hi > " + missing, false, false},
		{"echo hi >> " + existing, false, false},
		{"sort -o out.txt in.txt", false, false},

		{"rg --pre ./script foo", false, false},
		{"git commit -m x", false, false},
		{"git branch new-feature", false, false},
		{"git -c core.pager=evil log", false, false},
		{"GIT_EXTERNAL_DIFF=./x git diff", false, false},
		{"$CMD --version", false, false},
		{"ls; touch x", false, false},
		{"bash build.sh", false, false},
		{"f() { ls; }; f", false, false},
		{"sudo ls", false, false},

		{"git diff --output=patch.txt", false, false},

		// Destructive.
		{"rm -rf build", false, true},
		{"ls && rm x", false, true},
		{"ls | xargs rm", false, true},
		{"sudo rm -rf /", false, true},
		{"timeout 5 rm x", false, true},
		{"env A=1 rm x", false, true},
		{"r\\m x", false, true},
		{"'rm' x", false, true},
		{"echo $(rm -rf x)", false, true},
		{"bash -c 'rm -rf x'", false, true},
		{"sh -c \"git reset --hard\"", false, true},
		{"eval rm x", false, true},
		{"git reset --hard HEAD~1", false, true},
		{"git push --force origin main", false, true},
		{"git push origin +main", false, true},
		{"git clean -fdx", false, true},
		{"git checkout -- .", false, true},
		{"git restore src/a.go", false, true},
		{"git branch -D old", false, true},
		{"git stash drop", false, true},
		{"find . -name '*.o' -delete", false, true},
		{"find . -name '*.o' -exec rm {} +", false, true},
		{"dd if=/dev/zero of=disk.img", false, true},
		{"mkfs.ext4 /dev/sdb1", false, true},
		{"truncate -s 0 log.txt", false, true},
		{"shred secret", false, true},
		{"echo hi > " + existing, false, true},
		{"ls >| " + existing, false, true},
		{"cat a > \"$OUT\"", false, true},
		{"echo 'unterminated", false, false}, // unparseable: not judged safe; permissions ask

		// Not destructive after all.
		{"git reset HEAD file", false, false},
		{"git restore --staged a.go", false, false},
		{"git clean -n", true, false}, // a dry run only lists
		{"git push origin main", false, false},
		{"echo rm -rf /", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			in, _ := json.Marshal(map[string]string{"command": tt.command})
			got := struct{ readOnly, destructive bool }{Bash{}.ReadOnly(in), Bash{}.Destructive(in)}
			if got.readOnly != tt.readOnly || got.destructive != tt.destructive {
				t.Errorf("%q: read-only %v, destructive %v; want %v, %v",
					tt.command, got.readOnly, got.destructive, tt.readOnly, tt.destructive)
			}
		})
	}
}

func FuzzBashSafety(f *testing.F) {
	for _, s := range []string{"ls -la", "rm -rf x", "bash -c 'eval \"rm x\"'", "find . -exec rm {} +", "a=$(b) c > d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		if (Bash{}).ReadOnly(in) && (Bash{}).Destructive(in) {
			t.Errorf("%q is both read-only and destructive", cmd)
		}
	})
}
