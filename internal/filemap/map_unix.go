//go:build unix

package filemap

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Map maps f from byte off (rounded down to a page) to byte end, shared
// and read-only. The region keeps a file of its own open (f may be
// closed).
func Map(f *os.File, off, end int64) (*Region, error) {
	start := off &^ int64(os.Getpagesize()-1)
	if start >= end || end-start > int64(^uint(0)>>1) {
		return nil, fmt.Errorf("map %s: bytes %d to %d", f.Name(), start, end)
	}
	fd, err := unix.Dup(int(f.Fd()))
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", f.Name(), err)
	}
	unix.CloseOnExec(fd)
	data, err := unix.Mmap(fd, start, int(end-start), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("map %s: %w", f.Name(), err)
	}
	r := &Region{data: data, off: start, f: os.NewFile(uintptr(fd), f.Name())}
	register(r)
	return r, nil
}

// release takes the region's pages out of the process.
func (r *Region) release() { _ = unix.Madvise(r.data, unix.MADV_DONTNEED) }
