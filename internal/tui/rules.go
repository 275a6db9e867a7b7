package tui

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/renameio/v2"
)

// SuggestRule is the allow rule that "Yes, and don't ask again" offers
// for a call, in Claude Code's syntax: the exact Bash command, the file
// (project-relative when inside project), the web host, else the tool.
func SuggestRule(tool string, input json.RawMessage, project string) string {
	var in map[string]any
	_ = json.Unmarshal(input, &in)
	str := func(k string) string { s, _ := in[k].(string); return s }
	switch tool {
	case "Bash":
		cmd := strings.TrimSpace(str("command"))
		if cmd == "" || strings.ContainsAny(cmd, "\n()") {
			return ""
		}
		return "Bash(" + cmd + ")"
	case "Edit", "Write", "MultiEdit", "NotebookEdit":
		return pathRule("Edit", firstOf(str("file_path"), str("notebook_path")), project)
	case "Read", "Grep", "Glob", "LS":
		return pathRule("Read", firstOf(str("file_path"), str("path")), project)
	case "WebFetch":
		if u, err := url.Parse(str("url")); err == nil && u.Hostname() != "" {
			return "WebFetch(domain:" + strings.ToLower(u.Hostname()) + ")"
		}
	}
	return tool
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
func LocalSettings(project string) string {
	return filepath.Join(project, ".cairn", "settings.local.json")
}

// AddAllowRule adds rule to permissions.allow in the project's
// .cairn/settings.local.json, keeping everything else the file holds.
// The file is replaced atomically, so a crash leaves the old one or the
// new one.
func AddAllowRule(project, rule string) error {
	path := LocalSettings(project)
	doc := map[string]json.RawMessage{}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("read %s: %w", path, err)
	case len(strings.TrimSpace(string(b))) > 0:
		if err := json.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("%s is not valid JSON (%v); fix it, then allow again", path, err)
		}
	}
	perms := map[string]json.RawMessage{}
	if raw, ok := doc["permissions"]; ok {
		if err := json.Unmarshal(raw, &perms); err != nil {
			return fmt.Errorf("permissions in %s is not an object: %w", path, err)
		}
	}
	var allow []string
	if raw, ok := perms["allow"]; ok {
		if err := json.Unmarshal(raw, &allow); err != nil {
			return fmt.Errorf("permissions.allow in %s is not a list of rules: %w", path, err)
		}
	}
	if slices.Contains(allow, rule) {
		return nil
	}
	allow = append(allow, rule)
	if perms["allow"], err = json.Marshal(allow); err != nil {
		return err
	}
	if doc["permissions"], err = json.Marshal(perms); err != nil {
		return err
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	if err := renameio.WriteFile(path, append(out, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
