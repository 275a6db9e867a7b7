package cli

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/cairn-dev/cairn/internal/permission"
	"github.com/cairn-dev/cairn/internal/sandbox"
	"github.com/cairn-dev/cairn/internal/settings"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/tool"
)

// checkDirs checks that every --add-dir names a directory (relative ones
// are relative to cwd).
func checkDirs(cwd string, dirs []string) error {
	for _, d := range dirs {
		p := d
		if !filepath.IsAbs(p) && !strings.HasPrefix(p, "~") {
			p = filepath.Join(cwd, p)
		}
		if fi, err := os.Stat(p); !strings.HasPrefix(p, "~") && (err != nil || !fi.IsDir()) {
			return usagef("--add-dir %s: no such directory; give a directory that exists", d)
		}
	}
	return nil
}

// newSandbox builds the sandbox the settings ask for (key "sandbox") over
// the checker's project and added directories, and hands it to the
// checker; nil when the settings do not enable it. A sandbox that cannot
// run here is a warning, said once: commands then run as without it.
func newSandbox(st *settings.Settings, chk *permission.Checker, userHome string) (*sandbox.Sandbox, []string, error) {
	cfg, err := sandbox.Parse(st.Raw["sandbox"], st.Source["sandbox"])
	if err != nil {
		return nil, nil, err
	}
	sb := sandbox.New(cfg, sandbox.Options{Writable: chk.Roots(), Home: userHome})
	if sb == nil {
		return nil, nil, nil
	}
	chk.UseSandbox(sb)
	if !sb.Active() {
		return sb, []string{sb.Unavailable}, nil
	}
	return sb, nil, nil
}

// withSandbox gives the Bash tool of ts the sandbox.
func withSandbox(ts []tool.Tool, sb *sandbox.Sandbox) []tool.Tool {
	if !sb.Active() {
		return ts
	}
	out := make([]tool.Tool, len(ts))
	for i, t := range ts {
		if b, ok := t.(tools.Bash); ok {
			b.Sandbox = sb
			t = b
		}
		out[i] = t
	}
	return out
}
