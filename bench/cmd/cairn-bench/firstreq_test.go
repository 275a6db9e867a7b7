package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestRereadFile: -reread leaves the binary as it was, follows a link to
// it, and leaves its pages in the page cache, read back; a missing binary
// is an error.
func TestRereadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "prog")
	data := []byte(strings.Repeat("0123456789abcdef", 64<<10)) // 1 MB
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if err := rereadFile(link); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, len(data), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (len(data)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Skipf("mincore: %v", errno)
	}
	resident := 0
	for _, v := range vec {
		resident += int(v & 1)
	}
	if resident != len(vec) {
		t.Errorf("%d of %d pages in the page cache after the read back", resident, len(vec))
	}
	// Read only now: a read would put the pages back itself.
	if b, err := os.ReadFile(path); err != nil || string(b) != string(data) {
		t.Fatalf("the file changed: %d bytes, %v", len(b), err)
	}
	if err := rereadFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing binary read back without an error")
	}
}
