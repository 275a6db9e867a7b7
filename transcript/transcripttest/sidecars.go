package transcripttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/transcript"
)

// TestSidecars is the conformance suite of transcript.Sidecars: newStore
// returns a fresh, empty store that implements it. Run it from the
// store's tests:
//
//	func TestSidecars(t *testing.T) {
//		transcripttest.TestSidecars(t, func(t *testing.T) transcript.Store { … })
//	}
func TestSidecars(t *testing.T, newStore func(t *testing.T) transcript.Store) {
	tests := []struct {
		name string
		fn   func(*testing.T, transcript.Store, transcript.Sidecars)
	}{
		{"WriteReadReplace", testSidecarRoundTrip},
		{"Missing", testSidecarMissing},
		{"ListSorted", testSidecarList},
		{"InvalidNames", testSidecarNames},
		{"SessionsApart", testSidecarSessions},
		{"RemovedWithSession", testSidecarRemove},
		{"NoAliasing", testSidecarAliasing},
		{"WholeReplace", testSidecarWhole},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			sc, ok := s.(transcript.Sidecars)
			if !ok {
				t.Fatalf("%T does not implement transcript.Sidecars", s)
			}
			tt.fn(t, s, sc)
		})
	}
}

func mustWrite(t *testing.T, sc transcript.Sidecars, id, name, data string) {
	t.Helper()
	if err := sc.WriteSidecar(context.Background(), id, name, []byte(data)); err != nil {
		t.Fatalf("WriteSidecar(%s, %s): %v", id, name, err)
	}
}

func mustRead(t *testing.T, sc transcript.Sidecars, id, name string) string {
	t.Helper()
	b, err := sc.ReadSidecar(context.Background(), id, name)
	if err != nil {
		t.Fatalf("ReadSidecar(%s, %s): %v", id, name, err)
	}
	return string(b)
}

func mustList(t *testing.T, sc transcript.Sidecars, id string) []string {
	t.Helper()
	names, err := sc.ListSidecars(context.Background(), id)
	if err != nil {
		t.Fatalf("ListSidecars(%s): %v", id, err)
	}
	return names
}

func testSidecarRoundTrip(t *testing.T, _ transcript.Store, sc transcript.Sidecars) {
	const name = "tool-results/toolu_01.txt"
	mustWrite(t, sc, sid, name, "first\n")
	if got := mustRead(t, sc, sid, name); got != "first\n" {
		t.Errorf("read %q, want %q", got, "first\n")
	}
	mustWrite(t, sc, sid, name, "second")
	if got := mustRead(t, sc, sid, name); got != "second" {
		t.Errorf("after a replace, read %q, want %q", got, "second")
	}
	mustWrite(t, sc, sid, "empty.md", "")
	if got := mustRead(t, sc, sid, "empty.md"); got != "" {
		t.Errorf("an empty file reads %q", got)
	}
}

func testSidecarMissing(t *testing.T, _ transcript.Store, sc transcript.Sidecars) {
	ctx := context.Background()
	if _, err := sc.ReadSidecar(ctx, sid, "tool-results/none.txt"); !errors.Is(err, transcript.ErrNotFound) {
		t.Errorf("reading a missing file: %v, want ErrNotFound", err)
	}
	names, err := sc.ListSidecars(ctx, sid)
	if err != nil || len(names) != 0 {
		t.Errorf("a session without sidecar files lists %q, %v; want nothing and no error", names, err)
	}
}

func testSidecarList(t *testing.T, _ transcript.Store, sc transcript.Sidecars) {
	want := []string{
		"session-memory/summary.md",
		"subagents/agent-a1.jsonl",
		"subagents/agent-b2.jsonl",
		"tool-results/toolu_02.txt",
		"tool-results/toolu_10.txt",
	}
	for _, i := range []int{3, 0, 4, 2, 1} { // written out of order
		mustWrite(t, sc, sid, want[i], want[i])
	}
	mustWrite(t, sc, sid, want[3], "again") // a replace lists once
	if diff := cmp.Diff(want, mustList(t, sc, sid)); diff != "" {
		t.Errorf("ListSidecars (-want +got):\n%s", diff)
	}
}

func testSidecarNames(t *testing.T, _ transcript.Store, sc transcript.Sidecars) {
	ctx := context.Background()
	for _, name := range []string{"", ".", "..", "../escape", "a/../../b", "a/./b", "./a", "a//b", "a/", "/etc/passwd", `a\b`, "a\x00b"} {
		if err := sc.WriteSidecar(ctx, sid, name, []byte("x")); err == nil {
			t.Errorf("WriteSidecar accepted the name %q", name)
		}
		if _, err := sc.ReadSidecar(ctx, sid, name); err == nil || errors.Is(err, transcript.ErrNotFound) {
			t.Errorf("ReadSidecar(%q) = %v, want an invalid-name error", name, err)
		}
	}
	for _, id := range []string{"", "..", "a/b"} {
		if err := sc.WriteSidecar(ctx, id, "notes.md", []byte("x")); err == nil {
			t.Errorf("WriteSidecar accepted the session id %q", id)
		}
	}
	if names := mustList(t, sc, sid); len(names) != 0 {
		t.Errorf("rejected writes left %q", names)
	}
}

func testSidecarSessions(t *testing.T, _ transcript.Store, sc transcript.Sidecars) {
	other := "5b0d5a1e-0000-4000-8000-000000000002"
	mustWrite(t, sc, sid, "notes.md", "mine")
	mustWrite(t, sc, other, "notes.md", "theirs")
	if got := mustRead(t, sc, sid, "notes.md"); got != "mine" {
		t.Errorf("session one reads %q", got)
	}
	if got := mustRead(t, sc, other, "notes.md"); got != "theirs" {
		t.Errorf("session two reads %q", got)
	}
}

func testSidecarRemove(t *testing.T, s transcript.Store, sc transcript.Sidecars) {
	ctx := context.Background()
	other := "5b0d5a1e-0000-4000-8000-000000000002"
	for _, id := range []string{sid, other} {
		a := open(t, s, id)
		if err := a.Append(ctx, Entries(id, 2), true); err != nil {
			t.Fatal(err)
		}
		a.Close()
		mustWrite(t, sc, id, "tool-results/toolu_01.txt", "result")
		mustWrite(t, sc, id, "subagents/agent-a1.jsonl", "{}\n")
	}
	if err := s.Remove(ctx, sid); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if names := mustList(t, sc, sid); len(names) != 0 {
		t.Errorf("after Remove the session still has %q", names)
	}
	if _, err := sc.ReadSidecar(ctx, sid, "tool-results/toolu_01.txt"); !errors.Is(err, transcript.ErrNotFound) {
		t.Errorf("reading a removed session's file: %v, want ErrNotFound", err)
	}
	if diff := cmp.Diff([]string{"subagents/agent-a1.jsonl", "tool-results/toolu_01.txt"}, mustList(t, sc, other)); diff != "" {
		t.Errorf("the other session's files (-want +got):\n%s", diff)
	}
}

func testSidecarAliasing(t *testing.T, _ transcript.Store, sc transcript.Sidecars) {
	data := []byte("kept as written")
	if err := sc.WriteSidecar(context.Background(), sid, "notes.md", data); err != nil {
		t.Fatal(err)
	}
	copy(data, "XXXX")
	got, err := sc.ReadSidecar(context.Background(), sid, "notes.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "kept as written" {
		t.Fatalf("the store kept the caller's slice: read %q", got)
	}
	copy(got, "YYYY")
	if again := mustRead(t, sc, sid, "notes.md"); again != "kept as written" {
		t.Errorf("the store handed out its own slice: read %q after changing the last", again)
	}
}

// testSidecarWhole replaces a file while others read it: every read is
// one whole version, never a mix or a cut.
func testSidecarWhole(t *testing.T, _ transcript.Store, sc transcript.Sidecars) {
	const name = "session-memory/summary.md"
	versions := [][]byte{bytes.Repeat([]byte("a"), 64<<10), bytes.Repeat([]byte("b"), 32<<10)}
	mustWrite(t, sc, sid, name, string(versions[0]))
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 40 {
			if err := sc.WriteSidecar(ctx, sid, name, versions[i%2]); err != nil {
				errs <- err
				return
			}
		}
	}()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 40 {
				b, err := sc.ReadSidecar(ctx, sid, name)
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(b, versions[0]) && !bytes.Equal(b, versions[1]) {
					errs <- fmt.Errorf("read %d bytes that are neither version", len(b))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
