package transcript

import (
	"context"
	"testing"

	"github.com/cairn-dev/cairn/bench/gen"
)

// TestLineCacheHoldsOnce: once a load cached the whole file, its entries
// are held by the prefix's lines only, not by the map as well.
func TestLineCacheHoldsOnce(t *testing.T) {
	var b bytesWriter
	if _, err := gen.Generate(&b, gen.Options{Size: 50 << 10, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	cache := &LineCache{}
	if _, err := Load(context.Background(), BytesSource(b), LoadOptions{NoRepair: true, Cache: cache}); err != nil {
		t.Fatal(err)
	}
	if cache.prefix != int64(len(b)) || len(cache.lines) == 0 {
		t.Fatalf("prefix %d of %d bytes, %d lines: the whole file should be cached", cache.prefix, len(b), len(cache.lines))
	}
	if len(cache.m) != 0 {
		t.Errorf("the map still holds %d entries the prefix holds", len(cache.m))
	}
}

type bytesWriter []byte

func (w *bytesWriter) Write(p []byte) (int, error) { *w = append(*w, p...); return len(p), nil }
