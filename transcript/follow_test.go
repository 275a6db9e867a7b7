package transcript_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/transcript"
)

// TestFollow: the follower gets whole lines appended after it started,
// a line written in two pieces once, and follows a file replaced under
// it from the new file's end.
func TestFollow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	store := transcript.NewFileStore(t.TempDir())
	path := store.Path("s")
	os.WriteFile(path, []byte("old 1\nold 2\n"), 0o600)
	if err := store.Follow(ctx, "x", time.Millisecond, func() { t.Error("started") }, nil); !errors.Is(err, transcript.ErrNotFound) {
		t.Errorf("a missing session: %v", err)
	}
	started := make(chan struct{})
	got := make(chan string, 10)
	fctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- store.Follow(fctx, "s", time.Millisecond, func() { close(started) }, func(l []byte) error { got <- string(l); return nil })
	}()
	<-started
	next := func() string {
		select {
		case l := <-got:
			return l
		case <-ctx.Done():
			t.Fatal("no line came")
			return ""
		}
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("new 1\nnew")
	if l := next(); l != "new 1" {
		t.Errorf("first line %q", l)
	}
	f.WriteString(" 2\n")
	f.Close()
	if l := next(); l != "new 2" {
		t.Errorf("the line written in two pieces: %q", l)
	}
	// A repair replaces the file: the tail goes on from the new end.
	tmp := path + ".tmp"
	os.WriteFile(tmp, []byte("old 1\nold 2\nnew 1\nnew 2\n"), 0o600)
	os.Rename(tmp, path)
	// (A line appended as the replacement is noticed is skipped: the
	// new file is followed from its end then. Append until one comes.)
	for deadline := time.Now().Add(10 * time.Second); ; {
		f, _ = os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString("after\n")
		f.Close()
		select {
		case l := <-got:
			if l != "after" {
				t.Fatalf("after the replacement: %q", l)
			}
		case <-time.After(50 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("the tail did not follow the new file")
			}
			continue
		}
		break
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("Follow after its context ended: %v", err)
	}
}
