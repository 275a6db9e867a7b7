package filehistory

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/cairn-dev/cairn/internal/jsonl"
	"github.com/cairn-dev/cairn/transcript"
)

// The file-history-snapshot record, as Claude Code writes it:
//
//	{"type":"file-history-snapshot","messageId":ID,"snapshot":{"messageId":ID,
//	 "trackedFileBackups":{PATH:{"backupFileName":NAME|null,"version":N,
//	 "backupTime":T}},"timestamp":T},"isSnapshotUpdate":BOOL}
//
// PATH is absolute, or relative to the session's working directory (older
// versions). Fields cairn does not use (realParentDir) are dropped when a
// snapshot is written again.
type wireSnapshot struct {
	MessageID          string                `json:"messageId"`
	TrackedFileBackups map[string]wireBackup `json:"trackedFileBackups"`
	Timestamp          string                `json:"timestamp"`
}

type wireBackup struct {
	BackupFileName *string `json:"backupFileName"`
	Version        int     `json:"version"`
	BackupTime     string  `json:"backupTime"`
}

// SnapshotEntry is the transcript record of a snapshot; update marks a
// snapshot rewritten during its turn.
func SnapshotEntry(s Snapshot, update bool) (transcript.Entry, error) {
	w := wireSnapshot{MessageID: s.MessageID, TrackedFileBackups: make(map[string]wireBackup, len(s.Files)), Timestamp: transcript.FormatTime(s.Time)}
	for path, b := range s.Files {
		wb := wireBackup{Version: b.Version, BackupTime: transcript.FormatTime(b.Time)}
		if b.Exists() {
			name := b.Name
			wb.BackupFileName = &name
		}
		w.TrackedFileBackups[path] = wb
	}
	snap, err := json.Marshal(w)
	if err != nil {
		return transcript.Entry{}, err
	}
	id, _ := json.Marshal(s.MessageID) // a string always encodes
	upd, _ := json.Marshal(update)
	return transcript.Entry{
		Type:  transcript.TypeFileHistorySnapshot,
		Extra: map[string]json.RawMessage{"messageId": id, "snapshot": snap, "isSnapshotUpdate": upd},
	}, nil
}

// DecodeSnapshot reads a file-history-snapshot record. Relative paths are
// taken from dir, the session's working directory.
func DecodeSnapshot(e *transcript.Entry, dir string) (s Snapshot, update bool, err error) {
	if e.Type != transcript.TypeFileHistorySnapshot {
		return s, false, fmt.Errorf("a %q record is not a file-history snapshot", e.Type)
	}
	fields := e.Unknown()
	if fields == nil {
		fields = make(map[string]json.RawMessage)
	}
	for k, v := range e.Extra {
		fields[k] = v
	}
	var w wireSnapshot
	if err := json.Unmarshal(fields["snapshot"], &w); err != nil {
		return s, false, fmt.Errorf("file-history snapshot: %w", err)
	}
	if w.MessageID == "" {
		if err := json.Unmarshal(fields["messageId"], &w.MessageID); err != nil || w.MessageID == "" {
			return s, false, fmt.Errorf("file-history snapshot without a messageId")
		}
	}
	if raw, ok := fields["isSnapshotUpdate"]; ok {
		json.Unmarshal(raw, &update) // anything but true is not an update
	}
	s = Snapshot{MessageID: w.MessageID, Time: parseTime(w.Timestamp), Files: make(map[string]Backup, len(w.TrackedFileBackups))}
	for path, wb := range w.TrackedFileBackups {
		if !filepath.IsAbs(path) {
			if dir == "" {
				continue
			}
			path = filepath.Join(dir, path)
		}
		b := Backup{Version: wb.Version, Time: parseTime(wb.BackupTime)}
		if wb.BackupFileName != nil {
			b.Name = *wb.BackupFileName
			if b.Name != filepath.Base(b.Name) || b.Name == "." || b.Name == ".." {
				return s, false, fmt.Errorf("file-history snapshot names backup %q, which is not a file name", b.Name)
			}
		}
		s.Files[filepath.Clean(path)] = b
	}
	return s, update, nil
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

var snapshotMark = []byte(`"` + transcript.TypeFileHistorySnapshot + `"`)

// Load reads the snapshots of a transcript, in order, with one forward
// pass that decodes only the lines naming a file-history snapshot: the
// others are found by the bytes of their type string, a block at a time,
// and cost no decoding (memory is bounded by the longest line, as in
// jsonl.Forward, whose line numbers and warnings it gives); the records
// are read as DecodeSnapshot reads them, the backups they share with the
// records before decoded once (see snapReader). An update
// replaces the snapshot of the same message. dir is the session's working
// directory, for relative paths. Damaged records are skipped with a
// warning.
func Load(ctx context.Context, r io.Reader, dir string) ([]Snapshot, []string, error) {
	return LoadRest(ctx, r, nil, dir)
}

// LoadRest is Load for a transcript that a transcript.Load asked for its
// snapshot lines (LoadOptions.Raw with TypeFileHistorySnapshot) read in
// part: r is the file before the Conversation's RawFrom, and rest its
// Raw, the snapshot lines of the part the load read. The records of rest
// come after those of r, in their order; a damaged one is named by the
// byte it starts at, not its line number, which that load did not count.
func LoadRest(ctx context.Context, r io.Reader, rest []transcript.RawLine, dir string) ([]Snapshot, []string, error) {
	l := snapLoad{rd: newSnapReader(dir), at: make(map[string]int)}
	warn := func(s string) { l.warnings = append(l.warnings, s) }
	// The search is for `y-snapshot"`: quotes and most letters are
	// everywhere in a transcript, and a search stops at each.
	m := marked{mark: snapshotMark, cut: len(`"file-histor`), block: scanBlock, maxLine: jsonl.MaxLineBytes, warn: warn}
	err := m.scan(ctx, r, func(no int, line []byte) error {
		l.add(line, func() string { return fmt.Sprintf("line %d", no) })
		return nil
	})
	if err != nil {
		return nil, l.warnings, fmt.Errorf("read file-history snapshots: %w", err)
	}
	for _, line := range rest {
		l.add(line.Bytes, func() string { return fmt.Sprintf("the line at byte %d", line.Offset) })
	}
	return l.snaps, l.warnings, nil
}

// snapLoad is what Load has read so far.
type snapLoad struct {
	rd       *snapReader
	snaps    []Snapshot
	warnings []string
	at       map[string]int // message id → its snapshot in snaps
}

// add reads the next line: a snapshot record is added, or replaces the
// one of the same message (an update); a damaged one is skipped with a
// warning naming it by where; other lines are ignored.
func (l *snapLoad) add(line []byte, where func() string) {
	s, ok, err := l.rd.line(line)
	if !ok {
		return
	}
	if err != nil {
		l.warnings = append(l.warnings, fmt.Sprintf("%s: %v; skipped", where(), err))
		return
	}
	if i, ok := l.at[s.MessageID]; ok {
		l.snaps[i].Files = s.Files
		return
	}
	l.at[s.MessageID] = len(l.snaps)
	l.snaps = append(l.snaps, s)
}

// Open rebuilds the history of a resumed session from its transcript; it
// never changes a file of the project (SPEC F4). When the session
// continues in a new one (--fork-session), from names the earlier
// session's backup folder: its backups are copied into opts.Dir (linked
// when the file system allows) and the snapshots are recorded in the new
// transcript, so the new session can rewind to messages of the old one.
// The transcript is read from r.
func Open(ctx context.Context, r io.Reader, dir, from string, opts Options) (*History, error) {
	snaps, warnings, err := Load(ctx, r, dir)
	if err != nil {
		return nil, err
	}
	return OpenLoaded(ctx, snaps, warnings, from, opts)
}

// OpenLoaded is Open of the snapshots and warnings LoadFile returned, for
// a caller that read them beside other work.
func OpenLoaded(ctx context.Context, snaps []Snapshot, warnings []string, from string, opts Options) (*History, error) {
	for _, w := range warnings {
		if opts.Warn != nil {
			opts.Warn("file history: " + w)
		}
	}
	h := New(opts, snaps)
	if ownFolder(from, opts.Dir) {
		return h, nil
	}
	if _, err := CopyBackups(from, opts.Dir); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.snaps {
		if err := h.record(ctx, s, false); err != nil {
			return nil, err
		}
	}
	return h, nil
}
