package tui_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies checks the direction of imports, as tailscale's
// deptest does: the UI libraries and the command-line framework are
// imported only by the UI and the command line, and nothing but the
// command line imports the UI.
func TestDependencies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	const module = "github.com/cairn-dev/cairn"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	uiOrCLI := func(pkg string) bool {
		return pkg == module+"/internal/tui" || pkg == module+"/internal/cli" || strings.HasPrefix(pkg, module+"/cmd/")
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		for _, imp := range imports {
			switch {
			case uiOrCLI(pkg):
				if imp == module+"/internal/tui" && pkg != module+"/internal/cli" {
					t.Errorf("%s imports the UI; only internal/cli may", pkg)
				}
			case strings.HasPrefix(imp, "charm.land/"), strings.HasPrefix(imp, "github.com/charmbracelet/"):
				t.Errorf("%s imports %s: terminal UI libraries belong in internal/tui", pkg, imp)
			case imp == "github.com/spf13/cobra", imp == "github.com/spf13/pflag":
				t.Errorf("%s imports %s: the command-line framework belongs in internal/cli", pkg, imp)
			case imp == module+"/internal/tui", imp == module+"/internal/cli":
				t.Errorf("%s imports %s: library packages must not import the UI or the command line", pkg, imp)
			}
		}
	}
}
