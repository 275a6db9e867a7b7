package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProjectDirName(t *testing.T) {
	long := "/home/user/" + strings.Repeat("very-long-folder-name/", 10) + "project"
	tests := []struct {
		name, cwd, want string
	}{
		{"plain", "/home/user/proj", "-home-user-proj"},
		{"dots and spaces", "/work/my.app v2", "-work-my-app-v2"},
		{"non-ASCII is one dash per UTF-16 unit", "/tmp/café/😀", "-tmp-caf----"},
		{"over 200 characters gets a hash", long, ProjectDirName(long)[:200] + "-" + "yxvjy8"}, // computed independently (Python, Java hashCode)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ProjectDirName(tt.cwd); got != tt.want {
				t.Errorf("ProjectDirName(%q) = %q, want %q", tt.cwd, got, tt.want)
			}
		})
	}
}

// Java's String.hashCode of "hello" is 99162322, and of "polygenelubricants"
// Integer.MIN_VALUE: |h| must not overflow.
func TestJavaHash(t *testing.T) {
	if got := javaHashAbs("hello"); got != 99162322 {
		t.Errorf("hash(hello) = %d", got)
	}
	if got := javaHashAbs("polygenelubricants"); got != 2147483648 {
		t.Errorf("hash(polygenelubricants) = %d, want 2^31", got)
	}
}

func TestProjectDirFindsAnotherHash(t *testing.T) {
	home := Home{Dir: t.TempDir()}
	long := "/x/" + strings.Repeat("a", 250)
	name := ProjectDirName(long)
	// Claude Code's Node build hashes differently: same 200-character
	// prefix, another suffix.
	other := filepath.Join(home.Projects(), name[:201]+"zzz")
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if got := home.ProjectDir(long); got != other {
		t.Errorf("ProjectDir = %q, want the existing %q", got, other)
	}
	if got := home.ProjectDir("/short"); got != filepath.Join(home.Projects(), "-short") {
		t.Errorf("ProjectDir(/short) = %q", got)
	}
}
