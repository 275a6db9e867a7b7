package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/bench/gen"
	"github.com/cairn-dev/cairn/internal/serve"
	"github.com/cairn-dev/cairn/transcript"
)

// fileSessions serves the transcripts of a folder, <id>.jsonl each.
type fileSessions struct{ dir string }

func (f fileSessions) List(context.Context, serve.ListQuery) ([]serve.Info, string, error) {
	ents, err := os.ReadDir(f.dir)
	var out []serve.Info
	for _, de := range ents {
		if id, ok := strings.CutSuffix(de.Name(), ".jsonl"); ok {
			fi, err := de.Info()
			if err != nil {
				return nil, "", err
			}
			out = append(out, serve.Info{SessionID: id, Bytes: fi.Size(), Modified: fi.ModTime()})
		}
	}
	return out, "", err
}

func (f fileSessions) Source(_ context.Context, id string) (transcript.Source, error) {
	return transcript.OpenFile(filepath.Join(f.dir, id+".jsonl"))
}

// generated returns a generated transcript of about size bytes.
func generated(t testing.TB, size int64, seed uint64) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := gen.Generate(&b, gen.Options{Size: size, Seed: seed}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// chainIDs returns the ids of the conversation events of a transcript.
func chainIDs(t testing.TB, data []byte) []string {
	var ids []string
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		if e, err := transcript.DecodeEntry(line); err == nil && e.IsChain() {
			ids = append(ids, e.UUID)
		}
	}
	return ids
}

// TestIndexPagesAsHistory: with the index of a session built, every link
// into its history gives the page History gives (an id it does not hold,
// 400) — after lines are appended, after the file is replaced by another,
// and after it is rewritten in place shorter or longer: an index of what
// the file was is never used for what it is.
func TestIndexPagesAsHistory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	idx := &serve.Index{MinBytes: 1}
	srv := httptest.NewServer(serve.Handler(serve.Options{Sessions: fileSessions{dir}, Token: token, Index: idx}))
	t.Cleanup(srv.Close)
	ctx := context.Background()

	var ever []string // the ids of every file the session was
	check := func(step string, data []byte) {
		t.Helper()
		ever = append(ever, chainIDs(t, data)...)
		// The newest page has the index built or brought up to date.
		if code, body := get(t, srv, "/api/sessions/s/events", token); code != http.StatusOK {
			t.Fatalf("%s: newest page: %d %s", step, code, body)
		}
		idx.Wait()
		src := mustOpen(t, path)
		sample := []string{"no-such-event"}
		for i := 0; i < len(ever); i += 23 {
			sample = append(sample, ever[i])
		}
		sample = append(sample, ever[len(ever)-1])
		for _, before := range sample {
			want, err := serve.History(ctx, src, before, 50)
			code, body := get(t, srv, "/api/sessions/s/events?limit=50&before="+before, token)
			if errors.Is(err, serve.ErrUnknownBefore) {
				if code != http.StatusBadRequest {
					t.Errorf("%s: before %s, not in the file: %d %s, want 400", step, before, code, body)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			var got serve.Page
			if code != http.StatusOK || json.Unmarshal(body, &got) != nil {
				t.Errorf("%s: before %s: %d %s", step, before, code, body)
				continue
			}
			if diff := cmp.Diff(uuidsOfPage(t, want), uuidsOfPage(t, got)); diff != "" || want.HasMore != got.HasMore {
				t.Errorf("%s: before %s (-History +served), hasMore %v/%v:\n%s", step, before, want.HasMore, got.HasMore, diff)
			}
		}
		if got := idx.Indexed("s"); got != int64(len(data)) {
			t.Fatalf("%s: the index has read %d bytes of %d", step, got, len(data))
		}
	}

	data := generated(t, 600<<10, 1)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	check("indexed", data)

	// Lines appended: the index reads only them.
	more := generated(t, 60<<10, 3)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(more)
	f.Close()
	data = append(data, more...)
	check("appended", data)

	// Another file renamed into its place (another inode).
	data = generated(t, 600<<10, 2)
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	check("replaced", data)

	// Rewritten in place (the same inode), shorter, then longer.
	for _, c := range []struct {
		size int64
		seed uint64
	}{{300 << 10, 4}, {800 << 10, 5}} {
		data = generated(t, c.size, c.seed)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("rewritten in place, %d bytes", len(data)), data)
	}
}

func uuidsOfPage(t *testing.T, p serve.Page) []string {
	out := []string{}
	for _, raw := range p.Events {
		e, err := transcript.DecodeEntry(raw)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e.UUID)
	}
	return out
}

// TestIndexBound: the indexes of many sessions stay within MaxBytes, the
// least recently used dropped first.
func TestIndexBound(t *testing.T) {
	dir := t.TempDir()
	data := generated(t, 300<<10, 1)
	for _, id := range []string{"a", "b", "c"} {
		if err := os.WriteFile(filepath.Join(dir, id+".jsonl"), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	idx := &serve.Index{MinBytes: 1}
	build := func(id string) {
		t.Helper()
		src := mustOpen(t, filepath.Join(dir, id+".jsonl"))
		if err := idx.Build(ctx, src, id); err != nil {
			t.Fatal(err)
		}
	}
	build("a")
	one := idx.Bytes()
	if one == 0 {
		t.Fatal("an index costs nothing?")
	}
	idx.MaxBytes = one*2 + one/2
	build("b")
	build("a") // used again: b is now the least recent
	build("c")
	got := map[string]bool{}
	for _, id := range []string{"a", "b", "c"} {
		got[id] = idx.Indexed(id) > 0
	}
	if diff := cmp.Diff(map[string]bool{"a": true, "b": false, "c": true}, got); diff != "" {
		t.Errorf("indexed (-want +got):\n%s", diff)
	}
	if idx.Bytes() > idx.MaxBytes {
		t.Errorf("the indexes hold %d bytes, more than the bound %d", idx.Bytes(), idx.MaxBytes)
	}
	idx.MaxBytes = one / 2 // too small for any: none is kept
	build("b")
	if idx.Indexed("b") != 0 || idx.Bytes() > idx.MaxBytes {
		t.Errorf("an index bigger than the bound was kept: %d bytes of %d", idx.Bytes(), idx.MaxBytes)
	}
}

// countingSessions counts the sources opened.
type countingSessions struct {
	fileSessions
	opened *atomic.Int64
}

func (c countingSessions) Source(ctx context.Context, id string) (transcript.Source, error) {
	c.opened.Add(1)
	return c.fileSessions.Source(ctx, id)
}

// keptSession writes a session s of 600 KB in a folder dir and keeps its
// index in another, keep, as an earlier run of the server would.
func keptSession(t *testing.T) (dir, path, keep string, data []byte) {
	t.Helper()
	dir, keep = t.TempDir(), t.TempDir()
	path = filepath.Join(dir, "s.jsonl")
	data = generated(t, 600<<10, 1)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := (&serve.Index{MinBytes: 1, Dir: keep}).Build(context.Background(), mustOpen(t, path), "s"); err != nil {
		t.Fatal(err)
	}
	return dir, path, keep, data
}

// TestIndexKeptOnDisk: a server started afresh reads the index an
// earlier one kept in Dir instead of building it — extended over lines
// appended since — and never one kept for another file (replaced by a
// rename) or one that is not whole.
func TestIndexKeptOnDisk(t *testing.T) {
	dir, path, keep, data := keptSession(t)
	ctx := context.Background()
	// fresh serves a link to a fresh server, checks the page against
	// History and returns how many sources the server opened (1: the
	// request's own; 2: it built the index in the background).
	fresh := func(step, before string) int64 {
		t.Helper()
		var opened atomic.Int64
		idx := &serve.Index{MinBytes: 1, Dir: keep}
		srv := httptest.NewServer(serve.Handler(serve.Options{Sessions: countingSessions{fileSessions{dir}, &opened}, Token: token, Index: idx}))
		defer srv.Close()
		want, err := serve.History(ctx, mustOpen(t, path), before, 50)
		code, body := get(t, srv, "/api/sessions/s/events?limit=50&before="+before, token)
		idx.Wait()
		if errors.Is(err, serve.ErrUnknownBefore) {
			if code != http.StatusBadRequest {
				t.Errorf("%s: before %s, not in the file: %d %s, want 400", step, before, code, body)
			}
			return opened.Load()
		}
		var got serve.Page
		if code != http.StatusOK || json.Unmarshal(body, &got) != nil {
			t.Fatalf("%s: %d %s", step, code, body)
		}
		if diff := cmp.Diff(uuidsOfPage(t, want), uuidsOfPage(t, got)); diff != "" {
			t.Errorf("%s (-History +served):\n%s", step, diff)
		}
		if n := idx.Indexed("s"); n != int64(len(data)) {
			t.Errorf("%s: the index has read %d bytes of %d", step, n, len(data))
		}
		return opened.Load()
	}
	ids := chainIDs(t, data)
	if n := fresh("kept", ids[len(ids)/3]); n != 1 {
		t.Errorf("kept: %d sources opened: the kept index was not used", n)
	}

	more := generated(t, 60<<10, 3)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(more)
	f.Close()
	data = append(data, more...)
	added := chainIDs(t, more)
	if n := fresh("appended since", added[len(added)/2]); n != 1 {
		t.Errorf("appended since: %d sources opened: the kept index was not used", n)
	}

	// Another file renamed into place: what was kept is for the old one.
	data = generated(t, 600<<10, 2)
	if err := os.WriteFile(path+".new", data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	ids = chainIDs(t, data)
	fresh("replaced, a new id", ids[len(ids)/3])
	fresh("replaced, an old id", added[0])
	if n := fresh("replaced, rebuilt", ids[len(ids)/4]); n != 1 {
		t.Errorf("replaced: %d sources opened: the rebuilt index was not kept", n)
	}

	// A kept index that is not whole is ignored, and built again.
	b, err := os.ReadFile(filepath.Join(keep, "s.idx"))
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	os.WriteFile(filepath.Join(keep, "s.idx"), b, 0o600)
	if n := fresh("damaged", ids[len(ids)/2]); n != 2 {
		t.Errorf("damaged: %d sources opened, want 2 (built again)", n)
	}
}

// TestWarmAll: at start, the indexes of the big sessions listed are built
// and kept in Dir (not held in memory), the small ones' not at all; a
// fresh server then reads the kept index for its first link.
func TestWarmAll(t *testing.T) {
	dir, keep := t.TempDir(), t.TempDir()
	big := generated(t, 600<<10, 1)
	os.WriteFile(filepath.Join(dir, "big.jsonl"), big, 0o600)
	small := generated(t, 50<<10, 2)
	os.WriteFile(filepath.Join(dir, "small.jsonl"), small, 0o600)
	min := int64(len(big) / 2)
	if int64(len(small)) >= min {
		t.Fatalf("the small session has %d bytes, the big %d", len(small), len(big))
	}
	ctx := context.Background()
	idx := &serve.Index{MinBytes: min, Dir: keep}
	if err := idx.WarmAll(ctx, fileSessions{dir}); err != nil {
		t.Fatal(err)
	}
	idx.Wait()
	var kept []string
	ents, _ := os.ReadDir(keep)
	for _, de := range ents {
		kept = append(kept, de.Name())
	}
	if diff := cmp.Diff([]string{"big.idx"}, kept); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	if idx.Indexed("big") != 0 || idx.Bytes() != 0 {
		t.Errorf("warming at start filled memory: %d bytes", idx.Bytes())
	}
	var opened atomic.Int64
	fresh := &serve.Index{MinBytes: min, Dir: keep}
	srv := httptest.NewServer(serve.Handler(serve.Options{Sessions: countingSessions{fileSessions{dir}, &opened}, Token: token, Index: fresh}))
	defer srv.Close()
	ids := chainIDs(t, big)
	if code, body := get(t, srv, "/api/sessions/big/events?before="+ids[len(ids)/3], token); code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	fresh.Wait()
	if n := opened.Load(); n != 1 || fresh.Indexed("big") != int64(len(big)) {
		t.Errorf("%d sources opened, %d bytes indexed: the kept index was not used", n, fresh.Indexed("big"))
	}
}

// gatedSessions opens the first source at once and holds each later one
// (the background build's) until gate is closed.
type gatedSessions struct {
	fileSessions
	opened *atomic.Int64
	gate   chan struct{}
}

func (g gatedSessions) Source(ctx context.Context, id string) (transcript.Source, error) {
	if g.opened.Add(1) > 1 {
		<-g.gate
	}
	return g.fileSessions.Source(ctx, id)
}

// TestNewestPageDoesNotIndex: the newest page of a session whose kept
// index is megabytes behind is answered without reading what was
// appended since; the background build reads it, after.
func TestNewestPageDoesNotIndex(t *testing.T) {
	dir, path, keep, data := keptSession(t)
	more := generated(t, 8<<20, 3)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(more); err != nil {
		t.Fatal(err)
	}
	f.Close()
	size := int64(len(data) + len(more))

	var opened atomic.Int64
	gate := make(chan struct{})
	idx := &serve.Index{MinBytes: 1, Dir: keep}
	srv := httptest.NewServer(serve.Handler(serve.Options{Sessions: gatedSessions{fileSessions{dir}, &opened, gate}, Token: token, Index: idx}))
	defer srv.Close()
	if code, body := get(t, srv, "/api/sessions/s/events?limit=50", token); code != http.StatusOK {
		close(gate)
		t.Fatalf("%d %s", code, body)
	}
	before := idx.Indexed("s")
	close(gate)
	idx.Wait()
	if before != 0 {
		t.Errorf("the newest page indexed %d bytes before it was sent", before)
	}
	if n := idx.Indexed("s"); n != size {
		t.Errorf("after the background build, %d bytes indexed of %d", n, size)
	}
}

// TestIndexLacksRewrittenEvent: a file rewritten in place that keeps its
// inode, size and last line but names an event the index never read
// (one event's id changed) still serves a link to that event, by a scan,
// and has its index built again: an id the index lacks is no 400 unless
// the file lacks it too.
func TestIndexLacksRewrittenEvent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	data := generated(t, 600<<10, 1)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	idx := &serve.Index{MinBytes: 1}
	srv := httptest.NewServer(serve.Handler(serve.Options{Sessions: fileSessions{dir}, Token: token, Index: idx}))
	defer srv.Close()
	if code, body := get(t, srv, "/api/sessions/s/events", token); code != http.StatusOK {
		t.Fatalf("newest page: %d %s", code, body)
	}
	idx.Wait()
	if idx.Indexed("s") != int64(len(data)) {
		t.Fatalf("the index has read %d bytes of %d", idx.Indexed("s"), len(data))
	}

	ids := chainIDs(t, data)
	old := ids[len(ids)/3]
	renamed := "ffffffff" + old[8:] // as long: every offset stays
	data = bytes.ReplaceAll(data, []byte(`"`+old+`"`), []byte(`"`+renamed+`"`))
	if err := os.WriteFile(path, data, 0o600); err != nil { // in place: the same inode
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, step := range []string{"index stale", "index rebuilt"} {
		for _, before := range []string{renamed, ids[len(ids)/2]} {
			want, err := serve.History(ctx, mustOpen(t, path), before, 50)
			if err != nil {
				t.Fatal(err)
			}
			code, body := get(t, srv, "/api/sessions/s/events?limit=50&before="+before, token)
			var got serve.Page
			if code != http.StatusOK || json.Unmarshal(body, &got) != nil {
				t.Fatalf("%s: before %s: %d %s", step, before, code, body)
			}
			if diff := cmp.Diff(uuidsOfPage(t, want), uuidsOfPage(t, got)); diff != "" {
				t.Errorf("%s: before %s (-History +served):\n%s", step, before, diff)
			}
		}
		idx.Wait()
	}
	if code, body := get(t, srv, "/api/sessions/s/events?before="+old, token); code != http.StatusBadRequest {
		t.Errorf("before the id no longer in the file: %d %s, want 400", code, body)
	}
}

// TestWarmAllRemovesStale: WarmAll removes the temporary files a run
// stopped while saving left in Dir (not one being written now), and a
// stopped Context keeps the background from building.
func TestWarmAllRemovesStale(t *testing.T) {
	dir, keep := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "s.jsonl"), generated(t, 200<<10, 1), 0o600)
	stale, recent := filepath.Join(keep, ".s.123.tmp"), filepath.Join(keep, ".s.456.tmp")
	for _, name := range []string{stale, recent} {
		if err := os.WriteFile(name, []byte("half an index"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	hour := time.Now().Add(-time.Hour)
	if err := os.Chtimes(stale, hour, hour); err != nil {
		t.Fatal(err)
	}
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	idx := &serve.Index{MinBytes: 1, Dir: keep, Context: stopped}
	if err := idx.WarmAll(context.Background(), fileSessions{dir}); err != nil {
		t.Fatal(err)
	}
	idx.Wait()
	var kept []string
	ents, _ := os.ReadDir(keep)
	for _, de := range ents {
		kept = append(kept, de.Name())
	}
	if diff := cmp.Diff([]string{".s.456.tmp"}, kept); diff != "" {
		t.Errorf("in Dir after WarmAll, stopped (-want +got):\n%s", diff)
	}
}
