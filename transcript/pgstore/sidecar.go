package pgstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-dev/cairn/transcript"
)

// The store keeps a session's sidecar files under the names of Claude
// Code's sidecar folder (<project>/<session>/): "tool-results/…",
// "subagents/…". A session's file-history backups, which Claude Code keeps
// apart (<home>/file-history/<session>/), are kept under the prefix
// FileHistoryPrefix, so one session's files are one list.
const FileHistoryPrefix = "file-history/"

var _ transcript.Sidecars = (*Store)(nil)

// WriteSidecar implements transcript.Sidecars: one statement, so a reader
// sees the old or the new content.
func (s *Store) WriteSidecar(ctx context.Context, sessionID, name string, data []byte) error {
	if err := validID(sessionID); err != nil {
		return err
	}
	if err := transcript.ValidSidecarName(name); err != nil {
		return err
	}
	if data == nil {
		data = []byte{}
	}
	_, err := s.db.pool.Exec(ctx, `INSERT INTO cairn_sidecars (project, session_id, name, data) VALUES ($1, $2, $3, $4)
		ON CONFLICT (project, session_id, name) DO UPDATE SET data = EXCLUDED.data, modified = now()`, s.project, sessionID, name, data)
	if err != nil {
		return fmt.Errorf("team store: write %s of session %s: %w", name, sessionID, err)
	}
	return nil
}

// ReadSidecar implements transcript.Sidecars.
func (s *Store) ReadSidecar(ctx context.Context, sessionID, name string) ([]byte, error) {
	if err := validID(sessionID); err != nil {
		return nil, err
	}
	if err := transcript.ValidSidecarName(name); err != nil {
		return nil, err
	}
	var data []byte
	err := s.db.pool.QueryRow(ctx, `SELECT data FROM cairn_sidecars WHERE project = $1 AND session_id = $2 AND name = $3`, s.project, sessionID, name).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%s of session %s in the team store: %w", name, sessionID, transcript.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("team store: read %s of session %s: %w", name, sessionID, err)
	}
	return data, nil
}

// ListSidecars implements transcript.Sidecars.
func (s *Store) ListSidecars(ctx context.Context, sessionID string) ([]string, error) {
	sums, err := s.sidecarSums(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(sums))
	for _, sum := range sums {
		out = append(out, sum.name)
	}
	return out, nil
}

type sidecarSum struct {
	name string
	size int64
	sha  [32]byte
}

// sidecarSums lists a session's files with their sizes and digests,
// sorted by name (in bytes, as Go sorts strings).
func (s *Store) sidecarSums(ctx context.Context, sessionID string) ([]sidecarSum, error) {
	if err := validID(sessionID); err != nil {
		return nil, err
	}
	rows, err := s.db.pool.Query(ctx, `SELECT name, size, sha256 FROM cairn_sidecars WHERE project = $1 AND session_id = $2 ORDER BY name COLLATE "C"`, s.project, sessionID)
	if err != nil {
		return nil, fmt.Errorf("team store: list the files of session %s: %w", sessionID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sidecarSum, error) {
		var sum sidecarSum
		var sha []byte
		err := r.Scan(&sum.name, &sum.size, &sha)
		copy(sum.sha[:], sha)
		return sum, err
	})
	if err != nil {
		return nil, fmt.Errorf("team store: list the files of session %s: %w", sessionID, err)
	}
	return out, nil
}

// SidecarReport says what a sidecar sync did: the files it copied, and
// the ones it left alone because both sides changed them differently.
type SidecarReport struct {
	Copied int
	Kept   []string // names whose two copies differ; each side keeps its own
}

// SyncedRecord is the name, among a session's local sidecar files, of the
// record of what was last synced: per file, the SHA-256 of the content
// the two sides last agreed on (sent or fetched). It is how a file
// rewritten whole (the session notes) tells "changed here", "changed
// there" and "changed on both sides" apart. Its name starts with ".", so
// sidecar listings leave it out; the syncs skip it too.
const SyncedRecord = ".sidecars-synced.json"

// syncBase is the record read at the start of a sync; set notes what the
// sync agreed on, and save merges that into the record as it is by then.
type syncBase struct {
	sums    map[string]string // name → hex SHA-256
	changed map[string]string
}

func loadBase(ctx context.Context, local transcript.Sidecars, sessionID string) (*syncBase, error) {
	b := &syncBase{sums: map[string]string{}, changed: map[string]string{}}
	data, err := local.ReadSidecar(ctx, sessionID, SyncedRecord)
	if errors.Is(err, transcript.ErrNotFound) {
		return b, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the sidecar sync record of session %s (delete %s to start it afresh): %w", sessionID, SyncedRecord, err)
	}
	// A damaged record counts as none: every file that differs on both
	// sides is then a conflict, each side keeping its copy; nothing is lost.
	if json.Unmarshal(data, &b.sums) != nil {
		b.sums = map[string]string{}
	}
	return b, nil
}

// base returns the digest name was last synced at, if known.
func (b *syncBase) base(name string) ([32]byte, bool) {
	var sum [32]byte
	h, ok := b.sums[name]
	if !ok {
		return sum, false
	}
	raw, err := hex.DecodeString(h)
	if err != nil || len(raw) != len(sum) {
		return sum, false
	}
	copy(sum[:], raw)
	return sum, true
}

func (b *syncBase) set(name string, sum [32]byte) {
	h := hex.EncodeToString(sum[:])
	if b.sums[name] != h {
		b.sums[name] = h
		b.changed[name] = h
	}
}

func (b *syncBase) save(ctx context.Context, local transcript.Sidecars, sessionID string) error {
	if len(b.changed) == 0 {
		return nil
	}
	now, err := loadBase(ctx, local, sessionID)
	if err != nil {
		return err
	}
	maps.Copy(now.sums, b.changed)
	data, err := json.Marshal(now.sums)
	if err != nil {
		return err
	}
	if err := local.WriteSidecar(ctx, sessionID, SyncedRecord, data); err != nil {
		return fmt.Errorf("write the sidecar sync record of session %s: %w", sessionID, err)
	}
	return nil
}

// SyncSidecars sends the store the session's files from local that it
// lacks or holds an older copy of. A file that grew (a subagent's
// transcript) sends only what was appended; a file rewritten here since
// the last sync (see SyncedRecord) replaces the store's copy if that is
// still the one last synced; a file the store holds a longer or newer
// version of is left for FetchSidecars; a file both sides changed
// differently keeps the store's copy and is named in Kept.
func SyncSidecars(ctx context.Context, local transcript.Sidecars, remote *Store, sessionID string) (SidecarReport, error) {
	var rep SidecarReport
	names, err := local.ListSidecars(ctx, sessionID)
	if err != nil {
		return rep, err
	}
	names = slices.DeleteFunc(names, func(n string) bool { return n == SyncedRecord })
	if len(names) == 0 {
		return rep, nil
	}
	sums, err := remote.sidecarSums(ctx, sessionID)
	if err != nil {
		return rep, err
	}
	have := make(map[string]sidecarSum, len(sums))
	for _, s := range sums {
		have[s.name] = s
	}
	base, err := loadBase(ctx, local, sessionID)
	if err != nil {
		return rep, err
	}
	for _, name := range names {
		data, err := local.ReadSidecar(ctx, sessionID, name)
		if errors.Is(err, transcript.ErrNotFound) {
			continue // gone since it was listed
		}
		if err != nil {
			return rep, err
		}
		mine := sha256.Sum256(data)
		was, known := base.base(name)
		theirs, ok := have[name]
		switch {
		case !ok:
			err = remote.insertSidecar(ctx, sessionID, name, data)
		case theirs.sha == mine:
			base.set(name, mine)
			continue
		case theirs.size < int64(len(data)) && theirs.sha == sha256.Sum256(data[:theirs.size]):
			err = remote.appendSidecar(ctx, sessionID, name, theirs.size, theirs.sha, data[theirs.size:])
		case known && theirs.sha == was:
			err = remote.replaceSidecar(ctx, sessionID, name, theirs.sha, data)
		case known && mine == was:
			continue // changed in the store only: FetchSidecars brings it
		case theirs.size > int64(len(data)):
			var prefix bool
			if prefix, err = remote.hasPrefix(ctx, sessionID, name, data); err == nil && !prefix {
				rep.Kept = append(rep.Kept, name)
			}
			if err != nil {
				return rep, err
			}
			continue
		default:
			rep.Kept = append(rep.Kept, name)
			continue
		}
		if errors.Is(err, errMoved) {
			rep.Kept = append(rep.Kept, name)
			continue
		}
		if err != nil {
			return rep, err
		}
		base.set(name, mine)
		rep.Copied++
	}
	return rep, base.save(ctx, local, sessionID)
}

var errMoved = errors.New("changed in the store meanwhile")

// insertSidecar writes a file the store lacked when listed; errMoved
// when another machine wrote one meanwhile (its copy stays).
func (s *Store) insertSidecar(ctx context.Context, sessionID, name string, data []byte) error {
	if err := transcript.ValidSidecarName(name); err != nil {
		return err
	}
	tag, err := s.db.pool.Exec(ctx, `INSERT INTO cairn_sidecars (project, session_id, name, data) VALUES ($1, $2, $3, $4)
		ON CONFLICT (project, session_id, name) DO NOTHING`, s.project, sessionID, name, data)
	if err != nil {
		return fmt.Errorf("team store: write %s of session %s: %w", name, sessionID, err)
	}
	if tag.RowsAffected() == 0 {
		return errMoved
	}
	return nil
}

// appendSidecar appends tail to a file the store holds size bytes of,
// with digest sha; errMoved when it holds other content by now.
func (s *Store) appendSidecar(ctx context.Context, sessionID, name string, size int64, sha [32]byte, tail []byte) error {
	tag, err := s.db.pool.Exec(ctx, `UPDATE cairn_sidecars SET data = data || $5, modified = now()
		WHERE project = $1 AND session_id = $2 AND name = $3 AND size = $4 AND sha256 = $6`, s.project, sessionID, name, size, tail, sha[:])
	if err != nil {
		return fmt.Errorf("team store: write %s of session %s: %w", name, sessionID, err)
	}
	if tag.RowsAffected() == 0 {
		return errMoved
	}
	return nil
}

// replaceSidecar replaces a file the store holds the copy with digest sha
// of; errMoved when it holds other content by now.
func (s *Store) replaceSidecar(ctx context.Context, sessionID, name string, sha [32]byte, data []byte) error {
	tag, err := s.db.pool.Exec(ctx, `UPDATE cairn_sidecars SET data = $4, modified = now()
		WHERE project = $1 AND session_id = $2 AND name = $3 AND sha256 = $5`, s.project, sessionID, name, data, sha[:])
	if err != nil {
		return fmt.Errorf("team store: write %s of session %s: %w", name, sessionID, err)
	}
	if tag.RowsAffected() == 0 {
		return errMoved
	}
	return nil
}

// hasPrefix reports whether the store's copy of a file begins with data.
func (s *Store) hasPrefix(ctx context.Context, sessionID, name string, data []byte) (bool, error) {
	sum := sha256.Sum256(data)
	var ok bool
	err := s.db.pool.QueryRow(ctx, `SELECT coalesce(sha256(substring(data FROM 1 FOR $4)) = $5, false) FROM cairn_sidecars
		WHERE project = $1 AND session_id = $2 AND name = $3`, s.project, sessionID, name, len(data), sum[:]).Scan(&ok)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("team store: read %s of session %s: %w", name, sessionID, err)
	}
	return ok, nil
}

// FetchSidecars brings down the session's files that local lacks, holds
// an older copy of (a prefix of the store's: a subagent's transcript that
// went on on another machine), or has not changed since the last sync
// while the store's changed (notes rewritten on another machine; see
// SyncedRecord). A local file changed here is never overwritten: when the
// store's copy changed too it is a conflict, named in Kept.
func FetchSidecars(ctx context.Context, remote *Store, local transcript.Sidecars, sessionID string) (SidecarReport, error) {
	var rep SidecarReport
	sums, err := remote.sidecarSums(ctx, sessionID)
	if err != nil || len(sums) == 0 {
		return rep, err
	}
	base, err := loadBase(ctx, local, sessionID)
	if err != nil {
		return rep, err
	}
	for _, theirs := range sums {
		if theirs.name == SyncedRecord {
			continue
		}
		mine, err := local.ReadSidecar(ctx, sessionID, theirs.name)
		missing := errors.Is(err, transcript.ErrNotFound)
		was, known := base.base(theirs.name)
		unchanged := known && !missing && sha256.Sum256(mine) == was
		switch {
		case missing:
		case err != nil:
			return rep, err
		case sha256.Sum256(mine) == theirs.sha:
			base.set(theirs.name, theirs.sha)
			continue
		case unchanged:
		case known && theirs.sha == was:
			continue // changed here only: SyncSidecars sends it
		case int64(len(mine)) >= theirs.size:
			rep.Kept = append(rep.Kept, theirs.name)
			continue
		}
		data, err := remote.ReadSidecar(ctx, sessionID, theirs.name)
		if err != nil {
			return rep, err
		}
		if !missing && !unchanged && !bytes.HasPrefix(data, mine) {
			rep.Kept = append(rep.Kept, theirs.name)
			continue
		}
		if err := local.WriteSidecar(ctx, sessionID, theirs.name, data); err != nil {
			return rep, err
		}
		base.set(theirs.name, sha256.Sum256(data))
		rep.Copied++
	}
	return rep, base.save(ctx, local, sessionID)
}
