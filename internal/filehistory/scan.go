package filehistory

import (
	"bytes"
	"context"
	"fmt"
	"io"
)

// scanBlock is how much of the transcript Load reads at a time.
const scanBlock = 1 << 20

// marked finds the lines of a file that hold a mark, reading the file a
// block at a time: a line without the mark costs only the search for the
// mark and the count of newlines, each done on the whole block (no work
// per line). Its lines, numbers and warnings are jsonl.Forward's
// (TestMarkedScan); it is not Forward plus a filter because Forward's
// read and call per line made Load 1.45x slower on 100 MB (71 vs 49 ms).
type marked struct {
	// mark is what a line must hold; the search is for mark[cut:], the
	// part of it whose first byte is rarest in a transcript (JSON is full
	// of quotes, which makes a search for a quoted word stop everywhere),
	// then each hit is checked against the whole of mark.
	mark []byte
	cut  int
	// block is how much is read at a time; maxLine the longest line
	// read: a longer one is skipped with a warning, whatever it holds,
	// without buffering it (give or take a block).
	block, maxLine int
	warn           func(string)
}

// scan calls fn, in file order, with each line of r holding the mark
// (without its newline) and its 1-based number. A last line with no
// newline is passed as it is. The slice given to fn is only valid during
// the call; scan returns the first error fn or r returns, and ctx's error
// once it is cancelled.
//
// A line longer than a block is kept in memory only while it may hold
// the mark: when r is an io.ReaderAt that can tell where it is reading
// (an io.Seeker), one with no mark in its first block is passed over a
// block at a time, and read again from its start should the mark turn up
// later in it. A long line of another kind (a tool's huge output, a
// damaged line) then costs its reading, not its size in memory.
func (m *marked) scan(ctx context.Context, r io.Reader, fn func(no int, line []byte) error) error {
	ra, _ := r.(io.ReaderAt)
	var at int64 // where r reads from, in ReadAt's offsets
	if s, ok := r.(io.Seeker); ra != nil && ok {
		var err error
		if at, err = s.Seek(0, io.SeekCurrent); err != nil {
			ra = nil
		}
	} else {
		ra = nil
	}
	var (
		buf  = make([]byte, 0, m.block)
		no   int  // newlines before buf[0]
		skip bool // discarding the rest of a line longer than maxLine
		read = at // the offset buf ends at
		// A long line passed over (see above): where it starts, how much
		// of it was read, whether the mark is in it; buf then holds only
		// its last len(mark)-1 bytes, where a mark cut by the block
		// boundary starts.
		long             bool
		longAt, longRead int64
		longMarked       bool
	)
	keep := len(m.mark) - 1
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(buf) == cap(buf) {
			buf = append(buf[:cap(buf)], make([]byte, cap(buf))...)[:len(buf)]
		}
		n, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		eof := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !eof {
			return err
		}
		read += int64(n)
		fresh := buf[len(buf) : len(buf)+n]
		buf = buf[:len(buf)+n]
		if long {
			i := bytes.IndexByte(fresh, '\n')
			upto := len(buf)
			if i >= 0 {
				upto = len(buf) - len(fresh) + i
			}
			longMarked = longMarked || bytes.Contains(buf[:upto], m.mark)
			longRead += int64(upto - (len(buf) - len(fresh)))
			if i < 0 && !eof {
				if longRead > int64(m.maxLine) {
					// Too long to be read again: skipped as any line is.
					long, skip, buf = false, true, buf[:0]
					continue
				}
				buf = buf[:copy(buf, buf[len(buf)-min(keep, len(buf)):])]
				continue
			}
			long = false
			if longMarked && longRead <= int64(m.maxLine) {
				line := make([]byte, longRead)
				if _, err := ra.ReadAt(line, longAt); err != nil {
					return err
				}
				if err := fn(no+1, line); err != nil {
					return err
				}
			} else if longRead > int64(m.maxLine) {
				m.warn(fmt.Sprintf("line %d: longer than %d bytes, skipped", no+1, m.maxLine))
			}
			if i < 0 { // eof: the long line was the last
				return nil
			}
			no++
			buf = buf[:copy(buf, fresh[i+1:])]
			fresh = buf
		}
		if skip {
			// Only the end of the over-long line matters.
			i := bytes.IndexByte(fresh, '\n')
			if i >= 0 || eof {
				no++
				m.warn(fmt.Sprintf("line %d: longer than %d bytes, skipped", no, m.maxLine))
			}
			if i < 0 {
				if eof {
					return nil
				}
				buf = buf[:0]
				continue
			}
			skip = false
			buf = buf[:copy(buf, fresh[i+1:])]
			fresh = buf
		}
		// Whole lines end at the last newline; what follows it starts a
		// line whose end is not read yet, or is the last line of the file.
		end := 0
		if last := bytes.LastIndexByte(fresh, '\n'); last >= 0 {
			end = len(buf) - len(fresh) + last + 1
			if err := m.each(buf[:end], no, fn); err != nil {
				return err
			}
			no += bytes.Count(buf[:end], []byte{'\n'})
		}
		rest := buf[end:]
		switch {
		case len(rest) > m.maxLine:
			skip, buf = true, buf[:0]
			if eof {
				no++
				m.warn(fmt.Sprintf("line %d: longer than %d bytes, skipped", no, m.maxLine))
			}
		case eof:
			return m.each(rest, no, fn)
		case ra != nil && len(rest) >= m.block && !bytes.Contains(rest, m.mark):
			// A line longer than a block, with no mark so far: passed
			// over (see above).
			long, longAt, longRead, longMarked = true, read-int64(len(rest)), int64(len(rest)), false
			buf = buf[:copy(buf, rest[len(rest)-min(keep, len(rest)):])]
		case end > 0:
			buf = buf[:copy(buf, rest)]
		}
		if eof {
			return nil
		}
	}
}

// each calls fn with each line of lines (whole lines, the last with or
// without its newline) that holds the mark; no is the number of lines
// before them.
func (m *marked) each(lines []byte, no int, fn func(int, []byte) error) error {
	tail := m.mark[m.cut:]
	counted := 0 // the newlines of lines[:counted] are in no
	for from := 0; from < len(lines); {
		i := bytes.Index(lines[from:], tail)
		if i < 0 {
			return nil
		}
		at := from + i
		if at < m.cut || !bytes.Equal(lines[at-m.cut:at+len(tail)], m.mark) {
			from = at + 1
			continue
		}
		start := bytes.LastIndexByte(lines[:at], '\n') + 1
		stop := len(lines)
		if j := bytes.IndexByte(lines[at:], '\n'); j >= 0 {
			stop = at + j
		}
		no += bytes.Count(lines[counted:start], []byte{'\n'})
		counted = start
		if err := fn(no+1, lines[start:stop]); err != nil {
			return err
		}
		from = stop + 1
	}
	return nil
}
