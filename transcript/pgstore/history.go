package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-dev/cairn/transcript"
)

// LineSeq returns the sequence number and the bytes of the session's line
// with the uuid, through the index on (session, uuid): what a link into
// the middle of a session's history starts from. A session or a uuid the
// store does not have is an error wrapping transcript.ErrNotFound.
func (s *Store) LineSeq(ctx context.Context, sessionID, uuid string) (int64, []byte, error) {
	if err := validID(sessionID); err != nil {
		return 0, nil, err
	}
	var seq int64
	var line []byte
	err := s.db.pool.QueryRow(ctx, `SELECT seq, line FROM cairn_lines WHERE project = $1 AND session_id = $2 AND uuid = $3`,
		s.project, sessionID, uuid).Scan(&seq, &line)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil, fmt.Errorf("line %s of session %s in the team store: %w", uuid, sessionID, transcript.ErrNotFound)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("team store: %w", err)
	}
	return seq, line, nil
}

// LinesBackward calls fn with the session's lines that carry a uuid,
// newest first, from just before the line numbered before (from the last
// when before < 0), until fn returns false or the first line is passed.
// It reads batch lines a query (128 when batch <= 0; a history page and
// its look-ahead, say, in one round trip) along the index on (session,
// seq), so what it costs is what fn takes, wherever in the session it
// starts.
func (s *Store) LinesBackward(ctx context.Context, sessionID string, before int64, batch int, fn func(line []byte) bool) error {
	if err := validID(sessionID); err != nil {
		return err
	}
	if before < 0 {
		before = 1<<63 - 1
	}
	if batch <= 0 {
		batch = 128
	}
	for {
		rows, err := s.db.pool.Query(ctx, `SELECT seq, line FROM cairn_lines
			WHERE project = $1 AND session_id = $2 AND seq < $3 AND uuid IS NOT NULL
			ORDER BY seq DESC LIMIT $4`, s.project, sessionID, before, batch)
		if err != nil {
			return fmt.Errorf("team store: %w", err)
		}
		n, more := 0, true
		var seq int64
		var line []byte
		_, err = pgx.ForEachRow(rows, []any{&seq, &line}, func() error {
			n++
			before = seq
			if more && !fn(line) {
				more = false
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("team store: read session %s: %w", sessionID, err)
		}
		if !more || n < batch {
			return nil
		}
	}
}
