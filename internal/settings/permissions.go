package settings

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Sourced is one value of a settings file, with the file it came from.
type Sourced struct {
	Value string
	File  string
	// Line is where in File the value is written, from 1; 0 when not
	// known.
	Line int
}

// Where names the file and line a value came from, for messages.
func (v Sourced) Where() string {
	if v.Line == 0 {
		return v.File
	}
	return fmt.Sprintf("%s line %d", v.File, v.Line)
}

// Permissions is the "permissions" object of every settings file merged
// the way Claude Code merges it: the rule lists and additional
// directories of all files are concatenated (lowest priority first);
// single values come from the highest-priority file that sets them.
type Permissions struct {
	Allow, Ask, Deny []Sourced
	// DefaultMode is permissions.defaultMode ("" when no file sets it),
	// DefaultModeFile the file it came from.
	DefaultMode, DefaultModeFile string
	// AdditionalDirectories are permissions.additionalDirectories as
	// written; a relative one is relative to its file's project.
	AdditionalDirectories []Sourced
	// DisableBypass is set when a file sets
	// permissions.disableBypassPermissionsMode to "disable".
	DisableBypass     bool
	DisableBypassFile string
	// Files lists the settings files that exist and were read, lowest
	// priority first.
	Files []string
	// Warnings describe what was skipped: files that are not valid JSON,
	// and values of the wrong kind, where skipping them only allows less.
	Warnings []string
}

// LoadPermissions reads the permissions of every file of
// Paths(homeDir, projectDir), then of the extra files (--settings). Missing files are skipped. What cannot be
// read is skipped with a warning naming the file and line when skipping
// it only allows less (a file that holds no restricting setting, an
// "allow" list of the wrong kind); it is an error naming the file and
// line when skipping it could allow more (a deny or ask list, a default
// mode, disableBypassPermissionsMode).
func LoadPermissions(homeDir, projectDir string, extra ...string) (*Permissions, error) {
	p := &Permissions{}
	for _, path := range append(Paths(homeDir, projectDir), extra...) {
		fields, ok, warning, err := readFile(path)
		if err != nil {
			return nil, err
		}
		if warning != "" {
			p.Warnings = append(p.Warnings, warning)
		}
		if !ok {
			continue
		}
		p.Files = append(p.Files, path)
		raw, ok := fields["permissions"]
		if !ok || IsNull(raw) {
			continue
		}
		if err := p.addFile(path, raw); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// addFile adds one file's "permissions" value, raw.
func (p *Permissions) addFile(file string, raw json.RawMessage) error {
	data, _ := os.ReadFile(file) // for line numbers; read moments ago
	pos := scanPermissions(data)
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		fe := &FileError{File: file, Line: pos.line, Err: fmt.Errorf(`"permissions" must be an object like {"allow": ["Bash(npm test)"], "deny": ["Read(./.env)"]}, not %s`, Kind(raw))}
		if fe.Line > 0 {
			fe.Column = 1
		}
		warning, err := unreadable(fe, raw)
		if err != nil {
			return err
		}
		p.Warnings = append(p.Warnings, warning)
		return nil
	}
	for key, v := range obj {
		name := strings.ToLower(key)
		bad := func(want string) error {
			fe := &FileError{File: file, Line: pos.keys[name], Err: fmt.Errorf("permissions.%s must be %s, not %s", key, want, Kind(v))}
			if fe.Line > 0 {
				fe.Column = 1
			}
			switch name {
			case "allow", "additionaldirectories":
				p.Warnings = append(p.Warnings, fmt.Sprintf("%v; it is ignored until it is fixed", fe))
				return nil
			}
			return fmt.Errorf("%w; cairn does not run without the restrictions it may hold: fix the file", fe)
		}
		switch name {
		case "allow", "ask", "deny", "additionaldirectories":
			var vs []string
			if IsNull(v) {
				continue
			}
			if err := json.Unmarshal(v, &vs); err != nil {
				if err := bad(`a list of strings like ["Bash(npm test)"]`); err != nil {
					return err
				}
				continue
			}
			list := make([]Sourced, len(vs))
			lines := pos.lists[name]
			for i, s := range vs {
				list[i] = Sourced{Value: s, File: file}
				if len(lines) == len(vs) {
					list[i].Line = lines[i]
				}
			}
			switch name {
			case "allow":
				p.Allow = append(p.Allow, list...)
			case "ask":
				p.Ask = append(p.Ask, list...)
			case "deny":
				p.Deny = append(p.Deny, list...)
			default:
				p.AdditionalDirectories = append(p.AdditionalDirectories, list...)
			}
		case "defaultmode", "disablebypasspermissionsmode":
			var s *string
			if err := json.Unmarshal(v, &s); err != nil {
				if err := bad("a string"); err != nil {
					return err
				}
				continue
			}
			switch {
			case s == nil:
			case name == "defaultmode":
				p.DefaultMode, p.DefaultModeFile = *s, file
			case *s == "disable":
				p.DisableBypass, p.DisableBypassFile = true, file
			}
		}
	}
	return nil
}

// IsNull reports whether raw is JSON's null.
func IsNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// Kind names the kind of a JSON value, for messages: "an object", "a
// list", "a string", "a boolean", "null", "a number" or "nothing".
func Kind(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// permissionLines are where a file's permissions are written.
type permissionLines struct {
	line  int              // of the "permissions" key
	keys  map[string]int   // of each key of it, lower-cased
	lists map[string][]int // of each string of its lists, by key lower-cased
}

// scanPermissions finds the lines of the top-level "permissions" object
// of a settings file and of what it holds. A later key of the same name
// replaces an earlier one, and keys inside match regardless of case, as
// the decoder reads them.
func scanPermissions(data []byte) permissionLines {
	pl := permissionLines{keys: map[string]int{}, lists: map[string][]int{}}
	dec := json.NewDecoder(bytes.NewReader(data))
	line := func() int { l, _ := position(data, dec.InputOffset()); return l }
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return pl
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return pl
		}
		if key != "permissions" {
			if skipValue(dec) != nil {
				return pl
			}
			continue
		}
		pl.line = line()
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			if t == json.Delim('[') {
				skipRest(dec, 1)
			}
			continue
		}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return pl
			}
			name := strings.ToLower(fmt.Sprint(k))
			pl.keys[name] = line()
			t, err := dec.Token()
			if err != nil {
				return pl
			}
			if t != json.Delim('[') {
				if t == json.Delim('{') {
					skipRest(dec, 1)
				}
				continue
			}
			var lines []int
			for dec.More() {
				v, err := dec.Token()
				if err != nil {
					return pl
				}
				lines = append(lines, line())
				if d, ok := v.(json.Delim); ok && (d == '[' || d == '{') {
					skipRest(dec, 1)
				}
			}
			dec.Token() // ]
			pl.lists[name] = lines
		}
		dec.Token() // }
	}
	return pl
}

// skipValue reads past one value.
func skipValue(dec *json.Decoder) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); ok && (d == '[' || d == '{') {
		return skipRest(dec, 1)
	}
	return nil
}

// skipRest reads to the end of depth open objects or lists.
func skipRest(dec *json.Decoder, depth int) error {
	for depth > 0 {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('['), json.Delim('{'):
			depth++
		case json.Delim(']'), json.Delim('}'):
			depth--
		}
	}
	return nil
}
