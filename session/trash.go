package session

import (
	"context"
	"slices"
	"time"
)

// TrashInfo is one session in the trash, as `cairn sessions trash` lists
// it.
type TrashInfo struct {
	SessionID string `json:"sessionId"`
	// Path is where the transcript was, and goes back to.
	Path         string    `json:"path"`
	TrashedAt    time.Time `json:"trashedAt"`
	LastActivity time.Time `json:"lastActivity"`
	// Restorable is set when `cairn sessions restore` can bring it back
	// as it stands; Problem says why not otherwise.
	Restorable bool   `json:"restorable"`
	Problem    string `json:"problem,omitempty"`
	// Trash is the folder holding it.
	Trash string `json:"trash"`
}

// Trash lists the sessions in the home's trash, the most recently
// trashed first. It changes nothing.
func Trash(ctx context.Context, home Home) ([]TrashInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t := &trasher{home: home, rep: &CleanupReport{}}
	ents, err := t.entries()
	if err != nil {
		return nil, err
	}
	out := []TrashInfo{}
	for _, e := range ents {
		info := TrashInfo{Trash: e.dir}
		switch {
		case e.m == nil:
			info.Problem = "no readable manifest: " + e.err.Error()
		default:
			info.SessionID = e.m.SessionID
			info.TrashedAt, info.LastActivity = e.m.TrashedAt, e.m.LastActivity
			if len(e.m.Items) > 0 {
				info.Path = t.origin(e.m.Items[0])
			}
			switch {
			case len(e.m.Items) == 0:
				info.Problem = "the entry lists nothing to restore"
			case e.m.State == stateRestoring:
				info.Problem, info.Restorable = "a restore was interrupted: restoring it again finishes it", true
			case e.m.State == stateMoving:
				info.Problem, info.Restorable = "moving it to the trash was interrupted: restoring it puts it back", true
			default:
				if err := t.checkRestore(e.dir, e.m); err != nil {
					info.Problem = err.Error()
				} else {
					info.Restorable = true
				}
			}
		}
		out = append(out, info)
	}
	slices.SortStableFunc(out, func(a, b TrashInfo) int { return b.TrashedAt.Compare(a.TrashedAt) })
	return out, nil
}
