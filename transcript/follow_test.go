package transcript_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cairn-dev/cairn/transcript"
)

// TestFollow: the follower gets whole lines appended after it started,
// a line written in two pieces once, and follows a file replaced under
// it from the new file's end as it stands when the follower looks. In a
// synctest bubble, so each look is at a known time: the test acts half a
// poll after one.
func TestFollow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const poll = time.Second
		store := transcript.NewFileStore(t.TempDir())
		path := store.Path("s")
		write := func(text string) {
			t.Helper()
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
			if err == nil {
				_, err = f.WriteString(text)
				f.Close()
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		write("old 1\nold 2\n")
		if err := store.Follow(t.Context(), "x", poll, func() { t.Error("started") }, nil); !errors.Is(err, transcript.ErrNotFound) {
			t.Errorf("a missing session: %v", err)
		}
		started := make(chan struct{})
		got := make(chan string, 10)
		fctx, stop := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			done <- store.Follow(fctx, "s", poll, func() { close(started) }, func(l []byte) error { got <- string(l); return nil })
		}()
		<-started
		time.Sleep(poll / 2)
		write("new 1\nnew")
		if l := <-got; l != "new 1" {
			t.Errorf("first line %q", l)
		}
		time.Sleep(poll / 2)
		write(" 2\n")
		if l := <-got; l != "new 2" {
			t.Errorf("the line written in two pieces: %q", l)
		}
		// A repair replaces the file: the follower goes on from the new
		// file's end when it next looks, so a line written to it before
		// then is not seen, and one written after is.
		time.Sleep(poll / 2)
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte("old 1\nold 2\nnew 1\nnew 2\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		write("unseen\n")
		time.Sleep(poll)
		write("after\n")
		if l := <-got; l != "after" {
			t.Errorf("after the replacement: %q", l)
		}
		synctest.Wait()
		select {
		case l := <-got:
			t.Errorf("a line more: %q", l)
		default:
		}
		stop()
		if err := <-done; err != nil {
			t.Errorf("Follow after its context ended: %v", err)
		}
	})
}
