package filehistory

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/cairn-dev/cairn/tool"
)

// TrackShell wraps a shell tool (Bash) so that the files its commands
// create, change or delete inside the project are backed up like the
// editing tools' changes: each joins the current snapshot with its state
// from before the command. Commands the tool reports read-only, and
// commands started in the background (whose changes come later), run as
// they are. Tracking never stops a command: what cannot be backed up is
// reported through Options.Warn. Everything else is the wrapped tool's.
func TrackShell(shell tool.Tool, h *History) tool.Tool {
	return &shellTracker{Tool: shell, h: h}
}

type shellTracker struct {
	tool.Tool
	h *History
}

// Unwrap implements tool.Wrapper: the shell's own traits show through.
func (t *shellTracker) Unwrap() tool.Tool { return t.Tool }

// Run runs the command between two looks at the project.
func (t *shellTracker) Run(ctx context.Context, env *tool.Env, input json.RawMessage) (tool.Result, error) {
	if t.h == nil || env.ProjectDir == "" || t.Tool.ReadOnly(input) || inBackground(input) {
		return t.Tool.Run(ctx, env, input)
	}
	sh := t.h.shadowOf(env.ProjectDir)
	if err := sh.Before(ctx); err != nil {
		if ctx.Err() != nil {
			return t.Tool.Run(ctx, env, input)
		}
		t.h.warn("shell-before", fmt.Sprintf("file history: %v; changes this command makes cannot be rewound", err))
		return t.Tool.Run(ctx, env, input)
	}
	res, err := t.Tool.Run(ctx, env, input)
	// An interrupted command may still have changed files: look anyway.
	changes, aerr := sh.After(context.WithoutCancel(ctx))
	if aerr != nil {
		t.h.warn("shell-after", fmt.Sprintf("file history: %v; changes this command made cannot be rewound", aerr))
		return res, err
	}
	t.h.recordShell(context.WithoutCancel(ctx), sh, changes)
	return res, err
}

func inBackground(input json.RawMessage) bool {
	var in struct {
		Background bool `json:"run_in_background"`
	}
	return json.Unmarshal(input, &in) == nil && in.Background
}

// shadowOf returns the shadow of root, made on first use. Its store lives
// in the session's backup folder and is removed by Close.
func (h *History) shadowOf(root string) *Shadow {
	h.lock()
	defer h.mu.Unlock()
	if h.shadow == nil || h.shadow.root != root {
		h.shadow = newShadow(root, filepath.Join(h.opts.Dir, "shadow"), []string{filepath.Clean(h.opts.Dir)}, h.opts.Shell, h.opts.Now, h.opts.Warn)
	}
	return h.shadow
}

// recordShell adds what a command changed to the current snapshot.
func (h *History) recordShell(ctx context.Context, sh *Shadow, changes []shellChange) {
	h.lock()
	defer h.mu.Unlock()
	if len(h.snaps) == 0 || len(changes) == 0 {
		return
	}
	cur := h.snaps[len(h.snaps)-1]
	added := false
	for _, c := range changes {
		if _, ok := cur.Files[c.path]; ok {
			continue // backed up earlier in the turn
		}
		v := h.nextVersion(c.path)
		b := Backup{Version: v, Time: h.opts.Now()}
		switch {
		case c.kind == created:
		case c.obj == "":
			h.warnOnce("shell-nocopy:"+c.why, fmt.Sprintf("file history: a command changed %s, which cannot be rewound: %s", c.path, c.why))
			continue
		default:
			b.Name = BackupName(c.path, v)
			if err := sh.export(c.obj, filepath.Join(h.opts.Dir, b.Name), c.mode); err != nil {
				h.warnOnce("shell-backup", fmt.Sprintf("file history: back up %s: %v", c.path, err))
				continue
			}
		}
		h.versions[c.path] = v
		cur.Files[c.path] = b
		added = true
	}
	if added {
		if err := h.record(ctx, cur, true); err != nil {
			h.warnOnce("shell-record", err.Error())
		}
	}
}

// warn takes h.mu to report a problem once.
func (h *History) warn(key, msg string) {
	h.lock()
	defer h.mu.Unlock()
	h.warnOnce(key, msg)
}
