package filehistory

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/cairn-dev/cairn/internal/jsonl"
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
	// then each hit is checked against the whole of mark (find).
	mark []byte
	cut  int
	find *jsonl.Finder
	hits []int // each's, used again
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
// A line is passed over, a block at a time and not kept, once it is
// longer than maxLine (it is skipped with a warning, whatever it holds),
// or once it is longer than a block with no mark in it so far, when r is
// an io.ReaderAt that can tell where it is reading (an io.Seeker): such a
// line is read again from its start should the mark turn up later in it.
// A long line of another kind (a tool's huge output, a damaged line) then
// costs its reading, not its size in memory.
func (m *marked) scan(ctx context.Context, r io.Reader, fn func(no int, line []byte) error) error {
	m.find = jsonl.NewFinderFrom(m.mark, m.cut)
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
		no   int   // newlines before buf[0]
		read = at  // the offset buf ends at
		pass *over // the line being passed over, if one is
	)
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
		if pass != nil {
			i := bytes.IndexByte(fresh, '\n')
			if !pass.add(buf, len(buf)-len(fresh), i, m) && !eof {
				buf = buf[:copy(buf, pass.tail(buf))]
				continue
			}
			if err := pass.end(no+1, ra, m, fn); err != nil {
				return err
			}
			pass = nil
			if i < 0 { // eof: the line passed over was the last
				return nil
			}
			no++
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
		case len(rest) > m.maxLine || ra != nil && len(rest) >= m.block && !m.find.In(rest):
			pass = &over{at: read - int64(len(rest)), n: int64(len(rest)), again: ra != nil && len(rest) <= m.maxLine, keep: len(m.mark) - 1}
			if eof {
				return pass.end(no+1, ra, m, fn)
			}
			buf = buf[:copy(buf, pass.tail(rest))]
		case eof:
			return m.each(rest, no, fn)
		case end > 0:
			buf = buf[:copy(buf, rest)]
		}
		if eof {
			return nil
		}
	}
}

// over is a line scan passes over: where it starts, how much of it was
// read, whether it may be read again (it fits maxLine, and the reader can)
// and whether the mark is in it; keep is the mark's length less one.
type over struct {
	at, n         int64
	again, marked bool
	keep          int
}

// add takes the part of the line in buf[from:], up to the newline at
// fresh index i (-1: none), and reports whether the line ended. The mark
// is looked for from buf's start, which holds the line's bytes kept
// before (see tail).
func (o *over) add(buf []byte, from, i int, m *marked) bool {
	upto := len(buf)
	if i >= 0 {
		upto = from + i
	}
	o.n += int64(upto - from)
	o.again = o.again && o.n <= int64(m.maxLine)
	o.marked = o.marked || o.again && m.find.In(buf[:upto])
	return i >= 0
}

// tail returns what of b, the line's bytes read so far, is kept for the
// next block: where a mark cut by the block's end starts, or nothing.
func (o *over) tail(b []byte) []byte {
	if !o.again {
		return nil
	}
	return b[len(b)-min(o.keep, len(b)):]
}

// end finishes the line, numbered no: skipped with a warning when longer
// than maxLine, else read again and given to fn when it holds the mark.
func (o *over) end(no int, ra io.ReaderAt, m *marked, fn func(int, []byte) error) error {
	switch {
	case o.n > int64(m.maxLine):
		m.warn(fmt.Sprintf("line %d: longer than %d bytes, skipped", no, m.maxLine))
	case o.marked:
		line := make([]byte, o.n)
		if _, err := ra.ReadAt(line, o.at); err != nil {
			return err
		}
		return fn(no, line)
	}
	return nil
}

// each calls fn with each line of lines (whole lines, the last with or
// without its newline) that holds the mark; no is the number of lines
// before them.
func (m *marked) each(lines []byte, no int, fn func(int, []byte) error) error {
	counted := 0 // the newlines of lines[:counted] are in no
	from := 0    // where the next line starts
	m.hits = m.find.All(lines, m.hits[:0])
	for _, at := range m.hits {
		if at < from {
			continue // another mark in a line given already
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
