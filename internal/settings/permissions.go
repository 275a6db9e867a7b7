package settings

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Sourced is one value of a settings file, with the file it came from.
type Sourced struct {
	Value string
	File  string
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
}

// permissionsJSON is the shape of one file's "permissions" object.
type permissionsJSON struct {
	Allow                        []string `json:"allow"`
	Ask                          []string `json:"ask"`
	Deny                         []string `json:"deny"`
	DefaultMode                  *string  `json:"defaultMode"`
	AdditionalDirectories        []string `json:"additionalDirectories"`
	DisableBypassPermissionsMode *string  `json:"disableBypassPermissionsMode"`
}

// LoadPermissions reads the permissions of every file of
// Paths(homeDir, projectDir). Missing files are skipped; a file that is
// not a JSON object, or a "permissions" value of the wrong shape, is an
// error naming the file.
func LoadPermissions(homeDir, projectDir string) (*Permissions, error) {
	p := &Permissions{}
	for _, path := range Paths(homeDir, projectDir) {
		fields, ok, err := readFile(path)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		p.Files = append(p.Files, path)
		raw, ok := fields["permissions"]
		if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			continue
		}
		var pj permissionsJSON
		if err := json.Unmarshal(raw, &pj); err != nil {
			return nil, fmt.Errorf("setting \"permissions\" in %s is not valid (%v); it must be an object like {\"allow\": [\"Bash(npm test)\"], \"deny\": [\"Read(./.env)\"]}", path, err)
		}
		p.add(path, pj)
	}
	return p, nil
}

func (p *Permissions) add(file string, pj permissionsJSON) {
	tag := func(vs []string) []Sourced {
		out := make([]Sourced, len(vs))
		for i, v := range vs {
			out[i] = Sourced{Value: v, File: file}
		}
		return out
	}
	p.Allow = append(p.Allow, tag(pj.Allow)...)
	p.Ask = append(p.Ask, tag(pj.Ask)...)
	p.Deny = append(p.Deny, tag(pj.Deny)...)
	p.AdditionalDirectories = append(p.AdditionalDirectories, tag(pj.AdditionalDirectories)...)
	if pj.DefaultMode != nil {
		p.DefaultMode, p.DefaultModeFile = *pj.DefaultMode, file
	}
	if pj.DisableBypassPermissionsMode != nil && *pj.DisableBypassPermissionsMode == "disable" {
		p.DisableBypass, p.DisableBypassFile = true, file
	}
}
