package pgstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/renameio/v2"
	"github.com/jackc/pgx/v5"

	"github.com/cairn-dev/cairn/transcript"
)

// Sync pushes to the team store every line of the local transcript that
// the store lacks, in order, and returns how many it pushed. It is
// idempotent: a line the store has (by uuid, or by its exact bytes for
// lines without one) is never pushed again. It takes the session's lock in
// the store, so it fails with transcript.ErrLocked while another machine
// writes the session.
func Sync(ctx context.Context, local transcript.Source, remote *Store, sessionID string) (int, error) {
	a, err := remote.OpenAppender(ctx, sessionID)
	if err != nil {
		return 0, err
	}
	defer a.Close()
	return a.(*appender).catchUp(ctx, local)
}

// catchUp pushes what the store lacks of local (see Sync) through a's
// connection, which holds the session's lock.
func (a *appender) catchUp(ctx context.Context, local transcript.Source) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.conn == nil {
		return 0, errors.New("sync through a closed transcript")
	}
	data, err := io.ReadAll(io.NewSectionReader(local, 0, local.Size()))
	if err != nil {
		return 0, fmt.Errorf("read the local transcript: %w", err)
	}
	// Only whole lines: a torn last line is still being written, or was
	// cut by a crash and is skipped on load anyway.
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1]
	} else {
		return 0, nil
	}
	var size int64
	var last []byte
	err = a.conn.QueryRow(ctx, `SELECT size, coalesce((SELECT line FROM cairn_lines WHERE project = $1 AND session_id = $2 ORDER BY seq DESC LIMIT 1), '')
		FROM cairn_sessions WHERE project = $1 AND session_id = $2`, a.s.project, a.id).Scan(&size, &last)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("team store: %w", err)
	}
	var missing [][]byte
	switch {
	case size == int64(len(data)) && (size == 0 || bytes.HasSuffix(data, append(last, '\n'))):
		return 0, nil // the usual case: the store has it all
	case size < int64(len(data)) && (size == 0 || bytes.HasSuffix(data[:size], append(last, '\n'))):
		missing = splitLines(data[size:]) // the store has a prefix
	default:
		if missing, err = a.notInStore(ctx, data); err != nil {
			return 0, err
		}
	}
	// The next batch is decoded and indexed while the server stores
	// this one.
	const batch = 2000
	batches := make(chan []Line, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(batches)
		for len(missing) > 0 {
			n := min(batch, len(missing))
			rows := make([]Line, n)
			for i, l := range missing[:n] {
				rows[i] = LineOf(l)
			}
			missing = missing[n:]
			select {
			case batches <- rows:
			case <-stop:
				return
			}
		}
	}()
	pushed := 0
	for rows := range batches {
		if err := insertLines(ctx, a.conn, a.s.project, a.id, rows); err != nil {
			return pushed, fmt.Errorf("team store: push session %s: %w", a.id, err)
		}
		pushed += len(rows)
	}
	return pushed, nil
}

// notInStore returns the lines of data the store lacks, comparing every
// line: by uuid where it has one, else by its bytes (as many times as the
// store holds it).
func (a *appender) notInStore(ctx context.Context, data []byte) ([][]byte, error) {
	have := map[string]bool{}
	sideCount := map[[32]byte]int{}
	rows, err := a.conn.Query(ctx, `SELECT coalesce(uuid, ''), line FROM cairn_lines WHERE project = $1 AND session_id = $2`, a.s.project, a.id)
	if err != nil {
		return nil, fmt.Errorf("team store: %w", err)
	}
	var uuid string
	var line []byte
	if _, err := pgx.ForEachRow(rows, []any{&uuid, &line}, func() error {
		if uuid != "" {
			have[uuid] = true
		} else {
			sideCount[sha256.Sum256(line)]++
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("team store: %w", err)
	}
	var missing [][]byte
	for _, l := range splitLines(data) {
		if l := LineOf(l); l.UUID != "" {
			if !have[l.UUID] {
				missing = append(missing, l.Bytes)
				have[l.UUID] = true
			}
			continue
		}
		h := sha256.Sum256(l)
		if sideCount[h] > 0 {
			sideCount[h]--
			continue
		}
		missing = append(missing, l)
	}
	return missing, nil
}

func splitLines(data []byte) [][]byte {
	var out [][]byte
	for l := range bytes.SplitSeq(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if len(l) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// Fetch copies a session from the team store to path, a local transcript
// file that does not exist yet, written atomically (mode 0600). It returns
// transcript.ErrNotFound when the store has no such session, and an error
// when path exists: a local copy is never overwritten.
func Fetch(ctx context.Context, remote *Store, sessionID, path string) error {
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("%s exists: the local copy is kept; push it with cairn sessions sync %s", path, sessionID)
	}
	src, err := remote.OpenSource(ctx, sessionID)
	if err != nil {
		return err
	}
	defer src.Close()
	data, err := io.ReadAll(io.NewSectionReader(src, 0, src.Size()))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := renameio.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Replicate returns an Appender that writes to local first (its result is
// the result of Append: the local guarantees do not change) and then, in
// order and in the background, to the team store. Before the first new
// line it pushes what the store lacks of before (the session's bytes as
// they were when it was opened; Replicate closes it), so a run after an
// outage catches up. With sidecars set, the session's sidecar files go
// too (see SyncSidecars): what the store lacks when the replica starts,
// and what changed when it closes.
// When the store cannot be reached or refuses, onBehind is called once
// with the reason and the store is left behind for the rest of the
// session; `cairn sessions sync` or a later run catches up. Append never
// waits on the store; Close waits for the queue to drain, at most
// CloseTimeout.
//
// remote is called once, in the background, for the store: connecting
// never delays the session.
func Replicate(local transcript.Appender, remote func(context.Context) (*Store, error), sessionID string, before transcript.Source, sidecars transcript.Sidecars, onBehind func(error)) transcript.Appender {
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{local: local, remote: remote, id: sessionID, before: before, sidecars: sidecars, onBehind: onBehind, cancel: cancel, done: make(chan struct{})}
	r.cond = sync.NewCond(&r.mu)
	go r.run(ctx)
	return r
}

// CloseTimeout bounds how long a replica's Close waits for the store to
// take what is queued.
var CloseTimeout = 10 * time.Second

type replica struct {
	local    transcript.Appender
	remote   func(context.Context) (*Store, error)
	id       string
	before   transcript.Source
	sidecars transcript.Sidecars
	onBehind func(error)
	cancel   context.CancelFunc
	done     chan struct{}

	mu     sync.Mutex
	cond   *sync.Cond
	queue  [][]transcript.Entry
	closed bool
	behind bool
}

func (r *replica) Append(ctx context.Context, entries []transcript.Entry, durable bool) error {
	if err := r.local.Append(ctx, entries, durable); err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	r.mu.Lock()
	if !r.behind && !r.closed {
		r.queue = append(r.queue, entries)
		r.cond.Signal()
	}
	r.mu.Unlock()
	return nil
}

// run owns the store's appender: it opens it, catches up, then pushes the
// queue in order until Close.
func (r *replica) run(ctx context.Context) {
	defer close(r.done)
	var a transcript.Appender
	s, err := r.remote(ctx)
	if err == nil {
		a, err = s.OpenAppender(ctx, r.id)
	}
	if err == nil && r.before != nil {
		if _, err = a.(*appender).catchUp(ctx, r.before); err != nil {
			a.Close()
		}
	}
	if r.before != nil {
		r.before.Close()
	}
	if err == nil && r.sidecars != nil {
		if _, err = SyncSidecars(ctx, r.sidecars, s, r.id); err != nil {
			a.Close()
		}
	}
	if err != nil {
		r.fail(err)
		return
	}
	defer a.Close()
	for {
		r.mu.Lock()
		for len(r.queue) == 0 && !r.closed {
			r.cond.Wait()
		}
		if len(r.queue) == 0 {
			r.mu.Unlock()
			// The session is over: the files it wrote beside its lines.
			if r.sidecars != nil {
				if _, err := SyncSidecars(ctx, r.sidecars, s, r.id); err != nil {
					r.fail(err)
				}
			}
			return
		}
		// Everything queued goes in one transaction: a slow commit makes
		// the batches bigger, not the queue longer.
		var batch []transcript.Entry
		for _, q := range r.queue {
			batch = append(batch, q...)
		}
		r.queue = nil
		r.mu.Unlock()
		if err := a.Append(ctx, batch, false); err != nil {
			r.fail(err)
			return
		}
	}
}

func (r *replica) fail(err error) {
	r.mu.Lock()
	r.behind = true
	r.queue = nil
	r.mu.Unlock()
	if r.onBehind != nil {
		r.onBehind(err)
	}
}

func (r *replica) Close() error {
	err := r.local.Close()
	r.mu.Lock()
	r.closed = true
	r.cond.Broadcast()
	r.mu.Unlock()
	select {
	case <-r.done:
	case <-time.After(CloseTimeout):
		r.cancel() // a push stuck on a dead server
		<-r.done
	}
	r.cancel()
	return err
}

// ErrDiverged is returned by Pull when the local transcript and the team
// store's both hold lines the other lacks: two machines wrote the session
// while apart. Nothing is changed; the local copy is kept.
var ErrDiverged = errors.New("the local transcript and the team store's copy have both moved on since they last agreed; the local copy is kept (continue it, or fork the store's with --fork-session on a machine without a local copy)")

// Pull appends to the local transcript what the team store holds beyond
// it — a session continued on another machine — and returns how many
// lines it added. The local file must be a prefix of the store's copy
// (else ErrDiverged); it is written under its lock, durably.
func Pull(ctx context.Context, remote *Store, sessionID string, local *transcript.FileStore) (int, error) {
	info, err := remote.Info(ctx, sessionID)
	if err != nil {
		return 0, err
	}
	app, err := local.OpenAppender(ctx, sessionID)
	if err != nil {
		return 0, err
	}
	defer app.Close()
	lsrc, err := local.OpenSource(ctx, sessionID)
	if err != nil {
		return 0, err
	}
	mine, err := io.ReadAll(io.NewSectionReader(lsrc, 0, lsrc.Size()))
	lsrc.Close()
	if err != nil {
		return 0, err
	}
	if info.Bytes <= int64(len(mine)) {
		return 0, nil // nothing new there (or more here: sync sends it)
	}
	rsrc, err := remote.OpenSource(ctx, sessionID)
	if err != nil {
		return 0, err
	}
	theirs, err := io.ReadAll(io.NewSectionReader(rsrc, 0, rsrc.Size()))
	if err != nil {
		return 0, err
	}
	if !bytes.HasPrefix(theirs, mine) {
		return 0, ErrDiverged
	}
	var entries []transcript.Entry
	for _, l := range splitLines(theirs[len(mine):]) {
		e, err := transcript.DecodeEntry(l)
		if err != nil {
			continue // a damaged line stays in the store; the loader would skip it anyway
		}
		entries = append(entries, e)
	}
	if err := app.Append(ctx, entries, true); err != nil {
		return 0, fmt.Errorf("write what the team store had: %w", err)
	}
	return len(entries), nil
}
