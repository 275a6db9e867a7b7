package filehistory

import (
	"bytes"
	"errors"
	"path/filepath"
	"strconv"

	"github.com/cairn-dev/cairn/internal/jsonscan"
	"github.com/cairn-dev/cairn/transcript"
)

// snapReader reads the file-history-snapshot records of one transcript.
// A record of the usual shape — the keys Claude Code and cairn write,
// spelt as they spell them, each once, with values of their types, and
// nothing damaged — is read with jsonscan, without reflection, and what
// it shares with the records before it is decoded once: a snapshot lists
// every file the session tracks, most with the backup the one before
// listed, and a long session writes one per prompt. Any other line goes
// the general way (DecodeEntry, DecodeSnapshot), so the results are the
// same either way (TestSnapshotLineFast, FuzzSnapshotLine).
type snapReader struct {
	dir string // the session's working directory
	// paths holds the path each key literal of trackedFileBackups named,
	// made absolute and clean; skip when it is relative and there is no
	// dir to take it from.
	paths map[string]snapPath
	// backups holds the backup each value literal described; bad when it
	// names a backup that is not a file name.
	backups map[string]snapBackup
	size    int // files in the last snapshot read
}

type snapPath struct {
	path string
	skip bool
}

type snapBackup struct {
	b   Backup
	bad bool
}

func newSnapReader(dir string) *snapReader {
	return &snapReader{dir: dir, paths: make(map[string]snapPath), backups: make(map[string]snapBackup)}
}

// line reads a line that may be a file-history-snapshot record, as
// DecodeEntry then DecodeSnapshot read it: ok is false when the line is
// not such a record (not an entry, or of another type), err says why a
// record is damaged.
func (r *snapReader) line(line []byte) (s Snapshot, ok bool, err error) {
	if s, fast := r.fast(line); fast {
		return s, true, nil
	}
	e, err := transcript.DecodeEntry(line)
	if err != nil || e.Type != transcript.TypeFileHistorySnapshot {
		return Snapshot{}, false, nil
	}
	s, _, err = DecodeSnapshot(&e, r.dir)
	return s, true, err
}

// errUnusual stops the fast read of a record that is not of the usual
// shape.
var errUnusual = errors.New("not of the usual shape")

// fast reads a record of the usual shape; fast is false for any other
// line, which the caller reads the general way.
func (r *snapReader) fast(line []byte) (s Snapshot, fast bool) {
	var typ, id, snap []byte
	seen := 0
	err := jsonscan.Members(line, func(key []byte, f jsonscan.Flags, val []byte) error {
		if f != 0 {
			return errUnusual
		}
		bit := 0
		switch string(key[1 : len(key)-1]) {
		case "type":
			bit, typ = 1, val
		case "messageId":
			bit, id = 2, val
		case "snapshot":
			bit, snap = 4, val
		case "isSnapshotUpdate":
			bit = 8 // whether it is an update is not kept
		default:
			return errUnusual
		}
		if seen&bit != 0 {
			return errUnusual
		}
		seen |= bit
		return nil
	})
	if err != nil || string(typ) != `"`+transcript.TypeFileHistorySnapshot+`"` || len(snap) == 0 || snap[0] != '{' {
		return s, false
	}
	var stamp string
	files := make(map[string]Backup, r.size)
	err = jsonscan.TrustedMembers(snap, members(func(k string, val []byte) (bool, error) {
		switch k {
		case "messageId":
			return optString(val, &s.MessageID)
		case "timestamp":
			return optString(val, &stamp)
		case "trackedFileBackups":
			if jsonscan.IsNull(val) {
				return true, nil
			}
			if val[0] != '{' {
				return false, nil
			}
			return true, jsonscan.TrustedMembers(val, func(key []byte, f jsonscan.Flags, val []byte) error {
				p, ok := r.paths[string(key)]
				if !ok {
					path, err := jsonscan.Unquote(key, f)
					if err != nil {
						return errUnusual
					}
					if !filepath.IsAbs(path) {
						if r.dir == "" {
							p.skip = true
						}
						path = filepath.Join(r.dir, path)
					}
					p.path = filepath.Clean(path)
					r.paths[string(key)] = p
				}
				b, ok := r.backups[string(val)]
				if !ok {
					if val[0] != '{' {
						return errUnusual
					}
					w, err := fastBackup(val)
					if err != nil {
						return err
					}
					b.b = Backup{Version: w.Version, Time: parseTime(w.BackupTime)}
					if w.BackupFileName != nil {
						b.b.Name = *w.BackupFileName
						b.bad = b.b.Name != filepath.Base(b.b.Name) || b.b.Name == "." || b.b.Name == ".."
					}
					r.backups[string(val)] = b
				}
				switch {
				case p.skip:
				case b.bad:
					return errUnusual // the general way says what is wrong
				default:
					files[p.path] = b.b
				}
				return nil
			})
		}
		return true, nil
	}, "messageId", "timestamp", "trackedFileBackups"))
	if err != nil {
		return s, false
	}
	if s.MessageID == "" {
		// The record's own, which must then be there.
		if len(id) == 0 || id[0] != '"' {
			return s, false
		}
		if _, err := optString(id, &s.MessageID); err != nil || s.MessageID == "" {
			return s, false
		}
	}
	s.Time, s.Files = parseTime(stamp), files
	r.size = len(files)
	return s, true
}

// fastBackup reads a backup of the usual shape.
func fastBackup(obj []byte) (b wireBackup, err error) {
	err = jsonscan.TrustedMembers(obj, members(func(k string, val []byte) (bool, error) {
		switch k {
		case "backupFileName":
			if jsonscan.IsNull(val) {
				b.BackupFileName = nil
				return true, nil
			}
			var name string
			ok, err := optString(val, &name)
			b.BackupFileName = &name
			return ok, err
		case "backupTime":
			return optString(val, &b.BackupTime)
		case "version":
			if jsonscan.IsNull(val) {
				return true, nil
			}
			n, err := strconv.Atoi(string(val))
			if err != nil {
				return false, nil // 1.0, 1e3, too large: encoding/json's errors
			}
			b.Version = n
			return true, nil
		}
		return true, nil
	}, "backupFileName", "backupTime", "version"))
	return b, err
}

// members adapts field, which reads the value of one of the keys names
// and reports whether it was of the usual shape, to jsonscan: a key
// spelt otherwise that encoding/json would take for one of names, a key
// given twice or an unusual value stops the read with errUnusual; other
// keys are ignored, as encoding/json ignores them.
func members(field func(k string, val []byte) (bool, error), names ...string) jsonscan.MemberFunc {
	seen := 0
	return func(key []byte, f jsonscan.Flags, val []byte) error {
		k, err := jsonscan.KeyText(key, f)
		if err != nil {
			return errUnusual
		}
		for i, n := range names {
			if string(k) == n {
				if seen&(1<<i) != 0 {
					return errUnusual
				}
				seen |= 1 << i
				ok, err := field(n, val)
				if err != nil {
					return err
				}
				if !ok {
					return errUnusual
				}
				return nil
			}
			if bytes.EqualFold(k, []byte(n)) {
				return errUnusual
			}
		}
		return nil
	}
}

// optString reads a string or null (which leaves dst as it is) into dst;
// false for any other value.
func optString(val []byte, dst *string) (bool, error) {
	if jsonscan.IsNull(val) {
		return true, nil
	}
	if val[0] != '"' {
		return false, nil
	}
	s, err := jsonscan.Unquote(val, jsonscan.StringFlags(val))
	if err != nil {
		return false, nil
	}
	*dst = s
	return true, nil
}
