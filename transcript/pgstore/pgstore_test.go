package pgstore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/pgtest"
	"github.com/cairn-dev/cairn/transcript"
	"github.com/cairn-dev/cairn/transcript/pgstore"
	"github.com/cairn-dev/cairn/transcript/transcripttest"
)

func open(t testing.TB) *pgstore.DB {
	t.Helper()
	db, err := pgstore.Open(context.Background(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

func TestConformance(t *testing.T) {
	db := open(t)
	transcripttest.Run(t, func(t *testing.T) transcripttest.Harness {
		project := pgtest.Project(t)
		s := db.Project(project)
		return transcripttest.Harness{
			Store: s,
			Reopen: func() transcript.Store {
				return open(t).Project(project)
			},
			AppendRaw: func(id string, b []byte) {
				if err := s.AppendRaw(context.Background(), id, b); err != nil {
					t.Fatal(err)
				}
			},
		}
	})
}

// TestSidecarConformance runs the suite every transcript.Sidecars passes.
func TestSidecarConformance(t *testing.T) {
	db := open(t)
	transcripttest.TestSidecars(t, func(t *testing.T) transcript.Store {
		return db.Project(pgtest.Project(t))
	})
}

func TestDuplicatesSkipped(t *testing.T) {
	ctx := context.Background()
	s := open(t).Project(pgtest.Project(t))
	es := transcripttest.Entries("s1", 4)
	a, err := s.OpenAppender(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Append(ctx, es[:3], true); err != nil {
		t.Fatal(err)
	}
	if err := a.Append(ctx, es, true); err != nil { // a replay after an outage
		t.Fatal(err)
	}
	got := transcripttest.ReadAll(t, s, "s1")
	if len(got) != 4 {
		t.Fatalf("%d lines after a replay, want 4", len(got))
	}
	info, err := s.Info(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if info.Messages != 4 || info.FirstPrompt != "prompt 0" || info.LastPrompt != "prompt 2" {
		t.Errorf("info = %+v, want 4 messages, prompts 0 … 2", info)
	}
	src, _ := s.OpenSource(ctx, "s1")
	if info.Bytes != src.Size() {
		t.Errorf("listed size %d, source size %d", info.Bytes, src.Size())
	}
}

func TestSearch(t *testing.T) {
	ctx := context.Background()
	s := open(t).Project(pgtest.Project(t))
	es := transcripttest.Entries("s1", 2)
	es[0].Message = []byte(`{"role":"user","content":"why does the zebrafish parser fail"}`)
	a, err := s.OpenAppender(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Append(ctx, es, true); err != nil {
		t.Fatal(err)
	}
	a.Close()
	hits, err := s.Search(ctx, "zebrafish parser", 10, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].UUID != es[0].UUID || !strings.Contains(hits[0].Snippet, "«zebrafish»") {
		t.Errorf("hits = %+v, want the prompt", hits)
	}
	if hits, _ := s.Search(ctx, "zebrafish", 10, false); len(hits) != 1 {
		t.Errorf("one word: %d hits", len(hits))
	}
	if hits, _ := s.Search(ctx, "unicorn", 10, false); len(hits) != 0 {
		t.Errorf("absent word: %d hits", len(hits))
	}
}

// TestSearchSyntax: phrases, negation, or, punctuation, Unicode and
// quotes, through the server.
func TestSearchSyntax(t *testing.T) {
	ctx := context.Background()
	s := open(t).Project(pgtest.Project(t))
	es := transcripttest.Entries("s1", 4)
	es[0].Message = []byte(`{"role":"user","content":"why does pkg.Func(x) fail on Straße"}`)
	es[1].Message = []byte(`{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"grep -r 'it\\'s' ."}}]}`)
	es[2].Message = []byte(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"migration failed: retry later"}]}`)
	es[3].Message = []byte(`{"role":"assistant","content":[{"type":"text","text":"the failed migration is fixed"}]}`)
	a, err := s.OpenAppender(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Append(ctx, es, true); err != nil {
		t.Fatal(err)
	}
	a.Close()
	for _, tt := range []struct {
		q    string
		want []int
	}{
		{"pkg.Func", []int{0}},
		{"STRASSE", nil},
		{"straße", []int{0}},
		{`"migration failed"`, []int{2}},
		{"migration failed", []int{3, 2}},
		{"migration -retry", []int{3}},
		{"retry or fixed", []int{3, 2}},
		{"it's", []int{1}},
		{"!!!", nil},
	} {
		hits, err := s.Search(ctx, tt.q, 10, false)
		if err != nil {
			t.Errorf("%q: %v", tt.q, err)
			continue
		}
		var got []int
		for _, h := range hits {
			for i := range es {
				if es[i].UUID == h.UUID {
					got = append(got, i)
				}
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("search %q found lines %v, want %v", tt.q, got, tt.want)
		}
	}
}

func TestUnreachable(t *testing.T) {
	ctx := context.Background()
	_, err := pgstore.Open(ctx, "postgres://nobody:secret@127.0.0.1:1/none?connect_timeout=2")
	if err == nil {
		t.Fatal("Open of a closed port succeeded")
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("the error shows the password: %v", err)
	}
	if !pgstore.IsUnavailable(err) {
		t.Errorf("IsUnavailable(%v) = false", err)
	}
	if pgstore.IsUnavailable(transcript.ErrLocked) || pgstore.IsUnavailable(errors.New("x")) == false {
		t.Error("IsUnavailable misjudges")
	}
}

// TestPromptRules: the store lists the prompt a person typed by the rule
// local listings use (session.TypedPrompt): markup and interruption
// notices are skipped, "<3" is not markup, a long prompt is cut.
func TestPromptRules(t *testing.T) {
	ctx := context.Background()
	s := open(t).Project(pgtest.Project(t))
	es := transcripttest.Entries("s1", 5)
	long := strings.Repeat("é", 199) + " xy"
	es[0].Message = []byte(`{"role":"user","content":"<command-name>/clear</command-name>"}`)
	es[2].Message = []byte(`{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"},{"type":"text","text":"<3 this parser"}]}`)
	es[4].Message = []byte(`{"role":"user","content":"` + long + `"}`)
	a, err := s.OpenAppender(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Append(ctx, es, true); err != nil {
		t.Fatal(err)
	}
	a.Close()
	info, err := s.Info(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	want := [2]string{"<3 this parser", strings.Repeat("é", 199) + "…"}
	if got := [2]string{info.FirstPrompt, info.LastPrompt}; got != want {
		t.Errorf("first, last prompt = %q, want %q", got, want)
	}
}

// TestFollow: a follower gets each line appended after it started, in
// order, and no other session's.
func TestFollow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := open(t).Project(pgtest.Project(t))
	es := transcripttest.Entries("s1", 6)
	a, err := s.OpenAppender(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.Append(ctx, es[:2], true)
	if err := s.Follow(ctx, "nope", func() { t.Error("started on a missing session") }, nil); !errors.Is(err, transcript.ErrNotFound) {
		t.Errorf("Follow of a missing session: %v", err)
	}
	started := make(chan struct{})
	got := make(chan string, 10)
	fctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- s.Follow(fctx, "s1", func() { close(started) }, func(l []byte) error {
			e, err := transcript.DecodeEntry(l)
			if err != nil {
				return err
			}
			got <- e.UUID
			return nil
		})
	}()
	<-started
	other, _ := s.OpenAppender(ctx, "s2")
	defer other.Close()
	other.Append(ctx, transcripttest.Entries("s2", 1), true)
	a.Append(ctx, es[2:3], true)
	a.Append(ctx, es[3:], true)
	var uuids []string
	for len(uuids) < 4 {
		select {
		case u := <-got:
			uuids = append(uuids, u)
		case <-ctx.Done():
			t.Fatalf("followed %v, then nothing", uuids)
		}
	}
	if d := cmp.Diff(wantUUIDs(es[2:]), uuids); d != "" {
		t.Errorf("followed lines (-want +got):\n%s", d)
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("Follow after its context ended: %v", err)
	}
}

func wantUUIDs(es []transcript.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.UUID)
	}
	return out
}

func TestWrongCredentials(t *testing.T) {
	url := pgtest.URL(t)
	// A user the server does not know (a test server trusts every
	// password, so the user is what can be wrong).
	i := strings.Index(url, "://") + 3
	at := strings.LastIndex(url, "@")
	if at < i {
		t.Skipf("%s names no user", url)
	}
	bad := url[:i] + "cairn_nobody:secret" + url[at:]
	_, err := pgstore.Open(context.Background(), bad)
	if err == nil {
		t.Fatal("Open with an unknown user succeeded")
	}
	for _, want := range []string{"refused these credentials", "cairn_nobody", "CAIRN_STORE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("the error shows the password: %v", err)
	}
}

// TestSchemaTooNew: a store migrated by a newer cairn is refused with a
// message saying to upgrade, and left as it is.
func TestSchemaTooNew(t *testing.T) {
	ctx := context.Background()
	admin := open(t)
	schema := strings.ToLower(strings.NewReplacer("-", "_").Replace(pgtest.Project(t)))
	if len(schema) > 60 {
		schema = schema[len(schema)-60:]
	}
	schema = "s" + schema
	if err := admin.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`) })
	url := withParam(pgtest.URL(t), "search_path="+schema)
	db, err := pgstore.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := admin.Exec(ctx, `INSERT INTO `+schema+`.cairn_schema (version) VALUES (999)`); err != nil {
		t.Fatal(err)
	}
	_, err = pgstore.Open(ctx, url)
	if !errors.Is(err, pgstore.ErrSchemaTooNew) || !strings.Contains(err.Error(), "upgrade cairn") {
		t.Errorf("Open of a newer schema: %v", err)
	}
	var n int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM `+schema+`.cairn_schema`).Scan(&n); err != nil || n < 2 {
		t.Errorf("the schema table changed: %d rows, %v", n, err)
	}
}
