package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// Event names a point of the agent's life where hooks run; the values are
// Claude Code's event names, as settings files spell them.
type Event string

// The events cairn runs hooks for.
const (
	PreToolUse       Event = "PreToolUse"
	PostToolUse      Event = "PostToolUse"
	UserPromptSubmit Event = "UserPromptSubmit"
	SessionStart     Event = "SessionStart"
	Stop             Event = "Stop"
	PreCompact       Event = "PreCompact"
	PostCompact      Event = "PostCompact"
	SubagentStart    Event = "SubagentStart"
	SubagentStop     Event = "SubagentStop"
	Notification     Event = "Notification"
	SessionEnd       Event = "SessionEnd"
)

// Events lists the events cairn runs, in the order of an agent's life.
var Events = []Event{SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, SubagentStart, SubagentStop, Stop, Notification, PreCompact, PostCompact, SessionEnd}

// laterEvents are Claude Code events cairn knows of but does not run yet;
// hooks configured for them are skipped with a gentler warning than an
// unknown name gets.
var laterEvents = []string{
	"PermissionRequest",
	"PermissionDenied", "PostToolUseFailure", "StopFailure", "InstructionsLoaded",
	"CwdChanged", "FileChanged", "WorktreeCreate", "WorktreeRemove", "TaskCompleted",
	"TeammateIdle", "ConfigChange", "Elicitation", "ElicitationResult", "UserPromptExpansion",
	"PostToolBatch", "TaskCreated",
}

// Command is one hook: a shell command and how long it may run.
type Command struct {
	Command string
	// Timeout is the hook's own limit; 0 takes the runner's default.
	Timeout time.Duration
	// File is the settings file that configured it.
	File string
}

// Config holds the hooks of every settings file that applies to a
// project, by event, in settings order (lowest-priority file first, and
// in each file in the order written). The zero Config has no hooks. A
// Config is not changed after it is built, so it is safe for concurrent
// use.
type Config struct {
	groups map[Event][]group
}

// group is one entry of an event's list: a matcher and its commands.
type group struct {
	match    matcher
	pattern  string // as written
	commands []Command
}

// Load reads the "hooks" object of each settings file in files (lowest
// priority first; missing files are skipped) and combines them: every
// file's hooks run, as in Claude Code, rather than the last file's
// replacing the others'. A file that sets "disableAllHooks": true turns
// every hook off. Nothing in a file stops the session: what cannot be
// used is skipped and described in the returned warnings.
func Load(files []string) (*Config, []string) {
	c := &Config{}
	var warnings []string
	disabled := ""
	for _, f := range files {
		fields, err := readFields(f)
		if err != nil {
			warnings = append(warnings, err.Error())
			continue
		}
		if fields == nil {
			continue
		}
		if raw, ok := fields["disableAllHooks"]; ok {
			var off bool
			if json.Unmarshal(raw, &off) == nil && off {
				disabled = f
			}
		}
		if raw, ok := fields["hooks"]; ok {
			warnings = append(warnings, c.Add(f, raw)...)
		}
	}
	if disabled != "" {
		return &Config{}, warnings
	}
	return c, warnings
}

// readFields decodes a settings file's top-level keys; nil when the file
// does not exist.
func readFields(path string) (map[string]json.RawMessage, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("hooks: read %s: %w; its hooks are skipped", path, err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, fmt.Errorf("hooks: %s is not a JSON object (%v); its hooks are skipped", path, err)
	}
	return fields, nil
}

// Add adds the hooks of one settings file's "hooks" value, written in
// Claude Code's shape:
//
//	{"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "…", "timeout": 30}]}]}
//
// Entries it cannot use (an unknown event, a hook type other than
// "command", a matcher that does not compile) are skipped, each with a
// warning naming file; unknown fields are ignored with a warning.
func (c *Config) Add(file string, raw json.RawMessage) []string {
	var w warner
	w.file = file
	if isNull(raw) {
		return nil
	}
	var events map[string]json.RawMessage
	if err := json.Unmarshal(raw, &events); err != nil {
		w.add("\"hooks\" must be an object keyed by event name, like {\"PreToolUse\": [...]} (%v); hooks from this file are skipped", err)
		return w.list
	}
	names := make([]string, 0, len(events))
	for name := range events {
		names = append(names, name)
	}
	sort.Strings(names) // deterministic warnings; events are independent
	for _, name := range names {
		ev := Event(name)
		if !slices.Contains(Events, ev) {
			if slices.Contains(laterEvents, name) {
				w.add("cairn does not run %s hooks yet; they are ignored", name)
			} else {
				w.add("unknown hook event %q is ignored (known: %s)", name, eventList())
			}
			continue
		}
		groups := parseGroups(&w, ev, events[name])
		if len(groups) > 0 {
			if c.groups == nil {
				c.groups = make(map[Event][]group)
			}
			c.groups[ev] = append(c.groups[ev], groups...)
		}
	}
	return w.list
}

func eventList() string {
	names := make([]string, len(Events))
	for i, e := range Events {
		names[i] = string(e)
	}
	return strings.Join(names, ", ")
}

// groupJSON and commandJSON are the shapes of the settings entries.
type groupJSON struct {
	Matcher *string           `json:"matcher"`
	Hooks   []json.RawMessage `json:"hooks"`
}

type commandJSON struct {
	Type    string   `json:"type"`
	Command string   `json:"command"`
	Timeout *float64 `json:"timeout"`
}

// Fields of a hook entry cairn reads or knowingly leaves alone.
var (
	groupFields   = []string{"matcher", "hooks"}
	commandFields = []string{"type", "command", "timeout", "statusMessage"}
)

func parseGroups(w *warner, ev Event, raw json.RawMessage) []group {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		w.add("hooks.%s must be a list of {\"matcher\", \"hooks\"} entries (%v); it is ignored", ev, err)
		return nil
	}
	var out []group
	for i, item := range list {
		where := fmt.Sprintf("hooks.%s[%d]", ev, i)
		var g groupJSON
		if err := json.Unmarshal(item, &g); err != nil {
			w.add("%s must be an object like {\"matcher\": \"Bash\", \"hooks\": [...]} (%v); it is ignored", where, err)
			continue
		}
		w.unknown(where, item, groupFields)
		pattern := ""
		if g.Matcher != nil {
			pattern = *g.Matcher
		}
		m, err := compileMatcher(pattern)
		if err != nil {
			w.add("%s: matcher %q is not a valid regular expression (%v); its hooks are ignored", where, pattern, err)
			continue
		}
		var cmds []Command
		for j, h := range g.Hooks {
			if cmd, ok := parseCommand(w, fmt.Sprintf("%s.hooks[%d]", where, j), h); ok {
				cmds = append(cmds, cmd)
			}
		}
		if len(cmds) > 0 {
			out = append(out, group{match: m, pattern: pattern, commands: cmds})
		}
	}
	return out
}

func parseCommand(w *warner, where string, raw json.RawMessage) (Command, bool) {
	var h commandJSON
	if err := json.Unmarshal(raw, &h); err != nil {
		w.add("%s must be an object like {\"type\": \"command\", \"command\": \"./check.sh\"} (%v); it is ignored", where, err)
		return Command{}, false
	}
	switch {
	case h.Type != "command":
		w.add("%s has type %q; cairn runs only \"command\" hooks, so it is ignored", where, h.Type)
		return Command{}, false
	case strings.TrimSpace(h.Command) == "":
		w.add("%s has no command; it is ignored", where)
		return Command{}, false
	}
	w.unknown(where, raw, commandFields)
	cmd := Command{Command: h.Command, File: w.file}
	if h.Timeout != nil {
		secs := *h.Timeout
		if secs <= 0 || math.IsInf(secs, 0) || secs > math.MaxInt32 {
			w.add("%s: timeout %v is not a positive number of seconds; the default applies", where, secs)
		} else {
			cmd.Timeout = time.Duration(secs * float64(time.Second))
		}
	}
	return cmd, true
}

// warner collects the warnings of one file.
type warner struct {
	file string
	list []string
}

func (w *warner) add(format string, args ...any) {
	w.list = append(w.list, "hooks in "+w.file+": "+fmt.Sprintf(format, args...))
}

// unknown warns about the fields of an object that are not in known.
func (w *warner) unknown(where string, raw json.RawMessage, known []string) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return
	}
	var extra []string
	for k := range fields {
		if !slices.Contains(known, k) {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		w.add("%s: field %q is not supported by cairn and is ignored", where, k)
	}
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

// Commands returns the hooks of event whose matcher accepts query (a
// tool name, a session's source, a compaction's trigger, a subagent's
// type; ignored for events without matchers), in settings order, each command once: the
// same command text configured twice, in one file or several, runs once.
func (c *Config) Commands(event Event, query string) []Command {
	if c == nil {
		return nil
	}
	var out []Command
	seen := make(map[string]bool)
	for _, g := range c.groups[event] {
		if usesMatcher(event) && !g.match(query) {
			continue
		}
		for _, cmd := range g.commands {
			if seen[cmd.Command] {
				continue
			}
			seen[cmd.Command] = true
			out = append(out, cmd)
		}
	}
	return out
}

// Empty reports whether no hook is configured for any event.
func (c *Config) Empty() bool { return c == nil || len(c.groups) == 0 }

// usesMatcher reports whether an event's matchers select hooks; the
// others run every hook configured for them.
func usesMatcher(e Event) bool {
	return e != UserPromptSubmit && e != Stop
}

// matcher decides whether a group's hooks run for a query.
type matcher func(query string) bool

// simpleMatcher is a matcher written as a name or names separated by |.
var simpleMatcher = regexp.MustCompile(`^[A-Za-z0-9_|]+$`)

// compileMatcher builds a matcher as Claude Code reads one: empty or "*"
// matches everything; letters, digits, _ and | name the exact values to
// match (Edit|Write); anything else is a regular expression searched for
// in the value (mcp__github__.*, ^Notebook).
func compileMatcher(pattern string) (matcher, error) {
	switch {
	case pattern == "" || pattern == "*":
		return func(string) bool { return true }, nil
	case simpleMatcher.MatchString(pattern):
		names := strings.Split(pattern, "|")
		return func(q string) bool { return slices.Contains(names, q) }, nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	return re.MatchString, nil
}
