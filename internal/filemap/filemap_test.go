//go:build unix

package filemap_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/cairn-dev/cairn/internal/filemap"
	"github.com/cairn-dev/cairn/internal/proctest"
)

// mapFile writes data to a file of its own and maps it from off to its
// end; it returns the file's path and the region.
func mapFile(t *testing.T, data []byte, off int64) (string, *filemap.Region) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := filemap.Map(f, off, int64(len(data)))
	f.Close() // the region keeps its own
	if err != nil {
		t.Fatal(err)
	}
	return path, r
}

func TestMapCheck(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 3000)
	path, r := mapFile(t, data, 5000)
	if r.At(int64(len(data))-10, 11) != nil {
		t.Fatal("At gave bytes past the end")
	}
	head, tail := r.At(4100, 100), r.At(25000, 5000)
	if !bytes.Equal(head, data[4100:4200]) || !bytes.Equal(tail, data[25000:]) {
		t.Fatal("At does not give the file's bytes")
	}
	if !filemap.Holds(tail) || filemap.Holds(data[25000:]) {
		t.Fatal("Holds is wrong")
	}
	check := func(bs ...[]byte) error { return filemap.Check(slices.Values(bs)) }
	if err := check(head, tail, data); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 20000); err != nil {
		t.Fatal(err)
	}
	if err := check(head, data); err != nil {
		t.Fatalf("bytes the cut file still holds: %v", err)
	}
	if err := check(head, tail); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("bytes past the end of the cut file: %v, want an error naming it", err)
	}
}

// TestGuard: reading bytes past the end of a file cut shorter under its
// mapping is an error naming the file under Guard, not a crash; what the
// file still holds reads as ever, and other panics go through.
func TestGuard(t *testing.T) {
	path, r := mapFile(t, bytes.Repeat([]byte("abcdefghij"), 3000), 0)
	tail := r.At(25000, 5000)
	if err := os.Truncate(path, 1000); err != nil {
		t.Fatal(err)
	}
	var sum int
	err := filemap.Guard(func() error {
		for _, c := range tail {
			sum += int(c)
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("reading past the end of the cut file: %v, want an error naming it", err)
	}
	if err := filemap.Guard(func() error { _ = r.At(0, 10)[9]; return nil }); err != nil {
		t.Fatalf("reading what the file still holds: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a panic of another kind did not go through Guard")
		}
	}()
	_ = filemap.Guard(func() error { panic("other") })
}

// TestRelease: a region read through is taken out of the process's
// resident memory by Release, and reads the same bytes after it.
func TestRelease(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 8<<20/16)
	_, r := mapFile(t, data, 0)
	all := r.At(0, len(data))
	for i := 0; i < len(all); i += 4096 {
		sink += int(all[i])
	}
	before := residentPages(t, all)
	if before < len(all)/4096/2 {
		t.Fatalf("%d of %d pages resident after reading them all", before, len(all)/4096)
	}
	filemap.Release()
	if after := residentPages(t, all); after > before/10 {
		t.Errorf("%d of %d pages still resident after Release (%d before)", after, len(all)/4096, before)
	}
	if !bytes.Equal(all, data) {
		t.Error("the region reads other bytes after Release")
	}
}

// sink keeps the reads of TestRelease from being compiled away.
var sink int

// residentPages counts the pages of b that are in the process's memory,
// from /proc/self/smaps' Rss of the mapping that holds b.
func residentPages(t *testing.T, b []byte) int {
	t.Helper()
	rss := proctest.Mapping(t, uintptr(unsafe.Pointer(unsafe.SliceData(b))))["Rss"]
	kb, err := strconv.Atoi(strings.TrimSuffix(rss, " kB"))
	if err != nil {
		t.Fatalf("the mapping's Rss is %q", rss)
	}
	return kb / 4
}
