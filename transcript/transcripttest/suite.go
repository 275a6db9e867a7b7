// Package transcripttest is the conformance suite every transcript.Store
// must pass. Run it from the store's tests:
//
//	transcripttest.Run(t, func(t *testing.T) transcripttest.Harness { … })
package transcripttest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/transcript"
)

// Harness gives the suite a fresh, empty store and ways to look behind it.
type Harness struct {
	Store transcript.Store
	// Reopen returns a new handle on the same data, as a later process
	// would see it. A store that keeps nothing beyond its own lifetime
	// returns the same store.
	Reopen func() transcript.Store
	// AppendRaw appends bytes to a session as they are, simulating a crash
	// or another program.
	AppendRaw func(sessionID string, b []byte)
}

// Run runs the conformance suite.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	tests := []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"AppendAndRead", testAppendAndRead},
		{"Persistence", testPersistence},
		{"UnknownFieldsSurvive", testUnknownFields},
		{"ExclusiveAppender", testExclusive},
		{"TornTailNotExtended", testTornTail},
		{"SessionsAndRemove", testSessionsAndRemove},
		{"WriterDeduplicates", testWriterDedup},
		{"WriterKeepsOrder", testWriterOrder},
		{"LoadAfterWrite", testLoadAfterWrite},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, newHarness(t)) })
	}
}

const sid = "5b0d5a1e-0000-4000-8000-000000000001"

// Entries returns a user → assistant chain of n entries for sessionID.
func Entries(sessionID string, n int) []transcript.Entry {
	var out []transcript.Entry
	parent := ""
	for i := range n {
		e := transcript.Entry{
			Type:       transcript.TypeUser,
			UUID:       fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1),
			ParentUUID: parent,
			SessionID:  sessionID,
			Timestamp:  fmt.Sprintf("2026-11-30T10:00:%02d.000Z", i%60),
			CWD:        "/work/proj",
			Version:    "cairn-test",
			UserType:   "external",
			Entrypoint: "cli",
			GitBranch:  "main",
			Message:    []byte(fmt.Sprintf(`{"role":"user","content":"prompt %d"}`, i)),
		}
		if i%2 == 1 {
			e.Type = transcript.TypeAssistant
			e.Message = []byte(fmt.Sprintf(`{"id":"msg_%d","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"answer %d"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}`, i, i))
			e.RequestID = fmt.Sprintf("req_%d", i)
		}
		out = append(out, e)
		parent = e.UUID
	}
	return out
}

// ReadAll decodes every line of a session, failing on any invalid one.
func ReadAll(t *testing.T, s transcript.Store, sessionID string) []transcript.Entry {
	t.Helper()
	src, err := s.OpenSource(context.Background(), sessionID)
	if err != nil {
		t.Fatalf("OpenSource: %v", err)
	}
	defer src.Close()
	b, err := io.ReadAll(io.NewSectionReader(src, 0, src.Size()))
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var out []transcript.Entry
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if line == "" {
			continue
		}
		e, err := transcript.DecodeEntry([]byte(line))
		if err != nil {
			t.Fatalf("line %d is not a valid entry: %v\n%s", i+1, err, line)
		}
		out = append(out, e)
	}
	return out
}

func uuids(es []transcript.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.UUID)
	}
	return out
}

func uuidsOf(es []*transcript.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.UUID)
	}
	return out
}

func open(t *testing.T, s transcript.Store, id string) transcript.Appender {
	t.Helper()
	a, err := s.OpenAppender(context.Background(), id)
	if err != nil {
		t.Fatalf("OpenAppender: %v", err)
	}
	return a
}

func testAppendAndRead(t *testing.T, h Harness) {
	ctx := context.Background()
	a := open(t, h.Store, sid)
	want := Entries(sid, 6)
	if err := a.Append(ctx, want[:2], true); err != nil {
		t.Fatal(err)
	}
	if err := a.Append(ctx, want[2:], false); err != nil {
		t.Fatal(err)
	}
	if err := a.Append(ctx, nil, true); err != nil {
		t.Fatalf("empty append: %v", err)
	}
	a.Close()
	got := ReadAll(t, h.Store, sid)
	if diff := cmp.Diff(uuids(want), uuids(got)); diff != "" {
		t.Errorf("uuids (-want +got):\n%s", diff)
	}
	for i := range got {
		if got[i].ParentUUID != want[i].ParentUUID || string(got[i].Message) != string(want[i].Message) {
			t.Errorf("entry %d changed on the way: got %+v", i, got[i])
		}
	}
	if _, err := h.Store.OpenSource(ctx, "no-such-session"); !errors.Is(err, transcript.ErrNotFound) {
		t.Errorf("OpenSource(missing) = %v, want ErrNotFound", err)
	}
}

func testPersistence(t *testing.T, h Harness) {
	ctx := context.Background()
	a := open(t, h.Store, sid)
	want := Entries(sid, 3)
	if err := a.Append(ctx, want, true); err != nil {
		t.Fatal(err)
	}
	a.Close()
	again := h.Reopen()
	got := ReadAll(t, again, sid)
	if diff := cmp.Diff(uuids(want), uuids(got)); diff != "" {
		t.Errorf("after reopen (-want +got):\n%s", diff)
	}
	// Appending after reopening continues the same file.
	a = open(t, again, sid)
	more := Entries(sid, 4)[3:]
	if err := a.Append(ctx, more, true); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if n := len(ReadAll(t, again, sid)); n != 4 {
		t.Errorf("after a second append: %d entries, want 4", n)
	}
}

func testUnknownFields(t *testing.T, h Harness) {
	ctx := context.Background()
	line := `{"parentUuid":null,"isSidechain":false,"futureField":{"nested":[1,2,3]},"type":"user","message":{"role":"user","content":"hi","futureMessageField":true},"uuid":"11111111-0000-4000-8000-000000000001","timestamp":"2026-11-30T10:00:00.000Z","sessionId":"` + sid + `"}`
	e, err := transcript.DecodeEntry([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	side := `{"type":"brand-new-record","payload":"x","sessionId":"` + sid + `"}`
	se, err := transcript.DecodeEntry([]byte(side))
	if err != nil {
		t.Fatal(err)
	}
	a := open(t, h.Store, sid)
	if err := a.Append(ctx, []transcript.Entry{e, se}, true); err != nil {
		t.Fatal(err)
	}
	a.Close()
	got := ReadAll(t, h.Store, sid)
	if len(got) != 2 {
		t.Fatalf("got %d entries, want 2", len(got))
	}
	if v := string(got[0].Unknown()["futureField"]); v != `{"nested":[1,2,3]}` {
		t.Errorf("futureField = %s, want it kept", v)
	}
	if !strings.Contains(string(got[0].Message), "futureMessageField") {
		t.Errorf("message lost an unknown field: %s", got[0].Message)
	}
	if got[1].Type != "brand-new-record" || string(got[1].Unknown()["payload"]) != `"x"` {
		t.Errorf("unknown record type not kept: %+v", got[1])
	}
}

func testExclusive(t *testing.T, h Harness) {
	ctx := context.Background()
	a := open(t, h.Store, sid)
	if _, err := h.Store.OpenAppender(ctx, sid); !errors.Is(err, transcript.ErrLocked) {
		t.Errorf("second OpenAppender = %v, want ErrLocked", err)
	}
	if _, err := h.Reopen().OpenAppender(ctx, sid); !errors.Is(err, transcript.ErrLocked) {
		t.Errorf("OpenAppender through another handle = %v, want ErrLocked", err)
	}
	other := open(t, h.Store, sid+"-other") // other sessions are not affected
	other.Close()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b := open(t, h.Store, sid)
	b.Close()
}

func testTornTail(t *testing.T, h Harness) {
	ctx := context.Background()
	a := open(t, h.Store, sid)
	es := Entries(sid, 3)
	if err := a.Append(ctx, es[:1], true); err != nil {
		t.Fatal(err)
	}
	a.Close()
	h.AppendRaw(sid, []byte(`{"parentUuid":"x","type":"user","mess`))
	a = open(t, h.Store, sid)
	if err := a.Append(ctx, es[1:], true); err != nil {
		t.Fatal(err)
	}
	a.Close()
	src, err := h.Store.OpenSource(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	conv, err := transcript.Load(ctx, src, transcript.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(uuids(es), uuidsOf(conv.FromFile())); diff != "" {
		t.Errorf("chain after a torn line (-want +got):\n%s", diff)
	}
	if len(conv.Warnings) != 1 || !strings.Contains(conv.Warnings[0], "line 2") {
		t.Errorf("warnings = %q, want one naming line 2", conv.Warnings)
	}
}

func testSessionsAndRemove(t *testing.T, h Harness) {
	ctx := context.Background()
	for _, id := range []string{"a-1", "b-2"} {
		a := open(t, h.Store, id)
		if err := a.Append(ctx, Entries(id, 1), true); err != nil {
			t.Fatal(err)
		}
		a.Close()
	}
	list, err := h.Store.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range list {
		ids = append(ids, s.ID)
		if s.Size == 0 {
			t.Errorf("session %s has size 0", s.ID)
		}
	}
	slices.Sort(ids)
	if diff := cmp.Diff([]string{"a-1", "b-2"}, ids); diff != "" {
		t.Errorf("Sessions (-want +got):\n%s", diff)
	}
	if err := h.Store.Remove(ctx, "a-1"); err != nil {
		t.Fatal(err)
	}
	if err := h.Store.Remove(ctx, "a-1"); !errors.Is(err, transcript.ErrNotFound) {
		t.Errorf("second Remove = %v, want ErrNotFound", err)
	}
	if _, err := h.Store.OpenSource(ctx, "a-1"); !errors.Is(err, transcript.ErrNotFound) {
		t.Errorf("OpenSource after Remove = %v, want ErrNotFound", err)
	}
	if _, err := h.Store.OpenAppender(ctx, "../escape"); err == nil {
		t.Error("OpenAppender accepted a path as a session id")
	}
}

func testWriterDedup(t *testing.T, h Harness) {
	ctx := context.Background()
	es := Entries(sid, 4)
	a := open(t, h.Store, sid)
	if err := a.Append(ctx, es[:2], true); err != nil {
		t.Fatal(err)
	}
	// A resumed writer knows the first two; appending the whole chain again
	// writes only what is new, once.
	w := transcript.NewWriter(a, transcript.WriterOptions{Known: uuids(es[:2])})
	if err := w.Append(es...); err != nil {
		t.Fatal(err)
	}
	if err := w.AppendDurable(ctx, es[3]); err != nil {
		t.Fatal(err)
	}
	if !w.Seen(es[2].UUID) || w.Seen("never") {
		t.Error("Seen is wrong")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(uuids(es), uuids(ReadAll(t, h.Store, sid))); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	if err := w.Append(es[0]); err == nil {
		t.Error("Append after Close succeeded")
	}

	// KnownIn tells the same without the list.
	const sid2 = sid + "-known"
	es = Entries(sid2, 4)
	a = open(t, h.Store, sid2)
	if err := a.Append(ctx, es[:2], true); err != nil {
		t.Fatal(err)
	}
	onDisk := map[string]bool{es[0].UUID: true, es[1].UUID: true}
	w = transcript.NewWriter(a, transcript.WriterOptions{KnownIn: func(id string) bool { return onDisk[id] }})
	if err := w.Append(es...); err != nil {
		t.Fatal(err)
	}
	if !w.Seen(es[0].UUID) || !w.Seen(es[3].UUID) || w.Seen("never") {
		t.Error("Seen is wrong with KnownIn")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(uuids(es), uuids(ReadAll(t, h.Store, sid2))); diff != "" {
		t.Errorf("lines with KnownIn (-want +got):\n%s", diff)
	}
}

func testWriterOrder(t *testing.T, h Harness) {
	ctx := context.Background()
	es := Entries(sid, 200)
	w := transcript.NewWriter(open(t, h.Store, sid), transcript.WriterOptions{})
	var wg sync.WaitGroup
	for i, e := range es {
		if i%10 == 0 {
			if err := w.AppendDurable(ctx, e); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := w.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	// Concurrent flushes are safe.
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Flush(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(uuids(es), uuids(ReadAll(t, h.Store, sid))); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func testLoadAfterWrite(t *testing.T, h Harness) {
	ctx := context.Background()
	es := Entries(sid, 10)
	w := transcript.NewWriter(open(t, h.Store, sid), transcript.WriterOptions{Eager: true})
	if err := w.Append(es...); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	src, err := h.Reopen().OpenSource(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	conv, err := transcript.Load(ctx, src, transcript.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(uuids(es), uuidsOf(conv.FromFile())); diff != "" {
		t.Errorf("loaded chain (-want +got):\n%s", diff)
	}
	if n := len(conv.Messages()); n != 10 {
		t.Errorf("%d messages, want 10", n)
	}
}
