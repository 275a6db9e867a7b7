package transcript

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// MaxLineBytes bounds the memory one line may take while reading. A longer
// line is skipped with a warning (the file itself is left as it is).
const MaxLineBytes = 64 << 20

// backwardBlock is how much the backward scanner reads at a time.
const backwardBlock = 256 << 10

// rawLine is one line of a transcript file, without its newline.
type rawLine struct {
	Offset int64 // byte offset of the line's first byte
	No     int   // 1-based line number; 0 when scanning backward
	Bytes  []byte
	// Torn is set on a last line with no newline (a write cut short).
	Torn bool
}

func (l rawLine) where() string {
	if l.No > 0 {
		return fmt.Sprintf("line %d", l.No)
	}
	return fmt.Sprintf("the line at byte %d", l.Offset)
}

// errStop ends a scan early without error.
var errStop = errors.New("stop")

// scanForward calls fn for every line of r in order. Lines longer than
// MaxLineBytes are reported through warn and skipped without buffering them.
// The slice passed to fn is only valid during the call.
func scanForward(r io.Reader, warn func(string), fn func(rawLine) error) error {
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
				if len(long) > MaxLineBytes {
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
			warn(fmt.Sprintf("line %d: longer than %d bytes, skipped", no, MaxLineBytes))
		default:
			if ferr := fn(rawLine{Offset: start, No: no, Bytes: bytes.TrimSuffix(line, []byte("\n")), Torn: torn}); ferr != nil {
				if ferr == errStop {
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

// backwardScanner yields the lines of a file from the last to the first,
// reading blocks from the end. It keeps at most one block plus one line in
// memory.
type backwardScanner struct {
	r     io.ReaderAt
	pos   int64  // bytes before pos are not read yet
	carry []byte // the partial line that starts before pos
	lines []rawLine
	warn  func(string)
	block int64 // bytes to read at a time
	first bool  // the next line yielded is the file's last line
	skip  bool // discarding a line longer than MaxLineBytes
}

func newBackwardScanner(r io.ReaderAt, size int64, warn func(string)) *backwardScanner {
	return &backwardScanner{r: r, pos: size, warn: warn, first: true, block: backwardBlock}
}

// Offset reports the offset of the earliest byte read so far.
func (s *backwardScanner) Offset() int64 { return s.pos }

// Next returns the previous line; ok is false at the start of the file.
func (s *backwardScanner) Next() (rawLine, bool, error) {
	for len(s.lines) == 0 {
		if s.pos == 0 && s.carry == nil {
			return rawLine{}, false, nil
		}
		if err := s.fill(); err != nil {
			return rawLine{}, false, err
		}
	}
	l := s.lines[0]
	s.lines = s.lines[1:]
	return l, true, nil
}

// fill reads the block before pos and splits it into lines (last first).
func (s *backwardScanner) fill() error {
	if s.pos == 0 {
		// What remains is the file's first line.
		if !s.skip {
			s.emit(0, s.carry)
		}
		s.carry, s.skip = nil, false
		return nil
	}
	// Read at least as much as the partial line already held, so a long
	// line costs linear time, not quadratic.
	n := max(s.block, int64(len(s.carry)))
	if n > s.pos {
		n = s.pos
	}
	start := s.pos - n
	buf := make([]byte, n, n+int64(len(s.carry)))
	if _, err := s.r.ReadAt(buf, start); err != nil && err != io.EOF {
		return err
	}
	s.pos = start
	buf = append(buf, s.carry...)
	s.carry = nil
	// Split from the end; the part before the first newline continues into
	// the previous block.
	end := len(buf)
	for {
		i := bytes.LastIndexByte(buf[:end], '\n')
		if i < 0 {
			break
		}
		if s.skip {
			s.skip = false
		} else if end > i+1 || !s.first {
			s.emit(start+int64(i+1), buf[i+1:end])
		} else {
			s.first = false // the file ends with a newline
		}
		end = i
	}
	if s.skip {
		return nil
	}
	if end > MaxLineBytes {
		s.warn(fmt.Sprintf("the line ending at byte %d: longer than %d bytes, skipped", start+int64(end), MaxLineBytes))
		s.skip = true
		return nil
	}
	s.carry = buf[:end:end]
	if start == 0 {
		return s.fill()
	}
	return nil
}

func (s *backwardScanner) emit(off int64, b []byte) {
	torn := s.first
	s.first = false
	s.lines = append(s.lines, rawLine{Offset: off, Bytes: b, Torn: torn})
}
