package transcript

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// MemStore is a Store in memory, for tests and for programs that embed
// cairn without a disk. The zero value is not usable; call NewMemStore.
type MemStore struct {
	mu       sync.Mutex
	sessions map[string]*memSession
	// sidecars holds each session's sidecar files by name.
	sidecars map[string]map[string][]byte
	now      func() time.Time
}

type memSession struct {
	buf     []byte
	open    bool
	modTime time.Time
}

// NewMemStore returns an empty in-memory store.
func NewMemStore() *MemStore {
	return &MemStore{sessions: make(map[string]*memSession), sidecars: make(map[string]map[string][]byte), now: time.Now}
}

// OpenAppender implements Store.
func (s *MemStore) OpenAppender(ctx context.Context, sessionID string) (Appender, error) {
	if err := validID(sessionID); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ms := s.sessions[sessionID]
	if ms == nil {
		ms = &memSession{modTime: s.now()}
		s.sessions[sessionID] = ms
	}
	if ms.open {
		return nil, fmt.Errorf("session %s: %w", sessionID, ErrLocked)
	}
	ms.open = true
	return &memAppender{s: s, ms: ms}, nil
}

// AppendRaw appends bytes as they are, bypassing the encoder: tests use it
// to simulate what a crash or another program leaves behind.
func (s *MemStore) AppendRaw(sessionID string, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ms := s.sessions[sessionID]
	if ms == nil {
		ms = &memSession{}
		s.sessions[sessionID] = ms
	}
	ms.buf = append(ms.buf, b...)
	ms.modTime = s.now()
}

type memAppender struct {
	s  *MemStore
	ms *memSession
}

func (a *memAppender) Append(ctx context.Context, entries []Entry, durable bool) error {
	if a.ms == nil {
		return errors.New("append to a closed transcript")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	torn := len(a.ms.buf) > 0 && a.ms.buf[len(a.ms.buf)-1] != '\n'
	buf, err := encodeLines(entries, torn)
	if err != nil {
		return err
	}
	a.ms.buf = append(a.ms.buf, buf...)
	a.ms.modTime = a.s.now()
	return nil
}

func (a *memAppender) Close() error {
	if a.ms == nil {
		return nil
	}
	a.s.mu.Lock()
	a.ms.open = false
	a.s.mu.Unlock()
	a.ms = nil
	return nil
}

// OpenSource implements Store. The source is a snapshot.
func (s *MemStore) OpenSource(ctx context.Context, sessionID string) (Source, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ms := s.sessions[sessionID]
	if ms == nil {
		return nil, fmt.Errorf("session %s: %w", sessionID, ErrNotFound)
	}
	return BytesSource(bytes.Clone(ms.buf)), nil
}

// BytesSource returns a Source over b.
func BytesSource(b []byte) Source { return bytesSource{bytes.NewReader(b)} }

type bytesSource struct{ *bytes.Reader }

func (bytesSource) Close() error { return nil }

// Sessions implements Store.
func (s *MemStore) Sessions(ctx context.Context) ([]SessionInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]SessionInfo, 0, len(s.sessions))
	for id, ms := range s.sessions {
		out = append(out, SessionInfo{ID: id, Size: int64(len(ms.buf)), ModTime: ms.modTime})
	}
	return out, nil
}

// Remove implements Store.
func (s *MemStore) Remove(ctx context.Context, sessionID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sessions[sessionID]; !ok {
		return fmt.Errorf("session %s: %w", sessionID, ErrNotFound)
	}
	delete(s.sessions, sessionID)
	delete(s.sidecars, sessionID)
	return nil
}
