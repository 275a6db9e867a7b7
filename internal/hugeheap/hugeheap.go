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
// grow into, so it faults in 2 MB at a time.
package hugeheap

// Grow readies the next n bytes of heap growth to be backed by huge pages
// and returns the function that ends that: memory the heap grows into
// after it faults in as it did before. Until done is called, the region
// may be collapsed into huge pages by the kernel in the background, so
// call it once the memory-heavy work is over.
//
// Grow costs one garbage collection: it makes the heap grow by n bytes
// (virtual memory, not touched), advises the kernel, and frees the bytes
// again for the allocations that follow, which the heap places there. It
// does nothing where huge pages are not available on request: on other
// systems, when the system backs all memory with huge pages already or
// never does, and when GODEBUG has disablethp=1 (the Go runtime's own
// switch against huge pages).
func Grow(n int) (done func()) { return grow(n) }
