package transcript_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/bench/gen"
	"github.com/cairn-dev/cairn/transcript"
)

// TestLoadGenerated loads generated sessions and checks the result against
// what the generator says a resume must rebuild.
func TestLoadGenerated(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts gen.Options
	}{
		{"compacting", gen.Options{Size: 600 << 10, Seed: 21, CompactEvery: 120 << 10}},
		{"compacting, other seed", gen.Options{Size: 600 << 10, Seed: 22, CompactEvery: 90 << 10}},
		{"no compaction", gen.Options{Size: 300 << 10, Seed: 23}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.jsonl")
			st := generateFile(t, path, tc.opts)
			src, err := transcript.OpenFile(path)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			conv, err := transcript.Load(context.Background(), src, transcript.LoadOptions{})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if len(conv.Warnings) > 0 {
				t.Errorf("Load warned: %q", conv.Warnings)
			}
			if conv.Leaf != st.Leaf || conv.SessionID != st.SessionID || conv.Repaired != 0 {
				t.Errorf("Leaf, SessionID, Repaired = %s, %s, %d; want %s, %s, 0", conv.Leaf, conv.SessionID, conv.Repaired, st.Leaf, st.SessionID)
			}
			var got []string
			for _, e := range conv.Entries {
				got = append(got, e.UUID)
			}
			if diff := cmp.Diff(st.Resume, got); diff != "" {
				t.Errorf("Load rebuilt other entries than the generator expects (-want +got):\n%s", diff)
			}
			if err := checkAPIValid(conv.Messages()); err != nil {
				t.Errorf("Messages: %v", err)
			}
			if !tc.opts.Compact && tc.opts.CompactEvery == 0 && conv.BytesRead != st.Bytes {
				t.Errorf("BytesRead = %d, want the whole file (%d) without compactions", conv.BytesRead, st.Bytes)
			}
			if need := st.Bytes - firstOffset(t, path, st.Resume); conv.BytesRead > need+readSlack {
				t.Errorf("BytesRead = %d, but the entries to resume are in the last %d bytes: the loader read history it does not need", conv.BytesRead, need)
			}
		})
	}
}

// readSlack is how much more than the lines it needs the loader may read:
// it reads backwards in blocks.
const readSlack = 512 << 10

// firstOffset returns the offset of the first line of path holding one of
// the uuids.
func firstOffset(t *testing.T, path string, uuids []string) int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := make(map[string]bool, len(uuids))
	for _, id := range uuids {
		want[id] = true
	}
	var off int64
	for line := range bytes.Lines(data) {
		if e, err := transcript.DecodeEntry(line); err == nil && want[e.UUID] {
			return off
		}
		off += int64(len(line))
	}
	t.Fatalf("%s holds none of the %d uuids to resume", path, len(uuids))
	return 0
}

func generateFile(tb testing.TB, path string, opts gen.Options) gen.Stats {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	st, err := gen.Generate(f, opts)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		tb.Fatalf("generate %s: %v", path, err)
	}
	return st
}

func BenchmarkLoad1MB(b *testing.B)   { benchmarkLoad(b, 1<<20) }
func BenchmarkLoad10MB(b *testing.B)  { benchmarkLoad(b, 10<<20) }
func BenchmarkLoad100MB(b *testing.B) { benchmarkLoad(b, 100<<20) }

// benchmarkLoad measures resuming a generated session of about size bytes:
// Load and Messages, with compactions every 1.5 MB as Claude Code leaves
// them, and with none (the whole file is the conversation). MB/s is over
// the file's size; read-MB/op is how much of it the loader read.
func benchmarkLoad(b *testing.B, size int64) {
	for _, flat := range []bool{false, true} {
		name := "compacted"
		if flat {
			name = "flat"
		}
		b.Run(name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "s.jsonl")
			st := generateFile(b, path, gen.Options{Size: size, Seed: 1, Compact: !flat})
			b.SetBytes(st.Bytes)
			b.ReportAllocs()
			var read int64
			for b.Loop() {
				src, err := transcript.OpenFile(path)
				if err != nil {
					b.Fatal(err)
				}
				conv, err := transcript.Load(context.Background(), src, transcript.LoadOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if msgs := conv.Messages(); len(msgs) == 0 {
					b.Fatal("no messages")
				}
				src.Close()
				read = conv.BytesRead
			}
			b.ReportMetric(float64(read)/(1<<20), "read-MB/op")
		})
	}
}

// BenchmarkAppendDurable measures a user entry appended through a Writer on
// a FileStore, returning once it is on disk; p50 and p99 are reported
// beside the mean.
func BenchmarkAppendDurable(b *testing.B) {
	ctx := context.Background()
	store := transcript.NewFileStore(b.TempDir())
	app, err := store.OpenAppender(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	w := transcript.NewWriter(app, transcript.WriterOptions{})
	defer w.Close()
	var lat []time.Duration
	parent := ""
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		e := benchUser(i, parent)
		t0 := time.Now()
		if err := w.AppendDurable(ctx, e); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		parent = e.UUID
		i++
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

func benchUser(i int, parent string) transcript.Entry {
	text := fmt.Sprintf("prompt %d: run the tests again and fix whatever fails", i)
	var msg bytes.Buffer
	fmt.Fprintf(&msg, `{"role":"user","content":%q}`, text)
	return transcript.Entry{
		Type: transcript.TypeUser, UUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), ParentUUID: parent,
		Message: msg.Bytes(), Timestamp: transcript.FormatTime(time.Unix(1767225600, 0).Add(time.Duration(i) * time.Second)),
		SessionID: "bench", UserType: "external", Entrypoint: "cli", CWD: "/home/user/acme-api",
		Version: gen.Version, GitBranch: gen.GitBranch,
	}
}

// BenchmarkReloadAfterTurn measures what reading a session's transcript
// back costs once a turn appended to it: Load through the LineCache that
// loaded it first, against loading it afresh. A resumed session does this
// each turn (snip, collapse); with the cache it costs the new lines.
func BenchmarkReloadAfterTurn(b *testing.B) {
	path := filepath.Join(b.TempDir(), "s.jsonl")
	st := generateFile(b, path, gen.Options{Size: 10 << 20, Seed: 1})
	line := fmt.Sprintf(`{"type":"last-prompt","lastPrompt":"again","leafUuid":%q,"sessionId":%q}`+"\n", st.Leaf, st.SessionID)
	grow := func() {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.WriteString(line); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	load := func(c *transcript.LineCache) *transcript.Conversation {
		src, err := transcript.OpenFile(path)
		if err != nil {
			b.Fatal(err)
		}
		defer src.Close()
		conv, err := transcript.Load(context.Background(), src, transcript.LoadOptions{NoRepair: true, Cache: c})
		if err != nil {
			b.Fatal(err)
		}
		return conv
	}
	for _, cached := range []bool{true, false} {
		name := "fresh"
		if cached {
			name = "cached"
		}
		b.Run(name, func(b *testing.B) {
			var cache *transcript.LineCache
			if cached {
				cache = &transcript.LineCache{}
				load(cache)
			}
			b.ReportAllocs()
			var read int64
			for b.Loop() {
				b.StopTimer()
				grow()
				b.StartTimer()
				read = load(cache).BytesRead
			}
			b.ReportMetric(float64(read), "read-B/op")
		})
	}
}

func BenchmarkIndex10MB(b *testing.B)  { benchmarkIndex(b, 10<<20) }
func BenchmarkIndex100MB(b *testing.B) { benchmarkIndex(b, 100<<20) }
func BenchmarkIndex400MB(b *testing.B) { benchmarkIndex(b, 400<<20) }

// benchmarkIndex measures the index pass (NewIndex and Chain) over a
// generated session of about size bytes with no compaction: the whole file
// is the conversation. CAIRN_BENCH_DIR, when set, keeps the generated files
// there between runs. heap-MB is the heap in use with the index held, after
// a collection.
func benchmarkIndex(b *testing.B, size int64) {
	path := benchFile(b, size)
	src, err := transcript.OpenFile(path)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	b.SetBytes(src.Size())
	b.ReportAllocs()
	var x *transcript.Index
	for b.Loop() {
		x, err = transcript.NewIndex(context.Background(), src, src.Size())
		if err != nil {
			b.Fatal(err)
		}
		if chain, _, err := x.Chain(""); err != nil || len(chain) == 0 {
			b.Fatalf("Chain: %d lines, %v", len(chain), err)
		}
	}
	b.StopTimer()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
	runtime.KeepAlive(x)
}

// benchFile returns a generated session of about size bytes, without
// compaction, made once in CAIRN_BENCH_DIR when that is set.
func benchFile(b *testing.B, size int64) string {
	dir := os.Getenv("CAIRN_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	path := filepath.Join(dir, fmt.Sprintf("flat-%dMB-seed1.jsonl", size>>20))
	if _, err := os.Stat(path); err != nil {
		generateFile(b, path, gen.Options{Size: size, Seed: 1})
	}
	return path
}

func BenchmarkMessages10MB(b *testing.B)  { benchmarkMessages(b, 10<<20) }
func BenchmarkMessages100MB(b *testing.B) { benchmarkMessages(b, 100<<20) }

// benchmarkMessages measures Conversation.Messages alone over a generated
// session of about size bytes with no compaction, loaded once: the view a
// resume builds from the whole file. CAIRN_BENCH_DIR, when set, keeps the
// generated files there between runs.
func benchmarkMessages(b *testing.B, size int64) {
	conv := loadPath(b, benchFile(b, size))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n = len(conv.Messages())
	}
	b.ReportMetric(float64(n), "messages")
}
