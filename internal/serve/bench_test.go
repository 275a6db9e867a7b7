package serve_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/bench/gen"
	"github.com/cairn-dev/cairn/internal/serve"
	"github.com/cairn-dev/cairn/transcript"
)

// BenchmarkHistory100MB pages through a 100 MB session with no
// compaction: the newest page, paging back, and the page before an event
// about a third of the way back — by a search back from the end (History;
// -line-scan: by the line scan it replaced),
// and through the server: the first request to a fresh server (with no
// index yet: the search, the index built after; with the index an earlier
// run kept), and with the index built. index-build is what building the
// index costs (one read of the session).
func BenchmarkHistory100MB(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	st, err := gen.Generate(f, gen.Options{Size: 100 << 20, Seed: 1})
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	src, err := transcript.OpenFile(path)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	ctx := context.Background()
	b.Run("newest", func(b *testing.B) {
		for b.Loop() {
			if p, err := serve.History(ctx, src, "", 100); err != nil || len(p.Events) != 100 {
				b.Fatal(len(p.Events), err)
			}
		}
	})
	// As the viewer pages back: each page from the one before it, the
	// first 30 pages (3,000 events) from the newest, per page.
	b.Run("paging-back", func(b *testing.B) {
		var c serve.Cursors
		pages := 0
		for b.Loop() {
			before := ""
			for range 30 {
				p, err := c.History(ctx, src, "s", before, 100)
				if err != nil || len(p.Events) != 100 {
					b.Fatal(len(p.Events), err)
				}
				before = p.FirstID
				pages++
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(pages), "ms/page")
	})
	before := st.Resume[len(st.Resume)*2/3]
	b.Run("before-a-third-back", func(b *testing.B) {
		for b.Loop() {
			if p, err := serve.History(ctx, src, before, 100); err != nil || len(p.Events) != 100 {
				b.Fatal(len(p.Events), err)
			}
		}
	})
	// As it was: the line scan back to before, decoding the lines the
	// text "uuid":"<before>" is in, not the raw search for it.
	b.Run("before-a-third-back-line-scan", func(b *testing.B) {
		for b.Loop() {
			if p, err := serve.HistoryByLines(ctx, src, before, 100); err != nil || len(p.Events) != 100 {
				b.Fatal(len(p.Events), err)
			}
		}
	})
	b.Run("index-build", func(b *testing.B) {
		var idx *serve.Index
		var m0, m1 runtime.MemStats
		for b.Loop() {
			idx = &serve.Index{}
			runtime.GC()
			runtime.ReadMemStats(&m0)
			if err := idx.Build(ctx, src, "s"); err != nil || idx.Indexed("s") != src.Size() {
				b.Fatal(idx.Indexed("s"), err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/1e6, "heap-MB")
		b.ReportMetric(float64(idx.Bytes())/1e6, "charged-MB")
		runtime.KeepAlive(idx)
	})
	link := func(b *testing.B, h http.Handler, before string) {
		b.Helper()
		w := httptest.NewRecorder()
		q := ""
		if before != "" {
			q = "?before=" + before
		}
		r := httptest.NewRequest("GET", "/api/sessions/s/events"+q, nil)
		r.Header.Set("Authorization", "Bearer t")
		h.ServeHTTP(w, r)
		b.StopTimer()
		defer b.StartTimer()
		var p serve.Page
		if err := json.Unmarshal(w.Body.Bytes(), &p); w.Code != http.StatusOK || err != nil || len(p.Events) != 100 {
			b.Fatal(w.Code, err, len(p.Events))
		}
	}
	// The pages below are served: as the server sends them (encoded),
	// through its handler, without a network.
	warm := &serve.Index{}
	if err := warm.Build(ctx, src, "s"); err != nil {
		b.Fatal(err)
	}
	b.Run("newest-served", func(b *testing.B) {
		h := serve.Handler(serve.Options{Sessions: fileSessions{dir}, Token: "t", Index: warm})
		for b.Loop() {
			link(b, h, "")
		}
	})
	// The first request to a fresh server: with no index anywhere (the
	// scan back; the index is built once the page is sent), and with the
	// index an earlier run kept in Dir (read, checked, used).
	kept := b.TempDir()
	if err := (&serve.Index{Dir: kept}).Build(ctx, src, "s"); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name, dir string
		lineScan  bool
	}{{"cold-link-fresh-server-no-index", "", false}, {"cold-link-fresh-server-no-index-line-scan", "", true}, {"cold-link-fresh-server-index-kept", kept, false}} {
		b.Run(c.name, func(b *testing.B) {
			if c.lineScan {
				serve.LineScanOnly(b) // as it was, for the comparison
			}
			for b.Loop() {
				b.StopTimer()
				idx := &serve.Index{Dir: c.dir}
				h := serve.Handler(serve.Options{Sessions: fileSessions{dir}, Token: "t", Index: idx})
				b.StartTimer()
				link(b, h, before)
				b.StopTimer()
				idx.Wait() // the index it started, built before the next server
				b.StartTimer()
			}
		})
	}
	b.Run("cold-link-index-warm", func(b *testing.B) {
		h := serve.Handler(serve.Options{Sessions: fileSessions{dir}, Token: "t", Index: warm})
		third := len(st.Resume) * 2 / 3
		i := 0
		for b.Loop() {
			// Each a link not served before, around a third back.
			link(b, h, st.Resume[third-i%1000])
			i++
		}
	})
}

// TestCursorsPageAsHistory: paging back with Cursors gives the very pages
// History gives, to the first event; a transcript replaced under the same
// name (a repair) is read afresh, not from a remembered offset.
func TestCursorsPageAsHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	write := func(seed uint64) {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := gen.Generate(f, gen.Options{Size: 600 << 10, Seed: seed}); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	write(1)
	ctx := context.Background()
	var c serve.Cursors
	page := func(src transcript.Source, before string, cursors bool) serve.Page {
		t.Helper()
		var p serve.Page
		var err error
		if cursors {
			p, err = c.History(ctx, src, "s", before, 50)
		} else {
			p, err = serve.History(ctx, src, before, 50)
		}
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	src, err := transcript.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pages, before := 0, ""
	for {
		want, got := page(src, before, false), page(src, before, true)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("page %d before %q (-History +Cursors):\n%s", pages, before, diff)
		}
		pages++
		if !got.HasMore {
			break
		}
		before = got.FirstID
	}
	src.Close()
	if pages < 3 {
		t.Fatalf("only %d pages: the test needs a longer session", pages)
	}
	// Another file in its place: remembered offsets name other lines.
	first := page(mustOpen(t, path), "", true)
	write(2)
	src2 := mustOpen(t, path)
	want, err := serve.History(ctx, src2, first.FirstID, 50)
	got, err2 := c.History(ctx, src2, "s", first.FirstID, 50)
	if (err == nil) != (err2 == nil) || (err != nil && !errors.Is(err2, serve.ErrUnknownBefore)) {
		t.Fatalf("after a replacement: History %v, Cursors %v", err, err2)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after a replacement (-History +Cursors):\n%s", diff)
	}
}

func mustOpen(t *testing.T, path string) transcript.Source {
	t.Helper()
	src, err := transcript.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}
