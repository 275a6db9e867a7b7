package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/cairn-dev/cairn/internal/gitinfo"
	"github.com/cairn-dev/cairn/internal/settings"
)

// ProjectFile is the project's shared list of servers, Claude Code's
// .mcp.json, in the project's root folder.
const ProjectFile = ".mcp.json"

// The transports a server is reached by.
const (
	Stdio = "stdio" // a command cairn starts, spoken to over stdin/stdout
	HTTP  = "http"  // streamable HTTP
	SSE   = "sse"   // the older HTTP+SSE transport
)

// Config is one server's definition, with ${VAR} references expanded.
type Config struct {
	// Name is the server's name as written; its tools are named after
	// Normalize(Name).
	Name string
	// Source is the file that defines it.
	Source string
	// Type is Stdio, HTTP or SSE.
	Type string

	// Command, Args and Env start a stdio server; Env is added to cairn's
	// own environment.
	Command string
	Args    []string
	Env     map[string]string

	// URL and Headers reach an http or sse server.
	URL     string
	Headers map[string]string

	// Unapproved marks a server that comes with the repository and that
	// the person has not approved: a cloned repository must not start
	// programs on its own. It is not started (see Load).
	Unapproved bool
}

// Load reads the MCP servers configured for a project. The files, lowest
// priority first: the user's settings.json in the cairn home, the
// project's .mcp.json, then the project's settings files (see
// settings.Paths); each holds an "mcpServers" object, and a server defined
// again replaces the earlier definition whole. The setting
// "disabledMcpjsonServers" (a list of names, as in Claude Code) leaves out
// those servers of .mcp.json.
//
// A server that comes with the repository — of .mcp.json, or of the
// project's committed settings.json — runs only once the person approved
// it: "enableAllProjectMcpServers": true or its name in
// "enabledMcpjsonServers", read from the files the person keeps (the
// user's settings and the project's settings.local.json, not the
// committed settings a repository brings). The others come back with
// Unapproved set.
//
// Missing files are skipped, and nothing in a file stops the session:
// what cannot be used is skipped and described in the warnings. A
// settings file that is not JSON is skipped without a warning here:
// loading the settings reports it. getenv reads the variables ${VAR}
// refers to. The servers are returned sorted by name.
//
// layers are more settings files above the project's, highest last (the
// --settings flag's): the person gave them, so they count as the
// person's own — their mcpServers run and their enabledMcpjsonServers
// and enableAllProjectMcpServers approve the project's servers.
func Load(homeDir, projectDir string, getenv func(string) string, layers ...string) ([]Config, []string) {
	all, lists, warnings := load(homeDir, projectDir, getenv, layers)
	out := make([]Config, 0, len(all))
	for _, c := range all {
		if c.Unapproved {
			if _, off := lists.disabled[c.Name]; off {
				continue
			}
			c.Unapproved = !lists.all && !slices.Contains(lists.enabled, c.Name)
		}
		out = append(out, c)
	}
	return out, warnings
}

// ProjectServers are the servers that come with the project (see Load),
// approved or not, disabled or not: the names `cairn mcp approve` takes.
// Each name maps to the settings file whose "disabledMcpjsonServers"
// leaves the server out, "" when none does. getenv is Load's.
func ProjectServers(homeDir, projectDir string, getenv func(string) string) (map[string]string, []string) {
	all, lists, warnings := load(homeDir, projectDir, getenv, nil)
	out := make(map[string]string)
	for _, c := range all {
		if c.Unapproved {
			out[c.Name] = lists.disabled[c.Name]
		}
	}
	return out, warnings
}

// load reads the definitions and the lists of Load's files, layers last.
// The servers that come with the project have Unapproved set, whatever
// the lists say.
func load(homeDir, projectDir string, getenv func(string) string, layers []string) ([]Config, projectLists, []string) {
	var files []string
	files = append(files, settings.Paths(homeDir, "")...)
	project := ""
	if projectDir != "" {
		project = filepath.Join(projectDir, ProjectFile)
		files = append(files, project)
	}
	files = append(files, settings.Paths("", projectDir)...)
	files = append(files, layers...)

	byName := make(map[string]Config)
	var warnings []string
	lists := projectLists{disabled: make(map[string]string)}
	own := make(map[string]bool) // the person's own files (asking git once each)
	for _, file := range files {
		data, err := os.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("read %s: %v; its MCP servers are skipped", file, err))
			continue
		}
		if file != project {
			var fields map[string]json.RawMessage
			if json.Unmarshal(data, &fields) != nil {
				continue // settings.Load reports it
			}
			own[file] = slices.Contains(layers, file) || personal(file, homeDir)
			lists.read(file, fields, own[file], &warnings)
		}
		configs, w := Parse(file, data, getenv)
		warnings = append(warnings, w...)
		for _, c := range configs {
			byName[c.Name] = c
		}
	}
	out := make([]Config, 0, len(byName))
	for _, c := range byName {
		c.Unapproved = !own[c.Source] // .mcp.json is never the person's own
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, lists, warnings
}

// personal reports whether a settings file is the person's own: the
// user's, or a project's settings.local.json that git does not track.
func personal(file, homeDir string) bool {
	if homeDir != "" && filepath.Dir(file) == filepath.Clean(homeDir) {
		return true
	}
	// A repository could commit a settings.local.json to approve its own
	// servers: one git tracks is not the person's.
	return filepath.Base(file) == "settings.local.json" && !gitinfo.Tracked(file)
}

// projectLists are the settings that say which servers of .mcp.json run.
type projectLists struct {
	disabled map[string]string // name → the file that disables it
	enabled  []string
	all      bool
}

// read takes the lists a settings file holds; approvals count only from
// the person's own files.
func (l *projectLists) read(file string, fields map[string]json.RawMessage, personal bool, warnings *[]string) {
	list := func(key string, into *[]string) {
		raw, ok := fields[key]
		if !ok {
			return
		}
		v, err := names(key, raw)
		if err != nil {
			*warnings = append(*warnings, fmt.Sprintf("%s: %v", file, err))
			return
		}
		*into = append(*into, v...)
	}
	var disabled []string
	list("disabledMcpjsonServers", &disabled)
	for _, name := range disabled {
		l.disabled[name] = file
	}
	if !personal {
		return
	}
	list("enabledMcpjsonServers", &l.enabled)
	if raw, ok := fields["enableAllProjectMcpServers"]; ok {
		var on bool
		if json.Unmarshal(raw, &on) != nil {
			*warnings = append(*warnings, fmt.Sprintf(`%s: "enableAllProjectMcpServers" must be true or false, not %s; it is ignored`, file, settings.Kind(raw)))
		}
		l.all = l.all || on
	}
}

// names decodes a list of server names such as disabledMcpjsonServers.
func names(key string, raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || settings.IsNull(raw) {
		return nil, nil
	}
	var out []string
	if json.Unmarshal(raw, &out) != nil {
		return nil, fmt.Errorf(`%q must be a list of server names such as ["github"], not %s; it is ignored`, key, settings.Kind(raw))
	}
	return out, nil
}

// Parse reads the server definitions of one file: a JSON object whose
// "mcpServers" object maps each server's name to its definition, the
// shape of .mcp.json and of the settings files. A definition that cannot
// be used is skipped with a warning naming the file and the server; the
// others are returned, sorted by name. getenv reads the variables that
// ${VAR} and ${VAR:-default} refer to; an empty variable counts as unset.
func Parse(file string, data []byte, getenv func(string) string) ([]Config, []string) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, []string{fmt.Sprintf("%s is not a valid JSON object (%v); its MCP servers are skipped until it is fixed", file, err)}
	}
	raw, ok := top["mcpServers"]
	if !ok || settings.IsNull(raw) {
		return nil, nil
	}
	var servers map[string]json.RawMessage
	if err := json.Unmarshal(raw, &servers); err != nil {
		return nil, []string{fmt.Sprintf(`%s: "mcpServers" must be an object mapping each server's name to its definition, like {"github": {"command": "github-mcp"}}; it is skipped`, file)}
	}
	var out []Config
	var warnings []string
	for name, def := range servers {
		c, w, err := parseServer(name, def, getenv)
		where := fmt.Sprintf("MCP server %q in %s", name, file)
		for _, msg := range w {
			warnings = append(warnings, where+": "+msg)
		}
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("%s: %v; the server is skipped", where, err))
			continue
		}
		c.Source = file
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	sort.Strings(warnings)
	return out, warnings
}

// parseServer checks one definition and expands its variables; warnings
// are about a definition still used.
func parseServer(name string, def json.RawMessage, getenv func(string) string) (Config, []string, error) {
	c := Config{Name: name}
	if strings.TrimSpace(name) == "" {
		return c, nil, errors.New("a server needs a name")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(def, &fields); err != nil || fields == nil {
		return c, nil, fmt.Errorf("the definition must be an object such as {\"command\": \"npx\", \"args\": [\"my-server\"]}, not %s", settings.Kind(def))
	}
	var err error
	str := func(key string) string {
		var s string
		if raw, ok := fields[key]; ok && !settings.IsNull(raw) && err == nil {
			if json.Unmarshal(raw, &s) != nil {
				err = fmt.Errorf("%q must be a string, not %s", key, settings.Kind(raw))
			}
		}
		return s
	}
	strMap := func(key string) map[string]string {
		var m map[string]string
		if raw, ok := fields[key]; ok && !settings.IsNull(raw) && err == nil {
			if json.Unmarshal(raw, &m) != nil {
				err = fmt.Errorf("%q must be an object of strings such as {\"TOKEN\": \"${TOKEN}\"}, not %s", key, settings.Kind(raw))
			}
		}
		return m
	}
	c.Type = str("type")
	c.Command = str("command")
	c.URL = str("url")
	c.Env = strMap("env")
	c.Headers = strMap("headers")
	if raw, ok := fields["args"]; ok && !settings.IsNull(raw) && err == nil {
		if json.Unmarshal(raw, &c.Args) != nil {
			err = fmt.Errorf("\"args\" must be a list of strings, not %s", settings.Kind(raw))
		}
	}
	if err != nil {
		return c, nil, err
	}

	switch c.Type {
	case "":
		c.Type = Stdio
		if c.Command == "" && c.URL != "" {
			c.Type = HTTP // a url alone can only mean a remote server
		}
	case Stdio, HTTP, SSE:
	default:
		return c, nil, fmt.Errorf("type %q is not supported; use \"stdio\" (with a command), \"http\" or \"sse\" (with a url)", c.Type)
	}

	ex := expander{getenv: getenv}
	switch c.Type {
	case Stdio:
		if c.Command == "" {
			return c, nil, errors.New(`a stdio server needs a "command"`)
		}
		c.Command = ex.expand(c.Command)
		for i := range c.Args {
			c.Args[i] = ex.expand(c.Args[i])
		}
		for k, v := range c.Env {
			c.Env[k] = ex.expand(v)
		}
		c.URL, c.Headers = "", nil
	default:
		if c.URL == "" {
			return c, nil, fmt.Errorf("an %s server needs a \"url\"", c.Type)
		}
		c.URL = ex.expand(c.URL)
		for k, v := range c.Headers {
			c.Headers[k] = ex.expand(v)
		}
		if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return c, nil, fmt.Errorf("url %q is not an http:// or https:// address", c.URL)
		}
		c.Command, c.Args, c.Env = "", nil, nil
	}
	var warnings []string
	if len(ex.missing) > 0 {
		warnings = append(warnings, fmt.Sprintf("environment variable %s is not set and has no default (write ${NAME:-default}); the reference is left as written", strings.Join(ex.missing, ", ")))
	}
	return c, warnings, nil
}

// expander replaces ${VAR} and ${VAR:-default}, as Claude Code does: an
// unset variable without a default is left as written and remembered.
type expander struct {
	getenv  func(string) string
	missing []string
}

func (e *expander) expand(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i+2:], '}')
		if j <= 0 { // no closing brace, or ${}
			end := len(s)
			if j == 0 {
				end = i + 3
			}
			b.WriteString(s[:end])
			s = s[end:]
			continue
		}
		ref := s[i+2 : i+2+j]
		name, def, hasDef := strings.Cut(ref, ":-")
		b.WriteString(s[:i])
		switch v := e.lookup(name); {
		case v != "":
			b.WriteString(v)
		case hasDef:
			b.WriteString(def)
		default:
			b.WriteString(s[i : i+3+j])
			if !slices.Contains(e.missing, name) {
				e.missing = append(e.missing, name)
			}
		}
		s = s[i+3+j:]
	}
	b.WriteString(s)
	return b.String()
}

func (e *expander) lookup(name string) string {
	if e.getenv == nil {
		return ""
	}
	return e.getenv(name)
}
