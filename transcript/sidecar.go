package transcript

import "context"

// Sidecars keeps the files stored beside a session's transcript, in Claude
// Code's layout of the session's sidecar folder: large tool results under
// "tool-results/", subagent transcripts under "subagents/", session notes.
// A name is a slash-separated path relative to that folder, with no empty,
// "." or ".." element. Implementations are safe for concurrent use.
//
// A Store that keeps sidecar files implements Sidecars too; Remove of a
// session removes its sidecar files.
type Sidecars interface {
	// WriteSidecar stores data under name, replacing what was there. A
	// reader sees either the old or the new content, never a mix.
	WriteSidecar(ctx context.Context, sessionID, name string, data []byte) error
	// ReadSidecar returns what is stored under name; a missing file returns
	// an error wrapping ErrNotFound.
	ReadSidecar(ctx context.Context, sessionID, name string) ([]byte, error)
	// ListSidecars returns the names stored for the session, sorted; a
	// session without sidecar files gives an empty list and no error.
	ListSidecars(ctx context.Context, sessionID string) ([]string, error)
}
