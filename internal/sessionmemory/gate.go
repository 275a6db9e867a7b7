package sessionmemory

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/permission"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// Gate is the permission gate of the agent that updates the notes at
// path: Read and Edit of that one file are allowed, every other call —
// another tool, another file, the same file through a relative path, a
// notes file that has become a symbolic link — is denied, whatever the
// prompt said. It is safe for concurrent use.
func Gate(path string) func(ctx context.Context, t tool.Tool, call model.Block) engine.Verdict {
	path = filepath.Clean(path)
	return func(ctx context.Context, _ tool.Tool, call model.Block) engine.Verdict {
		d := decide(path, call)
		return engine.Verdict{Allow: d.Behavior == permission.Allow, Reason: d.Reason, Record: d.Record(permission.ModeDontAsk)}
	}
}

// gateRule names the gate in decisions.
const gateRule = "session-memory notes only"

func decide(path string, call model.Block) permission.Decision {
	deny := func(format string, args ...any) permission.Decision {
		return permission.Decision{Behavior: permission.Deny, Rule: gateRule,
			Reason: fmt.Sprintf(format, args...) + "; updating the session notes, only Read and Edit of " + path + " are allowed"}
	}
	if call.Name != "Read" && call.Name != "Edit" {
		return deny("%s is not allowed", call.Name)
	}
	var in struct {
		Path string `json:"file_path"`
	}
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return deny("the input of %s does not decode: %v", call.Name, err)
	}
	if !filepath.IsAbs(in.Path) || filepath.Clean(in.Path) != path {
		return deny("%s of %q is not allowed", call.Name, in.Path)
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return deny("%s is a symbolic link", path)
	}
	return permission.Decision{Behavior: permission.Allow, Rule: gateRule, Reason: call.Name + " of the session notes"}
}
