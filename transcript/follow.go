package transcript

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"time"
)

// Follow follows the transcript of sessionID as it grows, looking every
// poll for bytes appended to its file and reading only those: it calls
// start once the file is open, then line with each whole line appended
// from then on, in order, until ctx ends (it then returns nil) or line
// fails. A file that shrinks or is replaced (by a repair) is followed
// from its new end. A missing session is an error wrapping ErrNotFound,
// returned before start.
func (s *FileStore) Follow(ctx context.Context, sessionID string, poll time.Duration, start func(), line func([]byte) error) error {
	if err := validID(sessionID); err != nil {
		return err
	}
	path := s.Path(sessionID)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("session %s: %w", sessionID, ErrNotFound)
	}
	if err != nil {
		return err
	}
	defer func() { f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	off := fi.Size()
	start()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	var pending []byte // a line being written
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		fi, err := os.Stat(path)
		if err != nil {
			continue // being replaced; look again
		}
		if fi.Size() < off || !os.SameFile(fi, statOf(f)) {
			// Replaced: follow the new file from its end.
			nf, err := os.Open(path)
			if err != nil {
				continue
			}
			f.Close()
			f, off, pending = nf, fi.Size(), nil
			continue
		}
		if fi.Size() == off {
			continue
		}
		buf := make([]byte, fi.Size()-off)
		n, err := f.ReadAt(buf, off)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		off += int64(n)
		pending = append(pending, buf[:n]...)
		end := bytes.LastIndexByte(pending, '\n')
		if end < 0 {
			continue
		}
		for l := range bytes.SplitSeq(pending[:end], []byte("\n")) {
			if err := line(l); err != nil {
				return err
			}
		}
		pending = slices.Clone(pending[end+1:])
	}
}

func statOf(f *os.File) fs.FileInfo {
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	return fi
}
