// Package hugeheap lets the Go heap grow into transparent huge pages while
// a process builds a large amount of memory at once, such as the load of
// a long session's transcript.
//
// On Linux each page of fresh memory costs a fault on its first touch;
// under virtualisation that is several microseconds a page, so a load
// that builds 60 MB of entries spent about as long faulting its 15,000
// pages in as decoding the file. Most distributions enable transparent
// huge pages only for memory that asks for them ("madvise" in
// /sys/kernel/mm/transparent_hugepage/enabled), and the Go runtime asks
// for none of its heap: Grow asks for the memory the heap is about to
// grow into, so it faults in a huge page (2 MB on x86-64) at a time.
package hugeheap

// Grow makes the heap grow by n bytes that fault in as huge pages, and
// frees them for the allocations that follow (memory the heap already
// had free is taken first). done ends the advice: what of the region is
// not touched yet then faults in 4 KB at a time, and the kernel no longer
// collapses the region's pages into huge ones in the background, which
// would keep memory the program has freed. Call it once the memory-heavy
// work is over; calls after the first do nothing.
//
// Grow costs one collection (a few milliseconds with a small heap). It
// grows the heap by less than n, or not at all, when n would take it near
// the memory limit (debug.SetMemoryLimit). A huge page is in memory whole
// once any byte of it is touched, and with fragmented memory the kernel
// may compact to find one (the "defrag" setting beside "enabled"). Grow
// does nothing where huge pages are not given on request: on other
// systems than Linux, when the system backs all memory with them already
// or never does, and when the environment's GODEBUG has disablethp=1 (the
// Go runtime's own switch against huge pages). Grows may run at once, but
// each turns the collector off for a moment (debug.SetGCPercent): a
// change of its percent other code makes meanwhile is undone.
func Grow(n int) (done func()) { return grow(n) }
