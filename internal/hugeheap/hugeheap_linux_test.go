package hugeheap

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/cairn-dev/cairn/internal/proctest"
)

// TestGrow: memory the heap grows into after Grow is backed by huge
// pages, in objects as small as a load's; done turns the advice off, and
// the memory grown into without Grow is not.
func TestGrow(t *testing.T) {
	if m, _ := thp(); m != "madvise" {
		t.Skipf("transparent huge pages are %q on this system, not \"madvise\": Grow has nothing to do", m)
	}
	if disabled() {
		t.Skip("GODEBUG has disablethp=1: Grow has nothing to do")
	}
	if os.Getenv(freshEnv) == "" {
		// The heap of a test process that ran before (-count) holds free
		// memory, which the objects take before the heap grows: the
		// check runs in a process of its own.
		cmd := exec.Command(os.Args[0], "-test.run=^TestGrow$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), freshEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err == nil && bytes.Contains(out, []byte("--- SKIP: TestGrow")) {
			t.Skipf("skipped in the process of its own:\n%s", out)
		}
		if err != nil || !bytes.Contains(out, []byte("--- PASS: TestGrow")) {
			t.Fatalf("the check in a process of its own: %v\n%s", err, out)
		}
		return
	}
	const n = 64 << 20
	fill := func() [][]*int {
		var keep [][]*int
		for range n / 2 / 4096 {
			keep = append(keep, make([]*int, 4096/8))
		}
		return keep
	}
	before := anonHuge(t)
	control := fill() // grown into without Grow
	if got := anonHuge(t) - before; got > 8<<20 {
		t.Logf("%d MB of huge pages without Grow: the system backs some memory with them on its own", got>>20)
	}
	before = anonHuge(t)
	fallbacks := vmstat(t, "thp_fault_fallback")
	done := Grow(n)
	keep := fill()
	got := anonHuge(t) - before
	if got < n/4 && vmstat(t, "thp_fault_fallback") > fallbacks {
		t.Skipf("the kernel had no free huge page for some faults (thp_fault_fallback rose; memory is fragmented): %d MB of huge pages", got>>20)
	}
	if got < n/4 {
		t.Errorf("after Grow(%d MB), %d MB of objects took %d MB of huge pages; want at least %d MB", n>>20, n/2>>20, got>>20, n/4>>20)
	}
	at := uintptr(unsafe.Pointer(&keep[len(keep)/2][0]))
	if f := vmFlags(t, at); !slices.Contains(f, "hg") {
		t.Errorf("memory grown into after Grow: VmFlags %q, want hg (huge pages advised)", f)
	}
	done()
	if f := vmFlags(t, at); !slices.Contains(f, "nh") {
		t.Errorf("after done: VmFlags %q, want nh (huge pages advised against)", f)
	}
	done() // a second call does nothing
	if f := vmFlags(t, uintptr(unsafe.Pointer(&control[0][0]))); slices.Contains(f, "hg") {
		t.Errorf("memory grown into before Grow: VmFlags %q, want no hg", f)
	}
}

// freshEnv is set in the process TestGrow runs its check in.
const freshEnv = "CAIRN_HUGEHEAP_TEST_FRESH"

// anonHuge returns the bytes of anonymous huge pages the process has.
func anonHuge(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		t.Skipf("cannot read the process's memory map: %v", err)
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("AnonHugePages:")); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(string(v)), " kB"))
			if err != nil {
				t.Fatalf("smaps_rollup: %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatal("smaps_rollup has no AnonHugePages line")
	return 0
}

// vmstat returns a counter of /proc/vmstat.
func vmstat(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/vmstat")
	if err != nil {
		t.Skipf("cannot read the kernel's counters: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("/proc/vmstat: %q: %v", line, err)
			}
			return n
		}
	}
	return 0 // a kernel without the counter
}

// vmFlags returns the VmFlags of the mapping holding address at.
func vmFlags(t *testing.T, at uintptr) []string {
	t.Helper()
	return strings.Fields(proctest.Mapping(t, at)["VmFlags"])
}

// TestRoom: Grow stays under the memory limit, less a margin; with no
// limit it may grow by any amount; a size below zero does nothing.
func TestRoom(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	if r := room(); r != math.MaxInt {
		t.Errorf("with no limit, room %d", r)
	}
	debug.SetMemoryLimit(1 << 20) // below what the process uses
	if r := room(); r != 0 {
		t.Errorf("over the limit, room %d; want 0", r)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	used := int64(ms.Sys - ms.HeapReleased)
	debug.SetMemoryLimit(used + 100<<20)
	// The runtime's own count of what it uses is not quite MemStats':
	// within a few megabytes.
	if r, want := room(), 100<<20-limitMargin; r < want-8<<20 || r > want+8<<20 {
		t.Errorf("100 MB under the limit, room %d MB; want about %d", r>>20, (100<<20-limitMargin)>>20)
	}
	Grow(-1)() // does nothing
}

// TestDisabled: GODEBUG's disablethp turns Grow off, the last setting
// winning.
func TestDisabled(t *testing.T) {
	for v, want := range map[string]bool{
		"": false, "disablethp=1": true, "gctrace=1, disablethp=1": true,
		"disablethp=0": false, "disablethp=1,disablethp=0": false, "disablethp=0,disablethp=1": true,
	} {
		t.Setenv("GODEBUG", v)
		if got := disabled(); got != want {
			t.Errorf("GODEBUG=%q: disabled %v, want %v", v, got, want)
		}
	}
}
