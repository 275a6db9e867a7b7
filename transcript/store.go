package transcript

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrLocked is returned by Store.OpenAppender when another writer (another
// cairn process, most likely) has the session open.
var ErrLocked = errors.New("the session is open in another cairn process; wait for it to finish, or continue it as a new session with --fork-session")

// ErrNotSynced is wrapped by the error of an Append whose lines were
// written but could not be synced: they are in the file and must not be
// written again, but may not survive a crash.
var ErrNotSynced = errors.New("written but not synced to disk")

// ErrNotFound is returned when a session does not exist in a store.
var ErrNotFound = errors.New("session not found")

// Store keeps the transcripts of one project: one append-only line log per
// session. Implementations are safe for concurrent use. Cancelling ctx
// abandons a call that has not started writing; a line is never left half
// written by cancellation.
type Store interface {
	// OpenAppender opens sessionID for appending, creating it if needed.
	// At most one Appender per session is open at a time, across processes:
	// a second one gets an error wrapping ErrLocked.
	OpenAppender(ctx context.Context, sessionID string) (Appender, error)
	// OpenSource returns the session's bytes as written so far. Reading needs
	// no lock. A missing session returns an error wrapping ErrNotFound.
	OpenSource(ctx context.Context, sessionID string) (Source, error)
	// Sessions lists the sessions in the store, in no particular order.
	Sessions(ctx context.Context) ([]SessionInfo, error)
	// Remove deletes a session with everything stored beside it. Removing a
	// missing session returns an error wrapping ErrNotFound.
	Remove(ctx context.Context, sessionID string) error
}

// Appender appends lines to one session.
type Appender interface {
	// Append writes the entries as whole lines, in order, in one write.
	// With durable set it returns only once they are on stable storage;
	// when the lines were written but the sync failed, the error wraps
	// ErrNotSynced.
	// After a failed or cut-short write, the next Append starts on a fresh
	// line, so a partial line is never extended.
	Append(ctx context.Context, entries []Entry, durable bool) error
	// Close releases the session's lock.
	Close() error
}

// Source is a read-only view of a session's bytes.
type Source interface {
	io.ReaderAt
	// Size is the number of bytes available to ReadAt.
	Size() int64
	Close() error
}

// SessionInfo describes a stored session.
type SessionInfo struct {
	ID      string
	Size    int64
	ModTime time.Time
	// Path is the file's path for a FileStore, empty otherwise.
	Path string
}

// encodeLines renders entries as newline-terminated lines.
func encodeLines(entries []Entry, leadingNewline bool) ([]byte, error) {
	var buf []byte
	if leadingNewline {
		buf = append(buf, '\n')
	}
	for i := range entries {
		b, err := entries[i].MarshalJSON()
		if err != nil {
			return nil, err
		}
		buf = append(buf, b...)
		buf = append(buf, '\n')
	}
	return buf, nil
}
