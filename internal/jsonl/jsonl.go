// Package jsonl reads line-oriented files — transcripts, the prompt
// history — forwards or backwards with bounded memory: a line longer than
// the limit is skipped with a warning instead of being buffered, and a last
// line cut short by a crash is reported as torn.
package jsonl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// MaxLineBytes bounds the memory one line may take while reading. A longer
// line is skipped with a warning (the file itself is left as it is).
const MaxLineBytes = 64 << 20

// DefaultBlock is how much the backward scanner reads at a time.
const DefaultBlock = 256 << 10

// Line is one line of a file, without its newline.
type Line struct {
	Offset int64 // byte offset of the line's first byte
	No     int   // 1-based line number; 0 when scanning backward
	Bytes  []byte
	// Torn is set on a last line with no newline (a write cut short).
	Torn bool
	// Cut is set on a line Backward did not read whole, as the function
	// given to SkipLong asked: Bytes is nil.
	Cut bool
	// Newlines is, scanning backward, how many newlines the file holds
	// from the line's first byte to the end of what is scanned (the
	// line's own included): see Backward.Number.
	Newlines int
}

// Where names the line for a person: by number when known, else by offset.
func (l Line) Where() string {
	if l.No > 0 {
		return fmt.Sprintf("line %d", l.No)
	}
	return fmt.Sprintf("the line at byte %d", l.Offset)
}

// ErrStop, returned by a Forward callback, ends the scan without error.
var ErrStop = errors.New("stop")

// Forward calls fn for every line of r in order. Lines longer than maxLine
// (MaxLineBytes when zero) are reported through warn and skipped without
// buffering them. The slice passed to fn is only valid during the call.
func Forward(r io.Reader, maxLine int, warn func(string), fn func(Line) error) error {
	if maxLine <= 0 {
		maxLine = MaxLineBytes
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		off  int64
		no   int
		long []byte
		skip bool
	)
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case err == bufio.ErrBufferFull:
			if !skip {
				long = append(long, chunk...)
				if len(long) > maxLine {
					skip, long = true, nil
				}
			}
			off += int64(len(chunk))
			continue
		case err != nil && err != io.EOF:
			return err
		}
		start := off - int64(len(long))
		if skip {
			start = -1
		}
		off += int64(len(chunk))
		line := chunk
		if long != nil {
			line = append(long, chunk...)
		}
		if len(line) == 0 && err == io.EOF {
			return nil
		}
		no++
		torn := err == io.EOF && !bytes.HasSuffix(line, []byte("\n"))
		switch {
		case skip:
			warn(fmt.Sprintf("line %d: longer than %d bytes, skipped", no, maxLine))
		default:
			if ferr := fn(Line{Offset: start, No: no, Bytes: bytes.TrimSuffix(line, []byte("\n")), Torn: torn}); ferr != nil {
				if ferr == ErrStop {
					return nil
				}
				return ferr
			}
		}
		long, skip = nil, false
		if err == io.EOF {
			return nil
		}
	}
}

// Backward yields the lines of a file from the last to the first, reading
// blocks from the end. It keeps at most one block plus one line in memory.
type Backward struct {
	r       io.ReaderAt
	pos     int64  // bytes before pos are not read yet
	carry   []byte // the partial line that starts before pos
	lines   []Line // the lines of the last read; Next gives lines[next:]
	next    int
	warn    func(string)
	block   int64 // bytes to read at a time
	maxLine int
	first   bool // the next line yielded is the file's last line
	skip    bool // discarding an over-long line
	nls     []int
	get     func(n int) []byte // see Buffers; nil: a new buffer each read
	scratch []byte             // what newlineBefore reads into
	skipFn  func(tail []byte) bool
	nl      int // newlines from pos to the end
}

// Buffers makes s read each block into a buffer get returns (of length 0
// and a capacity of at least n) instead of a new one, so that a caller
// can hand out the buffers of blocks whose lines it is done with again.
// The lines a read gives (those Next returns until Buffered says it would
// read again) are all in the buffer it got; the part of a line that
// starts before the block is in the buffer of the read before it until
// the next read copies it out. So a buffer may be given out again once
// its lines are no longer used and a later read is done. It saves
// allocating, and faulting in, a block per block read.
func (s *Backward) Buffers(get func(n int) []byte) { s.get = get }

// SkipLong has s ask skip about each line longer than a block, given
// the line's last bytes (a block or more of them), before it reads the
// rest of the line: one skip says to skip is not read, and Next gives it
// with Cut set. A caller that can tell a line it has no use for by its
// end spares reading a long one whole. skip must not keep tail.
func (s *Backward) SkipLong(skip func(tail []byte) bool) { s.skipFn = skip }

// Newlines reports how many newlines the bytes read so far (from Offset
// to the end) hold.
func (s *Backward) Newlines() int { return s.nl }

// Number returns the 1-based number of the line l, which s gave, given
// how many newlines the file holds before Offset (none once the scan
// reached the start of the file): the scan itself counts those after.
func (s *Backward) Number(l Line, before int) int { return before + s.nl - l.Newlines + 1 }

// NewBackward returns a backward reader of the size bytes of r. warn (may
// be nil) hears about skipped over-long lines; block and maxLine default
// to DefaultBlock and MaxLineBytes when zero.
func NewBackward(r io.ReaderAt, size int64, block, maxLine int, warn func(string)) *Backward {
	if block <= 0 {
		block = DefaultBlock
	}
	if maxLine <= 0 {
		maxLine = MaxLineBytes
	}
	if warn == nil {
		warn = func(string) {}
	}
	return &Backward{r: r, pos: size, warn: warn, first: true, block: int64(block), maxLine: maxLine}
}

// Offset reports the offset of the earliest byte read so far.
func (s *Backward) Offset() int64 { return s.pos }

// Next returns the previous line; ok is false at the start of the file.
// The line's bytes stay valid and unchanged after later calls: each block
// is read into a buffer of its own, never reused (unless Buffers says
// otherwise).
func (s *Backward) Next() (Line, bool, error) {
	for s.next == len(s.lines) {
		if s.pos == 0 && s.carry == nil {
			return Line{}, false, nil
		}
		// Every line of the array was given (as copies): it is filled
		// again rather than a new one taken each read.
		s.lines, s.next = s.lines[:0], 0
		if err := s.fill(); err != nil {
			return Line{}, false, err
		}
	}
	s.next++
	return s.lines[s.next-1], true, nil
}

// Buffered reports how many lines Next can return without reading.
func (s *Backward) Buffered() int { return len(s.lines) - s.next }

// fill reads the block before pos and splits it into lines (last first).
func (s *Backward) fill() error {
	if s.pos == 0 {
		// What remains is the file's first line.
		if !s.skip {
			s.emit(0, s.carry, s.nl)
		}
		s.carry, s.skip = nil, false
		return nil
	}
	// Read at least as much as the partial line already held, so a long
	// line costs linear time, not quadratic.
	n := max(s.block, int64(len(s.carry)))
	if int64(len(s.carry)) >= s.block {
		// A line longer than a block: rather than doubling what is read
		// (and held) until its start is in, find its start and read the
		// rest of it at once, from the newline before it.
		nl, ok, err := s.newlineBefore(int64(s.maxLine) + 1 - int64(len(s.carry)))
		if err != nil {
			return err
		}
		if !ok {
			// No newline in more than maxLine bytes: the line is skipped,
			// what was looked at is not read again.
			s.warn(fmt.Sprintf("the line ending at byte %d: longer than %d bytes, skipped", s.pos+int64(len(s.carry)), s.maxLine))
			s.pos, s.carry, s.skip = nl, nil, true
			return nil
		}
		if s.pos-(nl+1)+int64(len(s.carry)) <= int64(s.maxLine) {
			if s.skipFn != nil && s.skipFn(s.carry) {
				// Given without its bytes; the newline before it, left
				// out of the next read, ends the line before.
				s.emit(nl+1, nil, s.nl)
				s.lines[len(s.lines)-1].Cut = true
				s.pos, s.carry = 0, nil
				if nl >= 0 {
					// The line before ends at nl: none of it is read yet.
					s.pos, s.carry = nl, []byte{}
					s.nl++
				}
				return nil
			}
			n = s.pos - max(nl, 0)
		}
	}
	if n > s.pos {
		n = s.pos
	}
	start := s.pos - n
	var buf []byte
	if c := n + int64(len(s.carry)); s.get != nil {
		buf = s.get(int(c))[:n]
	} else {
		buf = make([]byte, n, c)
	}
	if _, err := s.r.ReadAt(buf, start); err != nil && err != io.EOF {
		return err
	}
	s.pos = start
	buf = append(buf, s.carry...)
	s.carry = nil
	// Split from the end; the part before the first newline continues into
	// the previous block.
	end := len(buf)
	// bytes.IndexByte is vectorised and LastIndexByte is not: find the
	// newlines forwards, then take them from the last.
	nls := s.nls[:0]
	for i := 0; ; {
		k := bytes.IndexByte(buf[i:], '\n')
		if k < 0 {
			break
		}
		nls = append(nls, i+k)
		i += k + 1
	}
	s.nls = nls
	after := s.nl // the newlines of the bytes read before
	s.nl += len(nls)
	for n := len(nls) - 1; n >= 0; n-- {
		i := nls[n]
		if s.skip {
			s.skip = false
		} else if end > i+1 || !s.first {
			s.emit(start+int64(i+1), buf[i+1:end:end], after+len(nls)-1-n) // capped: an append never runs into the next line
		} else {
			s.first = false // the file ends with a newline
		}
		end = i
	}
	if s.skip {
		return nil
	}
	if end > s.maxLine {
		s.warn(fmt.Sprintf("the line ending at byte %d: longer than %d bytes, skipped", start+int64(end), s.maxLine))
		s.skip = true
		return nil
	}
	s.carry = buf[:end:end]
	if start == 0 {
		return s.fill()
	}
	return nil
}

// newlineBefore returns the offset of the last newline before pos, -1
// when there is none, reading back a block at a time into a buffer it
// keeps for the next time; ok is false when it gave up after reading
// limit bytes or more without finding one (the line is too long to read
// whole), and nl is then where it stopped: no newline is between it and
// pos. A newline found may be up to a block further back than limit.
func (s *Backward) newlineBefore(limit int64) (nl int64, ok bool, err error) {
	if int64(cap(s.scratch)) < s.block {
		s.scratch = make([]byte, s.block)
	}
	buf := s.scratch[:s.block]
	pos := s.pos
	for pos > 0 {
		if s.pos-pos >= limit {
			return pos, false, nil
		}
		n := min(int64(len(buf)), pos)
		if _, err := s.r.ReadAt(buf[:n], pos-n); err != nil && err != io.EOF {
			return 0, false, err
		}
		pos -= n
		// IndexByte is the vectorised one: most blocks of a long line
		// hold no newline at all.
		if bytes.IndexByte(buf[:n], '\n') >= 0 {
			return pos + int64(bytes.LastIndexByte(buf[:n], '\n')), true, nil
		}
	}
	return -1, true, nil
}

// emit gives the line at off, with newlines after its start.
func (s *Backward) emit(off int64, b []byte, newlines int) {
	torn := s.first
	s.first = false
	s.lines = append(s.lines, Line{Offset: off, Bytes: b, Torn: torn, Newlines: newlines})
}

// EndsMidLine reports whether f is not empty and does not end with a
// newline: its last write was cut short.
func EndsMidLine(f *os.File) (bool, error) {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return false, err
	}
	var b [1]byte
	if _, err := f.ReadAt(b[:], st.Size()-1); err != nil {
		return false, err
	}
	return b[0] != '\n', nil
}
