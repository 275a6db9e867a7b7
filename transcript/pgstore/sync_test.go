package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/cairn-dev/cairn/internal/pgtest"
	"github.com/cairn-dev/cairn/transcript"
	"github.com/cairn-dev/cairn/transcript/pgstore"
	"github.com/cairn-dev/cairn/transcript/transcripttest"
)

// localSession writes entries to a file store and returns it.
func localSession(t *testing.T, id string, es []transcript.Entry) *transcript.FileStore {
	t.Helper()
	fs := transcript.NewFileStore(t.TempDir())
	a, err := fs.OpenAppender(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Append(context.Background(), es, true); err != nil {
		t.Fatal(err)
	}
	a.Close()
	return fs
}

func source(t *testing.T, s transcript.Store, id string) transcript.Source {
	t.Helper()
	src, err := s.OpenSource(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

func sameBytes(t *testing.T, a, b transcript.Store, id string) {
	t.Helper()
	read := func(s transcript.Store) string {
		src := source(t, s, id)
		buf := make([]byte, src.Size())
		src.ReadAt(buf, 0)
		return string(buf)
	}
	if diff := cmp.Diff(read(a), read(b)); diff != "" {
		t.Errorf("store and local differ (-local +store):\n%s", diff)
	}
}

func TestSyncIsIdempotent(t *testing.T) {
	ctx := context.Background()
	remote := open(t).Project(pgtest.Project(t))
	es := transcripttest.Entries("s1", 8)
	local := localSession(t, "s1", es[:5])
	for _, want := range []int{5, 0} {
		n, err := pgstore.Sync(ctx, source(t, local, "s1"), remote, "s1")
		if err != nil || n != want {
			t.Fatalf("Sync = %d, %v; want %d", n, err, want)
		}
	}
	// More lines locally (a run while the store was down): only they go.
	a, _ := local.OpenAppender(ctx, "s1")
	side := transcript.Entry{Type: transcript.TypeLastPrompt, SessionID: "s1", LastPrompt: "p", LeafUUID: es[7].UUID}
	a.Append(ctx, append(es[5:], side, side), true)
	a.Close()
	if n, err := pgstore.Sync(ctx, source(t, local, "s1"), remote, "s1"); err != nil || n != 5 {
		t.Fatalf("Sync after more lines = %d, %v; want 5", n, err)
	}
	sameBytes(t, local, remote, "s1")
}

func TestSyncAfterDivergence(t *testing.T) {
	// The store holds lines in another order than the file (pushed by an
	// older run, then the file got a torn line): every line is compared and
	// nothing is doubled.
	ctx := context.Background()
	remote := open(t).Project(pgtest.Project(t))
	es := transcripttest.Entries("s1", 6)
	a, _ := remote.OpenAppender(ctx, "s1")
	a.Append(ctx, []transcript.Entry{es[0], es[2]}, true)
	a.Close()
	local := localSession(t, "s1", es)
	if n, err := pgstore.Sync(ctx, source(t, local, "s1"), remote, "s1"); err != nil || n != 4 {
		t.Fatalf("Sync = %d, %v; want 4", n, err)
	}
	if got := len(transcripttest.ReadAll(t, remote, "s1")); got != 6 {
		t.Errorf("%d lines in the store, want 6", got)
	}
	if n, _ := pgstore.Sync(ctx, source(t, local, "s1"), remote, "s1"); n != 0 {
		t.Errorf("second Sync pushed %d", n)
	}
}

func TestSyncRefusedWhileAnotherWrites(t *testing.T) {
	ctx := context.Background()
	remote := open(t).Project(pgtest.Project(t))
	a, err := remote.OpenAppender(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	local := localSession(t, "s1", transcripttest.Entries("s1", 2))
	if _, err := pgstore.Sync(ctx, source(t, local, "s1"), remote, "s1"); !errors.Is(err, transcript.ErrLocked) {
		t.Errorf("Sync while locked = %v, want ErrLocked", err)
	}
}

func TestReplicaKeepsOrderAndCatchesUp(t *testing.T) {
	ctx := context.Background()
	remote := open(t).Project(pgtest.Project(t))
	es := transcripttest.Entries("s1", 40)
	local := localSession(t, "s1", es[:10]) // written while the store was down
	before := source(t, local, "s1")
	la, err := local.OpenAppender(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	// A file of the earlier run, and one the session writes as it goes.
	files := newMapSidecars(map[string]string{"s1/tool-results/t1.txt": "earlier"})
	r := pgstore.Replicate(la, func(context.Context) (*pgstore.Store, error) { return remote, nil }, "s1", before, files, func(err error) { t.Errorf("behind: %v", err) })
	for i := 10; i < 40; i += 3 {
		if err := r.Append(ctx, es[i:min(i+3, 40)], i%2 == 0); err != nil {
			t.Fatal(err)
		}
		if i == 22 {
			files.WriteSidecar(ctx, "s1", "subagents/agent-x.jsonl", []byte("{}\n"))
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	sameBytes(t, local, remote, "s1")
	for name, want := range map[string]string{"tool-results/t1.txt": "earlier", "subagents/agent-x.jsonl": "{}\n"} {
		if got, err := remote.ReadSidecar(ctx, "s1", name); err != nil || string(got) != want {
			t.Errorf("the store's %s = %q, %v; want %q", name, got, err, want)
		}
	}
}

func TestReplicaSaysOnceWhenCut(t *testing.T) {
	// The store's connection is cut mid-session: local appends go on, the
	// replica says so once, and a later sync brings the store up to date.
	ctx := context.Background()
	// application_name is cut at 63 bytes by the server: keep it short.
	app := fmt.Sprintf("cairn-cut-%d", time.Now().UnixNano())
	url := pgtest.URL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	db, err := pgstore.Open(ctx, url+sep+"application_name="+app)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	project := pgtest.Project(t)
	remote := db.Project(project)
	es := transcripttest.Entries("s1", 20)
	dir := t.TempDir()
	local := transcript.NewFileStore(dir)
	la, err := local.OpenAppender(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var said []error
	r := pgstore.Replicate(la, func(context.Context) (*pgstore.Store, error) { return remote, nil }, "s1", nil, nil, func(err error) { mu.Lock(); said = append(said, err); mu.Unlock() })
	if err := r.Append(ctx, es[:5], true); err != nil {
		t.Fatal(err)
	}
	// Once the store has those, cut every connection of that pool from
	// the server side.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if info, err := remote.Info(ctx, "s1"); err == nil && info.Messages == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the replica did not push the first lines within 10 s")
		}
	}
	admin := open(t)
	var killed int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1) k`, app).Scan(&killed); err != nil || killed == 0 {
		t.Fatalf("cut %d connections: %v", killed, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the store's connections did not end within 10 s")
		}
	}
	for i := 5; i < 20; i++ {
		if err := r.Append(ctx, es[i:i+1], false); err != nil {
			t.Fatalf("local append failed because the store is gone: %v", err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if got := len(transcripttest.ReadAll(t, local, "s1")); got != 20 {
		t.Fatalf("local has %d lines, want 20", got)
	}
	mu.Lock()
	if len(said) != 1 {
		t.Errorf("said %d times that the store is behind, want once: %v", len(said), said)
	}
	mu.Unlock()
	fresh := open(t).Project(project)
	if _, err := pgstore.Sync(ctx, source(t, local, "s1"), fresh, "s1"); err != nil {
		t.Fatal(err)
	}
	sameBytes(t, local, fresh, "s1")
}

func TestFetch(t *testing.T) {
	ctx := context.Background()
	remote := open(t).Project(pgtest.Project(t))
	local := localSession(t, "s1", transcripttest.Entries("s1", 4))
	if _, err := pgstore.Sync(ctx, source(t, local, "s1"), remote, "s1"); err != nil {
		t.Fatal(err)
	}
	other := transcript.NewFileStore(filepath.Join(t.TempDir(), "proj"))
	if err := pgstore.Fetch(ctx, remote, "s1", other.Path("s1")); err != nil {
		t.Fatal(err)
	}
	sameBytes(t, local, other, "s1")
	if st, _ := os.Stat(other.Path("s1")); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	if err := pgstore.Fetch(ctx, remote, "s1", other.Path("s1")); err == nil {
		t.Error("Fetch overwrote a local copy")
	}
	if err := pgstore.Fetch(ctx, remote, "nope", other.Path("nope")); !errors.Is(err, transcript.ErrNotFound) {
		t.Errorf("Fetch of a missing session = %v", err)
	}
}

// TestSyncCutMidBatch: the connection is cut while a batch is being
// written (held inside its transaction by a lock): the sync fails and
// says so, the store keeps only whole batches, and the next sync sends the
// rest, nothing doubled.
func TestSyncCutMidBatch(t *testing.T) {
	ctx := context.Background()
	app := fmt.Sprintf("cairn-mid-%d", time.Now().UnixNano())
	db, err := pgstore.Open(ctx, withParam(pgtest.URL(t), "application_name="+app))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	project := pgtest.Project(t)
	remote := db.Project(project)
	es := transcripttest.Entries("s1", 30)
	local := localSession(t, "s1", es[:10])
	if _, err := pgstore.Sync(ctx, source(t, local, "s1"), remote, "s1"); err != nil {
		t.Fatal(err)
	}
	a, _ := local.OpenAppender(ctx, "s1")
	a.Append(ctx, es[10:], true)
	a.Close()

	// Another connection holds the session's row: the sync's batch waits
	// inside its transaction.
	admin := open(t)
	hold, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close(ctx)
	tx, err := hold.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM cairn_sessions WHERE project = $1 AND session_id = 's1' FOR UPDATE`, project); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := pgstore.Sync(ctx, source(t, local, "s1"), remote, "s1")
		done <- err
	}()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var killed int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE application_name = $1 AND wait_event_type = 'Lock') k`, app).Scan(&killed); err != nil {
			t.Fatal(err)
		}
		if killed > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sync never waited inside its batch")
		}
	}
	err = <-done
	if err == nil || !strings.Contains(err.Error(), "push session s1") {
		t.Errorf("a sync cut mid-batch: %v", err)
	}
	tx.Rollback(ctx)
	if got := len(transcripttest.ReadAll(t, remote, "s1")); got != 10 {
		t.Errorf("after the cut the store has %d lines, want the 10 of before", got)
	}
	fresh := open(t).Project(project)
	if n, err := pgstore.Sync(ctx, source(t, local, "s1"), fresh, "s1"); err != nil || n != 20 {
		t.Fatalf("the next sync = %d, %v; want 20", n, err)
	}
	sameBytes(t, local, fresh, "s1")
}

func withParam(url, kv string) string {
	if strings.Contains(url, "?") {
		return url + "&" + kv
	}
	return url + "?" + kv
}
