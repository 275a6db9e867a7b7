package deptest

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const module = "github.com/cairn-dev/cairn"

// The UI and the command line, and the frameworks they are built on.
var (
	ui  = []string{module + "/internal/tui", "charm.land/"}
	cli = []string{module + "/internal/cli", "github.com/spf13/cobra", module + "/cmd/"}
)

// leaves are the small helpers every layer of the library may use:
// JSON scanning and writing, line files, file-fault wording, read-only
// file mappings.
var leaves = []string{module + "/internal/jsonscan", module + "/internal/jsonw", module + "/internal/jsonl", module + "/internal/fsfault", module + "/internal/filemap"}

// rules say which packages may not depend on which: a package whose path
// starts with one of of must not depend, even indirectly, on a package
// whose path starts with one of never, unless it starts with one of but.
//
// The first rules are the library's layers, bottom up: the model
// interface and its clients; the tool interface over the model's types;
// the engine, the loop over the two; the transcript schema and store,
// beside the engine. Each knows only what is below it and the leaves.
var rules = []struct {
	why   string
	of    []string
	never []string
	but   []string
}{
	{
		why:   "the model interface and its clients are the library's bottom layer",
		of:    []string{module + "/model"},
		never: []string{module + "/"},
		but:   concat([]string{module + "/model"}, leaves),
	},
	{
		why:   "the tool interface knows the model's types and nothing above them",
		of:    []string{module + "/tool"},
		never: []string{module + "/"},
		but:   concat([]string{module + "/tool", module + "/model"}, leaves),
	},
	{
		why:   "the engine is the loop over the model and the tools, with no business logic: no transcript, session, agent or layer of its own",
		of:    []string{module + "/engine"},
		never: []string{module + "/"},
		but:   concat([]string{module + "/engine", module + "/model", module + "/tool", module + "/internal/tokens"}, leaves),
	},
	{
		why:   "the transcript schema and store know the model's types, not the engine, the tools or sessions",
		of:    []string{module + "/transcript"},
		never: []string{module + "/"},
		but:   concat([]string{module + "/transcript", module + "/model", module + "/internal/tokens"}, leaves),
	},
	{
		why: "the engine and its public interfaces are a library for any program",
		of: []string{module + "/engine", module + "/model", module + "/tool", module + "/transcript",
			module + "/session", module + "/history"},
		never: concat(ui, cli, []string{module + "/internal/agent"}),
	},
	{
		why:   "library packages never import the UI; only the command line wires it in",
		of:    []string{module + "/"},
		never: ui,
	},
	{
		why:   "only main imports the command line",
		of:    []string{module + "/"},
		never: cli,
	},
}

// exempt are the packages a rule does not apply to: the team store, a
// transcript store that lists and searches sessions as package session
// does; the UI and the command line themselves, and main.
var exempt = map[string][]string{
	"the transcript schema and store know the model's types, not the engine, the tools or sessions": {module + "/transcript/pgstore"},
	"library packages never import the UI; only the command line wires it in":                       {module + "/internal/tui", module + "/internal/cli", module + "/cmd/"},
	"only main imports the command line":                                                            {module + "/internal/cli", module + "/cmd/"},
}

func concat(ss ...[]string) []string { return slices.Concat(ss...) }

// hasPrefix reports whether the package path s is one of prefixes or
// below one: "a/b" covers a/b and a/b/c, not a/bc; "a/" covers all of
// a's packages.
func hasPrefix(s string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool {
		if strings.HasSuffix(p, "/") {
			return strings.HasPrefix(s, p)
		}
		return s == p || strings.HasPrefix(s, p+"/")
	})
}

// deps returns every package of the module with its dependencies.
func deps(t *testing.T) map[string][]string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH: cannot list the packages' dependencies")
	}
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	m := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 0 {
			m[f[0]] = f[1:]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

// violations lists the dependencies in all that break a rule, and the
// rules no package was checked for.
func violations(all map[string][]string) []string {
	var out []string
	for _, r := range rules {
		checked := 0
		for pkg, ds := range all {
			if !hasPrefix(pkg, r.of) || hasPrefix(pkg, exempt[r.why]) {
				continue
			}
			checked++
			for _, d := range ds {
				if hasPrefix(d, r.never) && !hasPrefix(d, r.but) {
					out = append(out, pkg+" depends on "+d+", but "+r.why)
				}
			}
		}
		if checked == 0 {
			out = append(out, "no package is checked for: "+r.why)
		}
	}
	slices.Sort(out)
	return out
}

func TestImportDirection(t *testing.T) {
	all := deps(t)
	if len(all) < 10 {
		t.Fatalf("go list found %d packages: the module was not listed", len(all))
	}
	for _, v := range violations(all) {
		t.Error(v)
	}
}

// TestRulesCatch: the check finds dependencies that break the rules in a
// made-up module.
func TestRulesCatch(t *testing.T) {
	all := map[string][]string{
		module + "/engine":             {module + "/internal/jsonw", module + "/internal/tui", "charm.land/lipgloss/v2", module + "/transcript"},
		module + "/model":              {module + "/internal/jsonscan"},
		module + "/model/retry":        {module + "/model", module + "/tool"},
		module + "/tool":               {module + "/model", module + "/engine"},
		module + "/transcript":         {module + "/model", module + "/internal/tokens", module + "/internal/agent"},
		module + "/transcript/pgstore": {module + "/transcript", module + "/session", module + "/engine"},
		module + "/engineer":           {"github.com/spf13/cobra"},
		module + "/internal/tools":     {module + "/tool"},
		module + "/internal/tui":       {"charm.land/bubbletea/v2"},
		module + "/internal/cli":       {module + "/internal/tui", "github.com/spf13/cobra"},
		module + "/cmd/cairn":          {module + "/internal/cli"},
		module + "/session":            {module + "/internal/agent"},
	}
	want := []string{
		module + "/engine depends on charm.land/lipgloss/v2, but library packages never import the UI; only the command line wires it in",
		module + "/engine depends on charm.land/lipgloss/v2, but the engine and its public interfaces are a library for any program",
		module + "/engine depends on " + module + "/internal/tui, but library packages never import the UI; only the command line wires it in",
		module + "/engine depends on " + module + "/internal/tui, but the engine and its public interfaces are a library for any program",
		module + "/engine depends on " + module + "/internal/tui, but the engine is the loop over the model and the tools, with no business logic: no transcript, session, agent or layer of its own",
		module + "/engine depends on " + module + "/transcript, but the engine is the loop over the model and the tools, with no business logic: no transcript, session, agent or layer of its own",
		module + "/model/retry depends on " + module + "/tool, but the model interface and its clients are the library's bottom layer",
		module + "/tool depends on " + module + "/engine, but the tool interface knows the model's types and nothing above them",
		module + "/transcript depends on " + module + "/internal/agent, but the engine and its public interfaces are a library for any program",
		module + "/transcript depends on " + module + "/internal/agent, but the transcript schema and store know the model's types, not the engine, the tools or sessions",
		module + "/engineer depends on github.com/spf13/cobra, but only main imports the command line",
		module + "/session depends on " + module + "/internal/agent, but the engine and its public interfaces are a library for any program",
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, violations(all)); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}
