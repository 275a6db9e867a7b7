package tui

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/internal/permission"
	"github.com/cairn-dev/cairn/internal/settings"
	"github.com/cairn-dev/cairn/internal/shellsafe"
	"github.com/cairn-dev/cairn/tool"
)

// SuggestRule is the allow rule that "Yes, and don't ask again" offers
// for a call of t, in Claude Code's syntax: for Bash a rule a command of
// the line (see bashRules), several separated by ", "; the web host;
// else the file the call works on (tool.PathToucher) as an Edit rule
// when it writes and a Read rule when it reads, project-relative when
// inside project; else the tool.
func SuggestRule(t tool.Tool, input json.RawMessage, project string) string {
	var in map[string]any
	_ = json.Unmarshal(input, &in)
	str := func(k string) string { s, _ := in[k].(string); return s }
	name := t.Spec().Name
	switch name { // the tools whose rules have a syntax of their own
	case "Bash":
		return bashRules(str("command"))
	case "WebFetch":
		if u, err := url.Parse(str("url")); err == nil && u.Hostname() != "" {
			return "WebFetch(domain:" + strings.ToLower(u.Hostname()) + ")"
		}
		return name
	}
	paths := tool.TouchedPaths(t, input)
	if len(paths) == 0 {
		return name
	}
	family, use := "Read", paths[0]
	for _, p := range paths {
		if p.Write {
			family, use = "Edit", p
			break
		}
	}
	if use.Path == "." { // the working directory: the whole family
		use.Path = ""
	}
	return pathRule(family, use.Path, project)
}

// bashRules are the rules that allow a command line again, one per command,
// as Claude Code saves them: `go vet ./... && go test ./...` gives
// "Bash(go vet:*), Bash(go test:*)". A command whose second word names a
// subcommand and that has more arguments (the part that changes from one
// call to the next) gets a prefix rule for the two; any other the exact
// command (`npm test`, `rm -rf build`).
// Read-only commands of a compound line (cd, ls, git status) are allowed
// anyway and get none. A line that is not fixed text ($(…), eval,
// variables in a command's name) gets none: "" offers no rule.
func bashRules(line string) string {
	line = strings.TrimSpace(line)
	if line == "" {
		return ""
	}
	script := shellsafe.Parse(line)
	if script.Dynamic || len(script.Commands) == 0 {
		return ""
	}
	var rules []string
	for _, c := range script.Commands {
		if !c.Literal() || len(c.Args) == 0 {
			return ""
		}
		if len(script.Commands) > 1 && shellsafe.ClassifyCommand(c).ReadOnly {
			continue
		}
		r := "Bash(" + c.Text() + ")"
		if len(c.Args) > 2 && subcommand.MatchString(c.Args[1].Value) && len(c.Assigns) == 0 {
			r = "Bash(" + shellsafe.Quote(c.Args[0].Value) + " " + c.Args[1].Value + ":*)"
		}
		if strings.ContainsAny(r[len("Bash("):len(r)-1], "\n()") {
			return ""
		}
		if !slices.Contains(rules, r) {
			rules = append(rules, r)
		}
	}
	if len(rules) == 0 { // every command is read-only: a redirection asked
		return ""
	}
	return strings.Join(rules, ", ")
}

// subcommand is a word that names what a program does (go vet, npm run,
// git commit), not a file or an option.
var subcommand = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// pathRule names one file: "/rel" from the project holding the settings
// file, "//abs" outside it.
func pathRule(tool, path, project string) string {
	if path == "" || strings.ContainsAny(path, "()") {
		return tool
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(project, path)
	}
	if rel, err := filepath.Rel(project, path); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		return tool + "(/" + filepath.ToSlash(rel) + ")"
	}
	return tool + "(/" + filepath.ToSlash(path) + ")"
}

// LocalSettings is the settings file "don't ask again" writes to.
func LocalSettings(project string) string { return settings.LocalPath(project) }

// AddAllowRule adds rule (one, or several separated by commas or spaces,
// as SuggestRule gives them) to permissions.allow in the project's
// .cairn/settings.local.json, keeping everything else the file holds.
// The file is replaced atomically, so a crash leaves the old one or the
// new one.
func AddAllowRule(project, rule string) error {
	return settings.EditLocal(project, func(doc map[string]json.RawMessage) error {
		perms := map[string]json.RawMessage{}
		if raw, ok := doc["permissions"]; ok {
			if err := json.Unmarshal(raw, &perms); err != nil {
				return fmt.Errorf("permissions is not an object: %w", err)
			}
		}
		var allow []string
		if raw, ok := perms["allow"]; ok {
			if err := json.Unmarshal(raw, &allow); err != nil {
				return fmt.Errorf("permissions.allow is not a list of rules: %w", err)
			}
		}
		added := false
		for _, r := range permission.SplitRules(rule) {
			if !slices.Contains(allow, r) {
				allow, added = append(allow, r), true
			}
		}
		if !added {
			return nil
		}
		var err error
		if perms["allow"], err = jsonw.Marshal(allow); err != nil {
			return err
		}
		doc["permissions"], err = jsonw.Marshal(perms)
		return err
	})
}
