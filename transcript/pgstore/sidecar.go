package pgstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

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

// SyncSidecars sends the store the session's files from local that it
// lacks or holds an older copy of. A file that grew (a subagent's
// transcript) sends only what was appended; a file the store holds a
// longer version of is left as it is; a file both sides changed
// differently keeps the store's copy and is named in Kept.
func SyncSidecars(ctx context.Context, local transcript.Sidecars, remote *Store, sessionID string) (SidecarReport, error) {
	var rep SidecarReport
	names, err := local.ListSidecars(ctx, sessionID)
	if err != nil {
		return rep, err
	}
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
	for _, name := range names {
		data, err := local.ReadSidecar(ctx, sessionID, name)
		if errors.Is(err, transcript.ErrNotFound) {
			continue // gone since it was listed
		}
		if err != nil {
			return rep, err
		}
		theirs, ok := have[name]
		switch {
		case !ok:
			err = remote.WriteSidecar(ctx, sessionID, name, data)
		case theirs.sha == sha256.Sum256(data):
			continue
		case theirs.size < int64(len(data)) && theirs.sha == sha256.Sum256(data[:theirs.size]):
			err = remote.appendSidecar(ctx, sessionID, name, theirs.size, data[theirs.size:])
		case theirs.size > int64(len(data)):
			var prefix bool
			if prefix, err = remote.hasPrefix(ctx, sessionID, name, data); err == nil && !prefix {
				rep.Kept = append(rep.Kept, name)
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
		rep.Copied++
	}
	return rep, nil
}

var errMoved = errors.New("changed in the store meanwhile")

// appendSidecar appends tail to a file the store holds size bytes of;
// errMoved when it holds another size by now.
func (s *Store) appendSidecar(ctx context.Context, sessionID, name string, size int64, tail []byte) error {
	tag, err := s.db.pool.Exec(ctx, `UPDATE cairn_sidecars SET data = data || $5, modified = now()
		WHERE project = $1 AND session_id = $2 AND name = $3 AND size = $4`, s.project, sessionID, name, size, tail)
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

// FetchSidecars brings down the session's files that local lacks or
// holds an older copy of (a prefix of the store's: a subagent's
// transcript that went on on another machine). A local file that differs
// otherwise is never overwritten; it is named in Kept.
func FetchSidecars(ctx context.Context, remote *Store, local transcript.Sidecars, sessionID string) (SidecarReport, error) {
	var rep SidecarReport
	sums, err := remote.sidecarSums(ctx, sessionID)
	if err != nil || len(sums) == 0 {
		return rep, err
	}
	for _, theirs := range sums {
		mine, err := local.ReadSidecar(ctx, sessionID, theirs.name)
		switch {
		case errors.Is(err, transcript.ErrNotFound):
		case err != nil:
			return rep, err
		case sha256.Sum256(mine) == theirs.sha:
			continue
		case int64(len(mine)) >= theirs.size:
			rep.Kept = append(rep.Kept, theirs.name)
			continue
		}
		data, err := remote.ReadSidecar(ctx, sessionID, theirs.name)
		if err != nil {
			return rep, err
		}
		if mine != nil && !bytes.HasPrefix(data, mine) {
			rep.Kept = append(rep.Kept, theirs.name)
			continue
		}
		if err := local.WriteSidecar(ctx, sessionID, theirs.name, data); err != nil {
			return rep, err
		}
		rep.Copied++
	}
	return rep, nil
}
