package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/filemap"
)

// TestWriteMappedOfACutFile writes out bytes of a mapping whose file was
// cut shorter meanwhile: an error naming the file, not a crash, and the
// bytes the file still holds written as they were.
func TestWriteMappedOfACutFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	data := bytes.Repeat([]byte("0123456789abcdef"), (8<<20)/16)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := filemap.Map(f, 0, int64(len(data)))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	mapped := r.At(0, len(data))
	if err := os.Truncate(path, 1<<20); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = writeMapped(&out, func(w io.Writer) error {
		for i := 0; i < len(mapped); i += 64 << 10 {
			if _, err := w.Write(mapped[i : i+64<<10]); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("writing out a file cut shorter: %v, want an error naming %s", err, path)
	}
	// The write that faulted stopped inside the copy: what it was
	// writing is not whole, what came before is.
	if out.Len() < 1<<20 || !bytes.Equal(out.Bytes()[:1<<20], data[:1<<20]) {
		t.Errorf("%d bytes written, not the file's first megabyte before the cut", out.Len())
	}
}
