package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/bench/gen"
	"github.com/cairn-dev/cairn/internal/pgtest"
	"github.com/cairn-dev/cairn/transcript"
	"github.com/cairn-dev/cairn/transcript/pgstore"
	"github.com/cairn-dev/cairn/transcript/transcripttest"
)

// BenchmarkReplica appends the agent's way, a few lines a call, through
// the local-first replica (the local side in memory), and reports the
// lines a second that reach the store and the p99 of the agent's call.
func BenchmarkReplica(b *testing.B) {
	ctx := context.Background()
	defer func(d time.Duration) { pgstore.CloseTimeout = d }(pgstore.CloseTimeout)
	pgstore.CloseTimeout = 10 * time.Minute // measure the drain, however long
	s := open(b).Project(pgtest.Project(b))
	local, err := transcript.NewMemStore().OpenAppender(ctx, "s1")
	if err != nil {
		b.Fatal(err)
	}
	r := pgstore.Replicate(local, func(context.Context) (*pgstore.Store, error) { return s, nil }, "s1", nil, nil, func(err error) { b.Error(err) })
	const per = 4
	es := transcripttest.Entries("s1", per*b.N)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		t := time.Now()
		if err := r.Append(ctx, es[i*per:(i+1)*per], false); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
	}
	if err := r.Close(); err != nil { // waits until the store has them all
		b.Fatal(err)
	}
	el := time.Since(start)
	slices.Sort(lat)
	b.ReportMetric(float64(per*b.N)/el.Seconds(), "lines/s")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e6, "agent-p99-ms")
	if info, err := s.Info(ctx, "s1"); err != nil || info.Messages != int64(per*b.N) {
		b.Fatalf("the store has %+v, %v", info, err)
	}
}

// BenchmarkSearch1000 searches a project of 1,000 sessions.
func BenchmarkSearch1000(b *testing.B) {
	ctx := context.Background()
	s := open(b).Project(pgtest.Project(b))
	for i := range 1000 {
		id := fmt.Sprintf("s%04d", i)
		es := transcripttest.Entries(id, 20)
		if i%97 == 0 {
			es[4].Message = []byte(`{"role":"user","content":"the quokka migration failed again"}`)
		}
		if err := s.AppendRaw(ctx, id, lines(b, es)); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		hits, err := s.Search(ctx, "quokka migration", 50, false)
		if err != nil || len(hits) != 11 {
			b.Fatal(len(hits), err)
		}
	}
}

func lines(b *testing.B, es []transcript.Entry) []byte {
	var out []byte
	for _, e := range es {
		l, err := e.MarshalJSON()
		if err != nil {
			b.Fatal(err)
		}
		out = append(append(out, l...), '\n')
	}
	return out
}

// BenchmarkSync100MB sends a 100 MB session the store does not have.
func BenchmarkSync100MB(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "s.jsonl")
	f, _ := os.Create(path)
	if _, err := gen.Generate(f, gen.Options{Size: 100 << 20, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	f.Close()
	db := open(b)
	b.ResetTimer()
	for b.Loop() {
		src, err := transcript.OpenFile(path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := pgstore.Sync(ctx, src, db.Project(pgtest.Project(b)), "s1"); err != nil {
			b.Fatal(err)
		}
		src.Close()
	}
}
