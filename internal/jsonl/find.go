package jsonl

import "bytes"

// Finder finds a text in blocks of a file, such as an id's "uuid":"…" in
// a transcript. bytes.Index runs at IndexByte's speed while the first
// byte it looks for is rare, and compares at every byte once that is
// common, as '"' is in JSON: a Finder looks for the text from its byte
// rarest in the first block it is given (leaving at least 8 bytes), and
// checks the bytes before it at each hit.
type Finder struct {
	pat  []byte
	skip int // where in pat the search starts; -1 until the first block
}

// NewFinder returns a Finder of pat.
func NewFinder(pat []byte) *Finder { return &Finder{pat: pat, skip: -1} }

// NewFinderFrom returns a Finder of pat that searches from pat[from:],
// a part known to start with a rare byte.
func NewFinderFrom(pat []byte, from int) *Finder {
	return &Finder{pat: pat, skip: min(max(from, 0), len(pat)-1)}
}

// All appends to hits the offsets in b at which pat starts, in order.
func (f *Finder) All(b []byte, hits []int) []int {
	if f.skip < 0 {
		f.skip = rarest(f.pat, b[len(b)-min(len(b), 256<<10):])
	}
	for i := 0; ; {
		k := bytes.Index(b[i:], f.pat[f.skip:])
		if k < 0 {
			return hits
		}
		if p := i + k - f.skip; p >= 0 && bytes.Equal(b[p:p+f.skip], f.pat[:f.skip]) {
			hits = append(hits, p)
		}
		i += k + 1
	}
}

// In reports whether pat is in b.
func (f *Finder) In(b []byte) bool {
	var one [1]int
	return len(f.All(b, one[:0])) > 0
}

// rarest is where in pat the text to look for starts: at its byte
// rarest in sample, leaving at least 8 bytes.
func rarest(pat, sample []byte) int {
	var n [256]int
	for _, c := range sample {
		n[c]++
	}
	j := 0
	for i := range len(pat) - 8 {
		if n[pat[i]] < n[pat[j]] {
			j = i
		}
	}
	return j
}
