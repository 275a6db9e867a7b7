package tui

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/internal/settings"
	"github.com/cairn-dev/cairn/tool"
)

// SuggestRule is the allow rule that "Yes, and don't ask again" offers
// for a call of t, in Claude Code's syntax: the exact Bash command, the
// web host, else the file the call works on (tool.PathToucher) as an Edit
// rule when it writes and a Read rule when it reads, project-relative
// when inside project, else the tool.
func SuggestRule(t tool.Tool, input json.RawMessage, project string) string {
	var in map[string]any
	_ = json.Unmarshal(input, &in)
	str := func(k string) string { s, _ := in[k].(string); return s }
	name := t.Spec().Name
	switch name { // the tools whose rules have a syntax of their own
	case "Bash":
		cmd := strings.TrimSpace(str("command"))
		if cmd == "" || strings.ContainsAny(cmd, "\n()") {
			return ""
		}
		return "Bash(" + cmd + ")"
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

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

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

// AddAllowRule adds rule to permissions.allow in the project's
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
		if slices.Contains(allow, rule) {
			return nil
		}
		var err error
		if perms["allow"], err = json.Marshal(append(allow, rule)); err != nil {
			return err
		}
		doc["permissions"], err = json.Marshal(perms)
		return err
	})
}
