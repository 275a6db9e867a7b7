package hugeheap

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// thp is the system's transparent huge pages: the mode ("always",
// "madvise" or "never"; "" when it cannot be read) and the size of a huge
// page (2 MB on x86-64; 0 when it cannot be read).
var thp = sync.OnceValues(func() (mode string, size uintptr) {
	const dir = "/sys/kernel/mm/transparent_hugepage/"
	b, err := os.ReadFile(dir + "enabled")
	if err != nil {
		return "", 0
	}
	_, mode, _ = strings.Cut(string(b), "[")
	mode, _, _ = strings.Cut(mode, "]")
	b, err = os.ReadFile(dir + "hpage_pmd_size")
	if err != nil {
		return mode, 0
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n&(n-1) != 0 {
		return mode, 0
	}
	return mode, uintptr(n)
})

// disabled reports whether GODEBUG, as the environment sets it, turns the
// runtime's huge pages off (disablethp=1; the last setting wins, as the
// runtime reads it).
func disabled() bool {
	off := false
	for _, kv := range strings.Split(os.Getenv("GODEBUG"), ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(kv), "disablethp="); ok {
			off = v == "1"
		}
	}
	return off
}

// mu serialises grow.
var mu sync.Mutex

func grow(n int) func() {
	mode, hugePage := thp()
	if mode != "madvise" || hugePage == 0 || disabled() {
		return func() {}
	}
	// The collector's percent is the process's: two Grows at once must
	// not put back each other's -1.
	mu.Lock()
	defer mu.Unlock()
	if n = min(n, room()); n <= 0 || uintptr(n) < 2*hugePage {
		return func() {}
	}
	// The heap grows by n bytes, in chunks of a huge page each: fresh
	// memory is neither zeroed nor touched when allocated, but a span
	// that begins in a free gap of memory used before is zeroed whole, so
	// a single span of n bytes could touch most of them a page at a time.
	// Chunks that fill such gaps are zeroed (their pages are in memory
	// already); the others stay untouched. No collection runs while they
	// are made (room keeps them under the memory limit, which would call
	// for one): a collection started by them would have them help it mark.
	percent := debug.SetGCPercent(-1)
	chunks := make([][]byte, uintptr(n)/hugePage)
	at := make([]uintptr, len(chunks))
	for i := range chunks {
		chunks[i] = make([]byte, hugePage)
		at[i] = uintptr(unsafe.Pointer(unsafe.SliceData(chunks[i])))
	}
	debug.SetGCPercent(percent)
	// The chunks lie mostly one after the other; each run of them, less
	// its ends that only part of a huge page covers, is advised.
	slices.Sort(at)
	var runs [][2]uintptr
	for i := 0; i < len(at); {
		j := i + 1
		for j < len(at) && at[j] == at[j-1]+hugePage {
			j++
		}
		lo := (at[i] + hugePage - 1) &^ (hugePage - 1)
		hi := (at[j-1] + hugePage) &^ (hugePage - 1)
		if lo < hi && advise(lo, hi, unix.MADV_HUGEPAGE) {
			runs = append(runs, [2]uintptr{lo, hi})
		}
		i = j
	}
	// Nothing may point into the chunks now, or they would stay in use:
	// the runs are kept as addresses only.
	clear(chunks)
	chunks = nil
	if len(runs) == 0 {
		return func() {}
	}
	runtime.GC()
	var once sync.Once
	return func() {
		once.Do(func() {
			for _, r := range runs {
				advise(r[0], r[1], unix.MADV_NOHUGEPAGE)
			}
		})
	}
}

// room is how much the heap can grow by under the memory limit (see
// debug.SetMemoryLimit) before the collector must run, less a margin for
// what else allocates meanwhile; the most an int holds when there is no
// limit.
func room() int {
	limit := debug.SetMemoryLimit(-1)
	if limit == math.MaxInt64 {
		return math.MaxInt
	}
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	used := int64(s[0].Value.Uint64() - s[1].Value.Uint64())
	return int(max(0, limit-used-limitMargin))
}

// limitMargin is what room leaves under the memory limit.
const limitMargin = 16 << 20

// advise gives the kernel advice on the addresses from lo to hi. The range
// may hold memory in use: the advice on how to back it reads or writes
// none of it.
func advise(lo, hi uintptr, advice int) bool {
	_, _, errno := unix.Syscall(unix.SYS_MADVISE, lo, hi-lo, uintptr(advice))
	return errno == 0
}
