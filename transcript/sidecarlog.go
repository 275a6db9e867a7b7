package transcript

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
)

// SidecarStore returns the Store of the line logs kept among sessionID's
// sidecar files under folder ("subagents": the subagents' transcripts,
// <folder>/<id>.jsonl), and false when s keeps no sidecar files.
//
// A FileStore gives a FileStore over the folder on disk, whose appends are
// appends. Any other Sidecars store gives a store that rewrites the whole
// file on each Append (a subagent's transcript is written in a few
// batches), whose appender is exclusive only among the handles of this
// one returned Store, and whose Remove is not supported.
func SidecarStore(s Store, sessionID, folder string) (Store, bool) {
	if err := validSidecar(sessionID, folder); err != nil {
		return nil, false
	}
	if dir := SidecarDir(s, sessionID); dir != "" {
		return NewFileStore(filepath.Join(dir, filepath.FromSlash(folder))), true
	}
	sc, ok := s.(Sidecars)
	if !ok {
		return nil, false
	}
	return &sidecarLogs{sc: sc, session: sessionID, folder: folder, open: map[string]bool{}}, true
}

type sidecarLogs struct {
	sc      Sidecars
	session string
	folder  string
	mu      sync.Mutex
	open    map[string]bool
}

func (l *sidecarLogs) name(id string) (string, error) {
	if err := validID(id); err != nil {
		return "", err
	}
	return l.folder + "/" + id + ".jsonl", nil
}

func (l *sidecarLogs) OpenAppender(ctx context.Context, id string) (Appender, error) {
	name, err := l.name(id)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[id] {
		return nil, fmt.Errorf("%s: %w", name, ErrLocked)
	}
	buf, err := l.sc.ReadSidecar(ctx, l.session, name)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if err := l.sc.WriteSidecar(ctx, l.session, name, buf); err != nil {
		return nil, err
	}
	l.open[id] = true
	return &sidecarLog{l: l, id: id, name: name, buf: buf}, nil
}

type sidecarLog struct {
	l      *sidecarLogs
	id     string
	name   string
	buf    []byte
	closed bool
}

func (a *sidecarLog) Append(ctx context.Context, entries []Entry, durable bool) error {
	if a.closed {
		return errors.New("append to a closed transcript")
	}
	if len(entries) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	torn := len(a.buf) > 0 && a.buf[len(a.buf)-1] != '\n'
	lines, err := encodeLines(entries, torn)
	if err != nil {
		return err
	}
	next := append(bytes.Clone(a.buf), lines...)
	if err := a.l.sc.WriteSidecar(ctx, a.l.session, a.name, next); err != nil {
		return fmt.Errorf("write %s: %w", a.name, err)
	}
	a.buf = next
	return nil
}

func (a *sidecarLog) Close() error {
	if a.closed {
		return nil
	}
	a.closed = true
	a.l.mu.Lock()
	delete(a.l.open, a.id)
	a.l.mu.Unlock()
	return nil
}

func (l *sidecarLogs) OpenSource(ctx context.Context, id string) (Source, error) {
	name, err := l.name(id)
	if err != nil {
		return nil, err
	}
	b, err := l.sc.ReadSidecar(ctx, l.session, name)
	if err != nil {
		return nil, err
	}
	return BytesSource(b), nil
}

func (l *sidecarLogs) Sessions(ctx context.Context) ([]SessionInfo, error) {
	names, err := l.sc.ListSidecars(ctx, l.session)
	if err != nil {
		return nil, err
	}
	var out []SessionInfo
	for _, n := range names {
		rest, ok := strings.CutPrefix(n, l.folder+"/")
		if !ok || strings.Contains(rest, "/") || !strings.HasSuffix(rest, ".jsonl") {
			continue
		}
		b, err := l.sc.ReadSidecar(ctx, l.session, n)
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, SessionInfo{ID: strings.TrimSuffix(rest, ".jsonl"), Size: int64(len(b))})
	}
	return out, nil
}

func (l *sidecarLogs) Remove(ctx context.Context, id string) error {
	return errors.New("removing one line log of a session's sidecar files is not supported; remove the session")
}
