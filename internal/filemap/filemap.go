// Package filemap maps files read-only, so that large values read from a
// file can stay in the page cache as slices of its mapping instead of
// copies in the heap: only what reads them brings their pages into the
// process.
//
// A mapping is never unmapped (its slices may be anywhere), and it keeps
// a file descriptor of its own: a program maps few files, once each (a
// headless run the session it resumes; the terminal UI each session it
// resumes, /resume included). A file cut shorter under its mapping faults
// the reader of the bytes past the new end (SIGBUS, which kills a Go
// program): users of the slices call Check before they read them, and
// get an error naming the file instead; a file cut between the check and
// the read still faults, unless the read runs under Guard. A file
// replaced by another (renamed over, deleted and written again) leaves
// the mapping reading the old one, as it was. Bytes of the file changed
// in place show through the mapping: the files mapped (transcripts) are
// only ever appended to.
package filemap

import (
	"fmt"
	"iter"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Region is a mapping of part of a file.
type Region struct {
	data []byte
	off  int64    // the file offset of data[0]
	f    *os.File // the file, kept open for Check
}

// regions holds every region mapped, never emptied: Holds reads it
// without a lock.
var (
	regions atomic.Pointer[[]*Region]
	mu      sync.Mutex // serialises writers of regions
)

func register(r *Region) {
	mu.Lock()
	defer mu.Unlock()
	var all []*Region
	if p := regions.Load(); p != nil {
		all = append(all, *p...)
	}
	all = append(all, r)
	regions.Store(&all)
}

// At returns the n bytes of the file at off, nil when the region does not
// hold them all.
func (r *Region) At(off int64, n int) []byte {
	if r == nil || off < r.off || off+int64(n) > r.off+int64(len(r.data)) {
		return nil
	}
	i := int(off - r.off)
	return r.data[i : i+n : i+n]
}

// regionOf returns the region b is a slice of, nil when it is none's.
func regionOf(b []byte) *Region {
	if len(b) == 0 {
		return nil
	}
	s := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	r := regionAt(s)
	if r == nil || s+uintptr(len(b)) > uintptr(unsafe.Pointer(unsafe.SliceData(r.data)))+uintptr(len(r.data)) {
		return nil
	}
	return r
}

// Holds reports whether b is a slice of a mapping. It reads nothing of b.
func Holds(b []byte) bool { return regionOf(b) != nil }

// Check returns an error naming the file when one of bs is a slice of a
// mapping whose file is now shorter than the slice's end: reading it
// would fault. It reads nothing of the slices, and looks at each file
// once.
func Check(bs iter.Seq[[]byte]) error {
	if regions.Load() == nil {
		return nil
	}
	var ends map[*Region]int64
	for b := range bs {
		r := regionOf(b)
		if r == nil {
			continue
		}
		end := r.off + int64(offsetIn(b, r.data)+len(b))
		if ends == nil {
			ends = make(map[*Region]int64)
		}
		ends[r] = max(ends[r], end)
	}
	for r, end := range ends {
		st, err := r.f.Stat()
		if err != nil {
			return fmt.Errorf("check %s, which the conversation is read from: %w", r.f.Name(), err)
		}
		if st.Size() < end {
			return fmt.Errorf("%s was cut to %d bytes since it was read (it had at least %d): the conversation read from it can no longer be sent; resume the session again to read the file as it is now", r.f.Name(), st.Size(), end)
		}
	}
	return nil
}

// Release takes the pages of every mapping out of the process: they stay
// in the page cache, and a later read of them faults them back in (from
// memory, not the disk). It is for a reader that goes through a mapping
// once, as a command that writes a whole session out does, so that the
// pages it has read do not all count against its memory by the end.
func Release() {
	if all := regions.Load(); all != nil {
		for _, r := range *all {
			r.release()
		}
	}
}

// Guard runs f on the calling goroutine and turns a fault reading a
// mapping whose file was cut shorter meanwhile (or could not be read) into
// an error naming the file, instead of the crash it is otherwise. A fault
// anywhere else is a panic, as ever. f is stopped where it faulted: the
// caller discards what f was building (a sync.Once it was in counts as
// done), as a command that then exits does.
func Guard(f func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if a, ok := v.(interface{ Addr() uintptr }); ok {
			if r := regionAt(a.Addr()); r != nil {
				err = fmt.Errorf("%s could not be read where it was mapped (cut shorter while it was read?): read the session again to see it as it is now", r.f.Name())
				return
			}
		}
		panic(v)
	}()
	return f()
}

// regionAt returns the region holding the address p, nil when none does.
func regionAt(p uintptr) *Region {
	all := regions.Load()
	if all == nil {
		return nil
	}
	for _, r := range *all {
		d := uintptr(unsafe.Pointer(unsafe.SliceData(r.data)))
		if p >= d && p < d+uintptr(len(r.data)) {
			return r
		}
	}
	return nil
}

// offsetIn returns where sub, a slice of buf, starts in it.
func offsetIn(sub, buf []byte) int {
	return int(uintptr(unsafe.Pointer(unsafe.SliceData(sub))) - uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
}
