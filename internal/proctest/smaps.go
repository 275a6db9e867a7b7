package proctest

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// Mapping returns the fields /proc/self/smaps gives for the mapping that
// holds address at, by name without its colon ("Rss" → "120 kB",
// "VmFlags" → "rd wr mr ..."). It skips the test where the file cannot be
// read, and fails it when no mapping holds at.
func Mapping(t testing.TB, at uintptr) map[string]string {
	t.Helper()
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("cannot read the process's memory map: %v", err)
	}
	var fields map[string]string
	for _, line := range strings.Split(string(smaps), "\n") {
		head, rest, _ := strings.Cut(line, " ")
		if lo, hi, ok := strings.Cut(head, "-"); ok && !strings.HasSuffix(head, ":") {
			if fields != nil {
				return fields // the next mapping starts
			}
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil && uint64(l) <= uint64(at) && uint64(at) < h {
				fields = map[string]string{}
			}
			continue
		}
		if name, ok := strings.CutSuffix(head, ":"); ok && fields != nil {
			fields[name] = strings.TrimSpace(rest)
		}
	}
	if fields == nil {
		t.Fatalf("no mapping in /proc/self/smaps holds %#x", at)
	}
	return fields
}
