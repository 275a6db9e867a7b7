package transcript_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/transcript"
)

const (
	lockDirEnv  = "CAIRN_TEST_LOCK_DIR"
	lockSession = "0d7c3e52-9a41-4b8f-a6e0-3f1b2c4d5e6f"
)

// TestLockAcrossProcesses starts two processes that open the same session
// at the same moment: exactly one may append, the other is told the
// session is in use.
func TestLockAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	store := transcript.NewFileStore(dir)
	for round := range 3 {
		var children []*child
		for range 2 {
			children = append(children, startChild(t, "TestLockChild", lockDirEnv+"="+dir))
		}
		// Both open as soon as they read the go-ahead.
		for _, c := range children {
			if _, err := c.in.Write([]byte("g")); err != nil {
				t.Fatal(err)
			}
		}
		var opened, locked []string
		for _, c := range children {
			if !c.out.Scan() {
				c.in.Close()
				c.cmd.Wait()
				t.Fatalf("round %d: the child said nothing: %s", round, c.stderr.String())
			}
			switch line := c.out.Text(); {
			case line == "opened":
				opened = append(opened, line)
			case strings.HasPrefix(line, "locked: "):
				locked = append(locked, strings.TrimPrefix(line, "locked: "))
			default:
				t.Fatalf("round %d: the child said %q", round, line)
			}
		}
		if len(opened) != 1 || len(locked) != 1 {
			t.Fatalf("round %d: %d processes opened the session and %d were refused; want one of each", round, len(opened), len(locked))
		}
		msg := locked[0]
		if !strings.Contains(msg, transcript.ErrLocked.Error()) || !strings.Contains(msg, store.Path(lockSession)) {
			t.Errorf("round %d: the refusal %q should say the session is in use and name its file %s", round, msg, store.Path(lockSession))
		}
		// The winner holds the lock until told to stop.
		for _, c := range children {
			c.in.Close()
			if err := c.cmd.Wait(); err != nil {
				t.Fatalf("round %d: child: %v\n%s", round, err, c.stderr.String())
			}
		}
	}
	// Both are gone: the session opens again.
	app, err := store.OpenAppender(context.Background(), lockSession)
	if err != nil {
		t.Fatalf("open after both processes exited: %v", err)
	}
	app.Close()
}

// TestLockChild opens the session when it reads a byte from stdin, says
// whether it could, and holds it until stdin closes. Run alone it does
// nothing.
func TestLockChild(t *testing.T) {
	dir := os.Getenv(lockDirEnv)
	if dir == "" {
		t.Skip("the child process of TestLockAcrossProcesses")
	}
	in := bufio.NewReader(os.Stdin)
	if _, err := in.ReadByte(); err != nil {
		t.Fatal(err)
	}
	app, err := transcript.NewFileStore(dir).OpenAppender(context.Background(), lockSession)
	switch {
	case err == nil:
		fmt.Println("opened")
	case errors.Is(err, transcript.ErrLocked):
		fmt.Println("locked:", strings.ReplaceAll(err.Error(), "\n", " "))
	default:
		t.Fatal(err)
	}
	io.Copy(io.Discard, in)
	if app != nil {
		if err := app.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWriterConcurrentAppends appends from many goroutines through one
// Writer, durably and not, single entries and batches, small and large:
// the file holds every entry once, each a whole valid line, each
// goroutine's entries in the order it appended them.
func TestWriterConcurrentAppends(t *testing.T) {
	const goroutines, each = 8, 120
	ctx := context.Background()
	store := transcript.NewFileStore(t.TempDir())
	app, err := store.OpenAppender(ctx, "concurrent")
	if err != nil {
		t.Fatal(err)
	}
	w := transcript.NewWriter(app, transcript.WriterOptions{})
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 99))
			for i := 0; i < each; {
				n := 1
				if rng.IntN(4) == 0 {
					n = min(1+rng.IntN(3), each-i)
				}
				var batch []transcript.Entry
				for range n {
					size := 20 + rng.IntN(500)
					if rng.IntN(20) == 0 {
						size = 64<<10 + rng.IntN(64<<10)
					}
					batch = append(batch, concurrentEntry(g, i, size))
					i++
				}
				var err error
				if rng.IntN(5) == 0 {
					err = w.AppendDurable(ctx, batch...)
				} else {
					err = w.Append(batch...)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	data, err := os.ReadFile(store.Path("concurrent"))
	if err != nil {
		t.Fatal(err)
	}
	next := make([]int, goroutines) // the next index expected from each goroutine
	lines := 0
	for line := range bytes.Lines(data) {
		lines++
		if !bytes.HasSuffix(line, []byte("\n")) {
			t.Fatalf("line %d has no newline: %.100q", lines, line)
		}
		e, err := transcript.DecodeEntry(line)
		if err != nil {
			t.Fatalf("line %d is not a whole entry (%v): %.100q", lines, err, line)
		}
		var g, i int
		if _, err := fmt.Sscanf(e.UUID[len(e.UUID)-12:], "%04d%08d", &g, &i); err != nil || g >= goroutines {
			t.Fatalf("line %d: unexpected uuid %s", lines, e.UUID)
		}
		if i != next[g] {
			t.Fatalf("line %d: entry %d of goroutine %d, want entry %d: entries lost, repeated or reordered", lines, i, g, next[g])
		}
		next[g]++
	}
	if lines != goroutines*each {
		t.Fatalf("%d lines, want %d", lines, goroutines*each)
	}
}

func concurrentEntry(g, i, size int) transcript.Entry {
	var m jsonw.Object
	m.Str("role", "user")
	m.Str("content", fmt.Sprintf("goroutine %d entry %d ", g, i)+strings.Repeat("x", size))
	return transcript.Entry{
		Type: transcript.TypeUser, UUID: fmt.Sprintf("00000000-0000-4000-8000-%04d%08d", g, i),
		Message: m.Bytes(), SessionID: "concurrent", Timestamp: "2026-01-12T09:00:00.000Z",
	}
}

// TestTornLastLineNotExtended leaves the file ending mid-line, as a crash
// during a write does, and appends: the new entry starts on a line of its
// own and the damaged bytes stay as they were.
func TestTornLastLineNotExtended(t *testing.T) {
	ctx := context.Background()
	s := newChildSession("torn", rand.New(rand.NewPCG(5, 5)), "")
	first := s.user("the last prompt written whole")
	whole, err := first.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	whole = append(whole, '\n')
	half, err := s.user("the prompt a crash cut short").MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		tail []byte
	}{
		{"half a line", half[:len(half)/2]},
		{"an opening brace", []byte("{")},
		{"inside an escape", []byte(`{"type":"user","message":{"content":"a \`)},
		{"zero bytes", make([]byte, 700)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := transcript.NewFileStore(t.TempDir())
			path := store.Path("torn")
			before := append(append([]byte(nil), whole...), tc.tail...)
			if err := os.WriteFile(path, before, 0o600); err != nil {
				t.Fatal(err)
			}
			s.parent = first.UUID
			next := s.user("the first prompt after the crash")
			appendOne(t, store, next)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			line, err := next.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			want := append(append(append([]byte(nil), before...), '\n'), line...)
			want = append(want, '\n')
			if !bytes.Equal(data, want) {
				t.Fatalf("after the append the file is\n%q\nwant\n%q", data, want)
			}

			// A clean end gets no blank line before the next append.
			again := s.user("and one more")
			appendOne(t, store, again)
			data, err = os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(data, []byte("\n\n")) {
				t.Errorf("an append after a whole line left a blank line:\n%q", data)
			}

			src, err := transcript.OpenFile(path)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			conv, err := transcript.Load(ctx, src, transcript.LoadOptions{})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			var got []string
			for _, e := range conv.FromFile() {
				got = append(got, e.UUID)
			}
			if want := []string{first.UUID, next.UUID, again.UUID}; strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("the chain is %v, want %v", got, want)
			}
			if len(conv.Warnings) == 0 {
				t.Error("Load did not warn about the damaged line")
			}
		})
	}
}

// appendOne appends e durably in a fresh Writer, as a new process would.
func appendOne(t *testing.T, store *transcript.FileStore, e transcript.Entry) {
	t.Helper()
	app, err := store.OpenAppender(context.Background(), e.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	w := transcript.NewWriter(app, transcript.WriterOptions{})
	if err := w.AppendDurable(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
