package main

import (
	"errors"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestSetPages: -pages read leaves the binary as it was, follows a link
// to it, and leaves its pages in the page cache, read back; -pages dropped
// leaves them out of it; a missing binary and an unknown state are errors.
func TestSetPages(t *testing.T) {
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
	if err := setPages(link, "read"); err != nil {
		t.Fatal(err)
	}
	if n, all := resident(t, path, len(data)); n != all {
		t.Errorf("%d of %d pages in the page cache after the read back", n, all)
	}
	if err := setPages(link, "dropped"); err != nil {
		t.Fatal(err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type == unix.TMPFS_MAGIC {
		t.Logf("%s is on tmpfs, which keeps a file's pages: the drop is not checked", dir)
	} else if n, all := resident(t, path, len(data)); n > all/2 {
		t.Errorf("%d of %d pages in the page cache after the drop", n, all)
	}
	// Read only now: a read would put the pages back itself.
	if b, err := os.ReadFile(path); err != nil || string(b) != string(data) {
		t.Fatalf("the file changed: %d bytes, %v", len(b), err)
	}
	if err := setPages(filepath.Join(dir, "missing"), "read"); err == nil {
		t.Error("a missing binary read back without an error")
	}
	var u usageError
	if err := setPages(path, "cold"); !errors.As(err, &u) {
		t.Errorf("-pages cold: %v, want a usage error", err)
	}
	if err := setPages(filepath.Join(dir, "missing"), "as-is"); err != nil {
		t.Errorf("-pages as-is touched the file: %v", err)
	}
}

// resident is how many of the first size bytes' pages of the file at path
// are in the page cache, and how many pages they are.
func resident(t *testing.T, path string, size int) (n, all int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (size+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Skipf("mincore: %v", errno)
	}
	for _, v := range vec {
		n += int(v & 1)
	}
	return n, len(vec)
}

// TestSecondTurn: the second turn runs from the last answer given before
// its request (a side request's too) to that request's arrival; a run
// with no request carrying the second prompt, or one that sent it before
// any answer, is an error.
func TestSecondTurn(t *testing.T) {
	t0 := time.Now()
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	f := &timingFront{requests: []frontRequest{
		{arrived: ms(0), answered: ms(1), size: 500 << 10},
		{arrived: ms(2), answered: ms(3), size: 100},
		{arrived: ms(10), answered: ms(11), size: 600 << 10, second: true},
		{arrived: ms(20), answered: ms(21), size: 100, second: true},
	}}
	if d, err := f.secondTurn(); err != nil || d != 7*time.Millisecond {
		t.Errorf("secondTurn = %v, %v; want 7ms", d, err)
	}
	f.requests = f.requests[:2]
	if _, err := f.secondTurn(); err == nil {
		t.Error("no second request, and no error")
	}
	f.requests = []frontRequest{{arrived: ms(0), second: true}}
	if _, err := f.secondTurn(); err == nil {
		t.Error("a second request before any answer, and no error")
	}
}

// TestFrontTellsTheSecondTurn: the front notes each model request's
// arrival and answer, and takes for the second turn's a request carrying
// the second prompt to the main model, not a Haiku side request quoting it.
func TestFrontTellsTheSecondTurn(t *testing.T) {
	f := newTimingFront(0)
	defer f.Close()
	post := func(model string) {
		t.Helper()
		body := `{"model":"` + model + `","messages":[{"role":"user","content":"` + secondPrompt + `"}]}`
		resp, err := http.Post(f.URL+"/v1/messages", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	post("claude-haiku-4-5-20251001")
	post("claude-opus-4-5-20251101")
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) != 2 || f.requests[0].second || !f.requests[1].second {
		t.Fatalf("requests %+v: want the Haiku one not taken for the second turn's, the other taken", f.requests)
	}
	for i, r := range f.requests {
		if r.answered.Before(r.arrived) {
			t.Errorf("request %d answered at %v, before it arrived at %v", i, r.answered, r.arrived)
		}
	}
}

// TestTurnOrder: the programs run in turns, the first of one round last
// in the next.
func TestTurnOrder(t *testing.T) {
	for round, want := range [][]int{{0, 1}, {1, 0}, {0, 1}} {
		if got := turnOrder(round, 2); !slices.Equal(got, want) {
			t.Errorf("round %d: %v, want %v", round, got, want)
		}
	}
	if got := turnOrder(1, 1); !slices.Equal(got, []int{0}) {
		t.Errorf("one program, round 1: %v", got)
	}
}

// TestPairedRatios: the ratio is taken within each round, then the median
// of the rounds': a round where the machine was twice as slow for both
// counts as any other.
func TestPairedRatios(t *testing.T) {
	ms := func(v ...int) []runResult {
		var rs []runResult
		for _, x := range v {
			rs = append(rs, runResult{wall: time.Duration(x) * time.Millisecond, rss: int64(x) << 20})
		}
		return rs
	}
	// a is 10% faster in every round; the machine slowed down twice.
	wall, rss := pairedRatios(ms(90, 180, 90, 450), ms(100, 200, 100, 500))
	if math.Abs(wall-0.9) > 1e-9 || math.Abs(rss-0.9) > 1e-9 {
		t.Errorf("ratios %v, %v; want 0.9 each", wall, rss)
	}
	// An even count takes the mean of the middle two.
	if wall, _ := pairedRatios(ms(100, 300), ms(100, 200)); math.Abs(wall-1.25) > 1e-9 {
		t.Errorf("two rounds, 1 and 1.5: %v, want 1.25", wall)
	}
	if wall, rss := pairedRatios(nil, nil); wall != 0 || rss != 0 {
		t.Errorf("no rounds: %v, %v", wall, rss)
	}
	// A round with a figure missing (0) is left out of that ratio.
	base, cairn := ms(100, 100, 100), ms(90, 90, 90)
	base[1].rss, cairn[2].rss = 0, 0
	if wall, rss := pairedRatios(cairn, base); math.Abs(wall-0.9) > 1e-9 || math.Abs(rss-0.9) > 1e-9 {
		t.Errorf("rounds without a peak RSS: %v, %v; want 0.9 each", wall, rss)
	}
}
