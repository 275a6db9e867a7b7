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
		out[k] = string(v)
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
	if got, _ := remote.ReadSidecar(ctx, "s1", "tool-results/t1.txt"); string(got) != "result one" {
		t.Errorf("the store's copy was overwritten: %q", got)
	}
	if names, _ := remote.ListSidecars(ctx, "s2"); len(names) != 0 {
		t.Errorf("another session's files went too: %q", names)
	}
}
