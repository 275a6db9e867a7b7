package transcript_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/transcript"
	"github.com/cairn-dev/cairn/transcript/transcripttest"
)

// faultyAppender keeps what it is given, failing the calls fail says to.
type faultyAppender struct {
	mu    sync.Mutex
	lines []string
	fail  func(call int) error // nil: succeed
	calls int
}

func (a *faultyAppender) Append(_ context.Context, entries []transcript.Entry, durable bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	err := a.fail(a.calls)
	if err != nil && !errors.Is(err, transcript.ErrNotSynced) {
		return err // nothing written
	}
	for _, e := range entries {
		a.lines = append(a.lines, e.UUID)
	}
	return err
}

func (a *faultyAppender) Close() error { return nil }

// TestWriterFaults: a failed write is retried by the next one and reported
// as a SaveError saying what is on disk; a failed sync is reported but its
// lines, already in the file, are not written again.
func TestWriterFaults(t *testing.T) {
	es := transcripttest.Entries("faults", 4)
	at := time.Date(2026, 12, 1, 9, 30, 0, 0, time.Local)
	tests := []struct {
		name string
		fail error
		want []string // uuids in the file after the second write
		text string
	}{
		{"disk full", fmt.Errorf("write transcript: %w", syscall.ENOSPC), []string{es[0].UUID, es[1].UUID}, "the session could not be saved: disk full; nothing after 09:30:00 is on disk. Free some space, then --resume continues"},
		{"sync failed", fmt.Errorf("sync transcript: %w: %w", transcript.ErrNotSynced, syscall.EIO), []string{es[0].UUID, es[1].UUID}, "the session could not be saved: I/O error; what was written after 09:30:00 may not be on disk."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := &faultyAppender{fail: func(call int) error {
				if call == 1 {
					return tt.fail
				}
				return nil
			}}
			var told []error
			w := transcript.NewWriter(app, transcript.WriterOptions{Now: func() time.Time { return at }, OnError: func(err error) { told = append(told, err) }})
			err := w.AppendDurable(t.Context(), es[0])
			var se *transcript.SaveError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tt.text) {
				t.Fatalf("the failed durable write returned %v; want a SaveError saying %q", err, tt.text)
			}
			if len(told) != 0 {
				t.Errorf("OnError heard %v about a write whose caller got the error", told)
			}
			if err := w.AppendDurable(t.Context(), es[1]); err != nil {
				t.Fatalf("the next write: %v", err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, app.lines); diff != "" {
				t.Errorf("lines in the file (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("background write fails", func(t *testing.T) {
		app := &faultyAppender{fail: func(call int) error {
			if call > 1 {
				return syscall.ENOSPC
			}
			return nil
		}}
		told := make(chan error, 10)
		w := transcript.NewWriter(app, transcript.WriterOptions{Now: func() time.Time { return at }, OnError: func(err error) { told <- err }})
		if err := w.AppendDurable(t.Context(), es[0]); err != nil {
			t.Fatal(err)
		}
		if err := w.Append(es[1]); err != nil {
			t.Fatal(err)
		}
		if err := <-told; !strings.Contains(err.Error(), "disk full; nothing after 09:30:00") {
			t.Errorf("OnError heard %v", err)
		}
		// While the disk is full, Append says so (and keeps the entry).
		if err := w.Append(es[2]); err == nil {
			t.Error("Append after a failed write returned nil")
		}
		app.mu.Lock()
		app.fail = func(int) error { return nil }
		app.mu.Unlock()
		if err := w.Close(); err != nil {
			t.Fatalf("Close once the disk has room: %v", err)
		}
		if diff := cmp.Diff([]string{es[0].UUID, es[1].UUID, es[2].UUID}, app.lines); diff != "" {
			t.Errorf("lines in the file (-want +got):\n%s", diff)
		}
	})
}
