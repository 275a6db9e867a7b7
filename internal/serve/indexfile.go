package serve

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// An index kept in Index.Dir is one file a session, <session>.idx:
// indexMagic, the file's identity (a uint16 length, then its bytes), end,
// the last line's offset, length and hash, the number of entries, then
// each entry's id hash, offset and length — every number a little-endian
// 64-bit word but the two lengths named — and a CRC-32 of all before it.
// It is written to a temporary file and renamed into place, so a reader
// sees a whole one; one that fails its checks is ignored (and replaced by
// the next build).
const indexMagic = "cairn-serve-index 1\n"

// indexPath is where the index of session is kept, "" when it is not.
func (x *Index) indexPath(session string) string {
	if x.Dir == "" || session == "" || strings.ContainsAny(session, `/\`) || strings.HasPrefix(session, ".") {
		return ""
	}
	return filepath.Join(x.Dir, session+".idx")
}

// save writes fi to Dir; fi.mu is held.
func (x *Index) save(fi *fileIndex) error {
	path := x.indexPath(fi.session)
	if path == "" || len(fi.id) > 1<<16-1 {
		return nil
	}
	b := make([]byte, 0, len(indexMagic)+2+len(fi.id)+4*8+4+len(fi.spans)*24+4)
	b = append(b, indexMagic...)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(fi.id)))
	b = append(b, fi.id...)
	for _, v := range []int64{fi.end, fi.last.off, fi.last.n, int64(fi.last.hash)} {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(fi.spans)))
	for h, sp := range fi.spans {
		b = binary.LittleEndian.AppendUint64(b, h)
		b = binary.LittleEndian.AppendUint64(b, uint64(sp.off))
		b = binary.LittleEndian.AppendUint64(b, uint64(sp.n))
	}
	b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	if err := os.MkdirAll(x.Dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(x.Dir, "."+fi.session+".*.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// staleAfter is how old a temporary file in Dir must be to be taken for
// one a run stopped while saving left behind: a save writes its file in
// far less, so one this old is being written by no one.
const staleAfter = time.Minute

// removeStale removes the temporary files in Dir older than staleAfter.
func (x *Index) removeStale(now time.Time) {
	names, _ := filepath.Glob(filepath.Join(x.Dir, ".*.tmp"))
	for _, name := range names {
		if st, err := os.Lstat(name); err == nil && st.Mode().IsRegular() && now.Sub(st.ModTime()) > staleAfter {
			os.Remove(name)
		}
	}
}

var errBadIndex = errors.New("not a whole index")

// load reads the index of session kept in Dir, nil when there is none
// or it is not whole.
func (x *Index) load(session string) *fileIndex {
	path := x.indexPath(session)
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	fi, err := decodeIndex(session, b)
	if err != nil {
		return nil
	}
	return fi
}

func decodeIndex(session string, b []byte) (*fileIndex, error) {
	if len(b) < len(indexMagic)+2+4*8+4+4 || !bytes.HasPrefix(b, []byte(indexMagic)) {
		return nil, errBadIndex
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, errBadIndex
	}
	r := body[len(indexMagic):]
	n := int(binary.LittleEndian.Uint16(r))
	r = r[2:]
	if len(r) < n+4*8+4 {
		return nil, errBadIndex
	}
	fi := &fileIndex{session: session, id: string(r[:n])}
	r = r[n:]
	word := func() int64 { v := int64(binary.LittleEndian.Uint64(r)); r = r[8:]; return v }
	fi.end, fi.last.off, fi.last.n, fi.last.hash = word(), word(), word(), uint64(word())
	count := int(binary.LittleEndian.Uint32(r))
	r = r[4:]
	if len(r) != count*24 || fi.end < 0 {
		return nil, errBadIndex
	}
	fi.spans = make(map[uint64]span, count)
	for range count {
		h := uint64(word())
		fi.spans[h] = span{off: word(), n: word()}
	}
	fi.saved = fi.end
	return fi, nil
}
