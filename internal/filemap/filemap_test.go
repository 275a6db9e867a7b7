//go:build unix

package filemap_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/filemap"
)

func TestMapCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	data := bytes.Repeat([]byte("0123456789"), 3000)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := filemap.Map(f, 5000, int64(len(data)))
	f.Close() // the region keeps its own
	if err != nil {
		t.Fatal(err)
	}
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
