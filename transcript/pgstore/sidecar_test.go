package pgstore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/pgtest"
	"github.com/cairn-dev/cairn/transcript"
	"github.com/cairn-dev/cairn/transcript/pgstore"
)

// mapSidecars is a machine's sidecar files, in memory.
type mapSidecars struct {
	mu    sync.Mutex
	files map[string][]byte
}

func newMapSidecars(files map[string]string) *mapSidecars {
	m := &mapSidecars{files: map[string][]byte{}}
	for k, v := range files {
		m.files[k] = []byte(v)
	}
	return m
}

func (m *mapSidecars) WriteSidecar(_ context.Context, id, name string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[id+"/"+name] = slices.Clone(data)
	return nil
}

func (m *mapSidecars) ReadSidecar(_ context.Context, id, name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.files[id+"/"+name]
	if !ok {
		return nil, transcript.ErrNotFound
	}
	return slices.Clone(b), nil
}

func (m *mapSidecars) ListSidecars(_ context.Context, id string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for k := range m.files {
		if name, ok := strings.CutPrefix(k, id+"/"); ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (m *mapSidecars) snapshot() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]string{}
	for k, v := range m.files {
		if !strings.HasSuffix(k, "/"+pgstore.SyncedRecord) {
			out[k] = string(v)
		}
	}
	return out
}

func TestSidecars(t *testing.T) {
	ctx := context.Background()
	s := open(t).Project(pgtest.Project(t))
	if names, err := s.ListSidecars(ctx, "s1"); err != nil || len(names) != 0 || names == nil {
		t.Fatalf("no files: %#v, %v", names, err)
	}
	for name, data := range map[string]string{"tool-results/toolu_1.txt": "big output", "subagents/agent-a.jsonl": "{}\n", "file-history/abc@v1": "", "subagents/agent-a.jsonl ": "x"} {
		if err := s.WriteSidecar(ctx, "s1", name, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.WriteSidecar(ctx, "s1", "subagents/agent-a.jsonl", []byte("{}\n{}\n")); err != nil { // replaces
		t.Fatal(err)
	}
	names, err := s.ListSidecars(ctx, "s1")
	want := []string{"file-history/abc@v1", "subagents/agent-a.jsonl", "subagents/agent-a.jsonl ", "tool-results/toolu_1.txt"}
	if err != nil || !slices.Equal(names, want) {
		t.Errorf("ListSidecars = %q, %v; want %q", names, err, want)
	}
	if b, err := s.ReadSidecar(ctx, "s1", "subagents/agent-a.jsonl"); err != nil || string(b) != "{}\n{}\n" {
		t.Errorf("ReadSidecar = %q, %v", b, err)
	}
	if b, err := s.ReadSidecar(ctx, "s1", "file-history/abc@v1"); err != nil || b == nil || len(b) != 0 {
		t.Errorf("an empty file = %#v, %v", b, err)
	}
	if _, err := s.ReadSidecar(ctx, "s1", "nope"); !errors.Is(err, transcript.ErrNotFound) {
		t.Errorf("a missing file: %v", err)
	}
	for _, bad := range []string{"", "/abs", "a//b", "a/../b", "./a", "a/", `a\b`} {
		if err := s.WriteSidecar(ctx, "s1", bad, nil); err == nil {
			t.Errorf("WriteSidecar(%q) succeeded", bad)
		}
	}
	if err := s.WriteSidecar(ctx, "../s1", "a", nil); err == nil {
		t.Error("a bad session id was taken")
	}
	// Files only: Remove removes them, and the session is gone.
	if err := s.Remove(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if names, _ := s.ListSidecars(ctx, "s1"); len(names) != 0 {
		t.Errorf("after Remove: %q", names)
	}
	if err := s.Remove(ctx, "s1"); !errors.Is(err, transcript.ErrNotFound) {
		t.Errorf("second Remove: %v", err)
	}
}

// TestSidecarSync: files go up once, a grown one sends its tail, a file
// the store holds a longer copy of is left, one changed on both sides is
// kept on each; fetch brings down what a machine lacks or holds less of.
func TestSidecarSync(t *testing.T) {
	ctx := context.Background()
	remote := open(t).Project(pgtest.Project(t))
	a := newMapSidecars(map[string]string{
		"s1/tool-results/t1.txt":   "result one",
		"s1/subagents/agent.jsonl": "line 1\n",
		"s1/file-history/h@v1":     "old code",
		"s2/tool-results/t9.txt":   "another session",
	})
	for _, want := range []int{3, 0} {
		rep, err := pgstore.SyncSidecars(ctx, a, remote, "s1")
		if err != nil || rep.Copied != want || len(rep.Kept) != 0 {
			t.Fatalf("SyncSidecars = %+v, %v; want %d copied", rep, err, want)
		}
	}
	// The subagent goes on on A; B brings the session down.
	a.WriteSidecar(ctx, "s1", "subagents/agent.jsonl", []byte("line 1\nline 2\n"))
	if rep, err := pgstore.SyncSidecars(ctx, a, remote, "s1"); err != nil || rep.Copied != 1 {
		t.Fatalf("after growth: %+v, %v", rep, err)
	}
	b := newMapSidecars(map[string]string{"s1/tool-results/t1.txt": "result one"})
	if rep, err := pgstore.FetchSidecars(ctx, remote, b, "s1"); err != nil || rep.Copied != 2 {
		t.Fatalf("FetchSidecars = %+v, %v; want 2", rep, err)
	}
	want := map[string]string{"s1/tool-results/t1.txt": "result one", "s1/subagents/agent.jsonl": "line 1\nline 2\n", "s1/file-history/h@v1": "old code"}
	if d := cmp.Diff(want, b.snapshot()); d != "" {
		t.Errorf("B after the fetch (-want +got):\n%s", d)
	}
	// B's subagent goes on and is sent; A's shorter copy does not undo it,
	// and A's fetch brings the lines.
	b.WriteSidecar(ctx, "s1", "subagents/agent.jsonl", []byte("line 1\nline 2\nline 3\n"))
	pgstore.SyncSidecars(ctx, b, remote, "s1")
	if rep, err := pgstore.SyncSidecars(ctx, a, remote, "s1"); err != nil || rep.Copied != 0 || len(rep.Kept) != 0 {
		t.Errorf("A's older copy: %+v, %v", rep, err)
	}
	if got, _ := remote.ReadSidecar(ctx, "s1", "subagents/agent.jsonl"); string(got) != "line 1\nline 2\nline 3\n" {
		t.Errorf("the store has %q", got)
	}
	if rep, err := pgstore.FetchSidecars(ctx, remote, a, "s1"); err != nil || rep.Copied != 1 {
		t.Errorf("A's fetch: %+v, %v", rep, err)
	}
	// Both change one file differently: each keeps its own, and says so.
	b.WriteSidecar(ctx, "s1", "tool-results/t1.txt", []byte("result two"))
	if rep, err := pgstore.SyncSidecars(ctx, b, remote, "s1"); err != nil || rep.Copied != 1 {
		t.Fatalf("B's rewrite: %+v, %v", rep, err)
	}
	a.WriteSidecar(ctx, "s1", "tool-results/t1.txt", []byte("result ONE"))
	if rep, err := pgstore.SyncSidecars(ctx, a, remote, "s1"); err != nil || !slices.Equal(rep.Kept, []string{"tool-results/t1.txt"}) {
		t.Errorf("a conflicting sync: %+v, %v", rep, err)
	}
	if rep, err := pgstore.FetchSidecars(ctx, remote, a, "s1"); err != nil || !slices.Equal(rep.Kept, []string{"tool-results/t1.txt"}) {
		t.Errorf("a conflicting fetch: %+v, %v", rep, err)
	}
	if got, _ := a.ReadSidecar(ctx, "s1", "tool-results/t1.txt"); string(got) != "result ONE" {
		t.Errorf("A's own copy was overwritten: %q", got)
	}
	if got, _ := remote.ReadSidecar(ctx, "s1", "tool-results/t1.txt"); string(got) != "result two" {
		t.Errorf("the store's copy was overwritten: %q", got)
	}
	if names, _ := remote.ListSidecars(ctx, "s2"); len(names) != 0 {
		t.Errorf("another session's files went too: %q", names)
	}
}

// TestSidecarSyncRewrite: a file rewritten whole (the session notes)
// after a first sync reaches the other machine, over and over, and
// shorter as well as longer; a machine that did not change it takes the
// new copy on fetch.
func TestSidecarSyncRewrite(t *testing.T) {
	ctx := context.Background()
	remote := open(t).Project(pgtest.Project(t))
	const notes = "session-memory/summary.md"
	a := newMapSidecars(map[string]string{"s1/" + notes: "# notes v1\nfirst draft\n"})
	b := newMapSidecars(nil)
	if rep, err := pgstore.SyncSidecars(ctx, a, remote, "s1"); err != nil || rep.Copied != 1 {
		t.Fatalf("first sync: %+v, %v", rep, err)
	}
	if rep, err := pgstore.FetchSidecars(ctx, remote, b, "s1"); err != nil || rep.Copied != 1 {
		t.Fatalf("first fetch: %+v, %v", rep, err)
	}
	for i, text := range []string{"# notes v2\nrewritten, longer than before\n", "# v3\n", "# v4\nthe same size\n", "# v5\nthe same size\n"} {
		a.WriteSidecar(ctx, "s1", notes, []byte(text))
		if rep, err := pgstore.SyncSidecars(ctx, a, remote, "s1"); err != nil || rep.Copied != 1 || len(rep.Kept) != 0 {
			t.Fatalf("rewrite %d: sync = %+v, %v; want 1 copied", i, rep, err)
		}
		if rep, err := pgstore.FetchSidecars(ctx, remote, b, "s1"); err != nil || rep.Copied != 1 || len(rep.Kept) != 0 {
			t.Fatalf("rewrite %d: fetch = %+v, %v; want 1 copied", i, rep, err)
		}
		if got, _ := b.ReadSidecar(ctx, "s1", notes); string(got) != text {
			t.Fatalf("rewrite %d: B has %q, want %q", i, got, text)
		}
	}
	// B's sync after the fetch has nothing to send, and the notes go the
	// other way too.
	if rep, err := pgstore.SyncSidecars(ctx, b, remote, "s1"); err != nil || rep.Copied != 0 || len(rep.Kept) != 0 {
		t.Errorf("B's sync after the fetch: %+v, %v", rep, err)
	}
	b.WriteSidecar(ctx, "s1", notes, []byte("# from B\n"))
	pgstore.SyncSidecars(ctx, b, remote, "s1")
	// A has not synced yet: its sync leaves the store's newer copy alone.
	if rep, err := pgstore.SyncSidecars(ctx, a, remote, "s1"); err != nil || rep.Copied != 0 || len(rep.Kept) != 0 {
		t.Errorf("A's sync of an unchanged copy: %+v, %v", rep, err)
	}
	if rep, err := pgstore.FetchSidecars(ctx, remote, a, "s1"); err != nil || rep.Copied != 1 {
		t.Errorf("A's fetch: %+v, %v", rep, err)
	}
	if got, _ := a.ReadSidecar(ctx, "s1", notes); string(got) != "# from B\n" {
		t.Errorf("A has %q", got)
	}
	// The record stays out of the store.
	if names, _ := remote.ListSidecars(ctx, "s1"); !slices.Equal(names, []string{notes}) {
		t.Errorf("the store lists %q", names)
	}
}

// TestSidecarSyncConflict: a file rewritten on both sides is named, and
// neither copy is lost, however often one syncs and fetches.
func TestSidecarSyncConflict(t *testing.T) {
	ctx := context.Background()
	remote := open(t).Project(pgtest.Project(t))
	const notes = "session-memory/summary.md"
	a := newMapSidecars(map[string]string{"s1/" + notes: "base"})
	b := newMapSidecars(nil)
	pgstore.SyncSidecars(ctx, a, remote, "s1")
	pgstore.FetchSidecars(ctx, remote, b, "s1")
	a.WriteSidecar(ctx, "s1", notes, []byte("A's notes"))
	b.WriteSidecar(ctx, "s1", notes, []byte("B's notes, longer"))
	if rep, err := pgstore.SyncSidecars(ctx, b, remote, "s1"); err != nil || rep.Copied != 1 {
		t.Fatalf("B's sync: %+v, %v", rep, err)
	}
	want := []string{notes}
	for range 2 {
		if rep, err := pgstore.SyncSidecars(ctx, a, remote, "s1"); err != nil || !slices.Equal(rep.Kept, want) || rep.Copied != 0 {
			t.Errorf("A's sync: %+v, %v; want %q kept", rep, err, want)
		}
		if rep, err := pgstore.FetchSidecars(ctx, remote, a, "s1"); err != nil || !slices.Equal(rep.Kept, want) || rep.Copied != 0 {
			t.Errorf("A's fetch: %+v, %v; want %q kept", rep, err, want)
		}
	}
	if got, _ := a.ReadSidecar(ctx, "s1", notes); string(got) != "A's notes" {
		t.Errorf("A's copy: %q", got)
	}
	if got, _ := remote.ReadSidecar(ctx, "s1", notes); string(got) != "B's notes, longer" {
		t.Errorf("the store's copy: %q", got)
	}
}

// TestSidecarSyncRace: what another machine writes between a sync's
// listing and its write is never overwritten nor appended to: a rewrite
// of the same length, and a first copy of a file.
func TestSidecarSyncRace(t *testing.T) {
	ctx := context.Background()
	remote := open(t).Project(pgtest.Project(t))
	const name = "subagents/agent.jsonl"
	// The store holds "line 1\n" when A lists it; B rewrites it to the
	// same length before A appends.
	a := newMapSidecars(map[string]string{"s1/" + name: "line 1\nline 2\n", "s1/tool-results/new.txt": "A's"})
	remote.WriteSidecar(ctx, "s1", name, []byte("line 1\n"))
	racer := &racingStore{mapSidecars: a, onList: func() {
		remote.WriteSidecar(ctx, "s1", name, []byte("LINE 1\n"))
		remote.WriteSidecar(ctx, "s1", "tool-results/new.txt", []byte("B's"))
	}}
	rep, err := pgstore.SyncSidecars(ctx, racer, remote, "s1")
	if err != nil || rep.Copied != 0 {
		t.Fatalf("sync = %+v, %v; want nothing copied", rep, err)
	}
	if d := cmp.Diff([]string{name, "tool-results/new.txt"}, rep.Kept); d != "" {
		t.Errorf("kept (-want +got):\n%s", d)
	}
	for n, want := range map[string]string{name: "LINE 1\n", "tool-results/new.txt": "B's"} {
		if got, _ := remote.ReadSidecar(ctx, "s1", n); string(got) != want {
			t.Errorf("the store's %s: %q, want %q", n, got, want)
		}
	}
}

// racingStore runs onList once, right after the sync has listed the
// store: ListSidecars on the local side comes first, so the hook runs at
// the first ReadSidecar.
type racingStore struct {
	*mapSidecars
	onList func()
	once   sync.Once
}

func (r *racingStore) ReadSidecar(ctx context.Context, id, name string) ([]byte, error) {
	if name != pgstore.SyncedRecord {
		r.once.Do(r.onList)
	}
	return r.mapSidecars.ReadSidecar(ctx, id, name)
}
