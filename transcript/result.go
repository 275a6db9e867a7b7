package transcript

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"os"

	"github.com/cairn-dev/cairn/internal/fsfault"
	"github.com/cairn-dev/cairn/internal/jsonscan"
)

// hashSeed seeds the hashes that stand for bytes a load does not keep:
// lines the LineCache compares, results left in their file. The hashes
// live in this process only.
var hashSeed = maphash.MakeSeed()

// fileRef names a transcript file so that it can be opened again after
// its Source is closed: its path (absolute) and identity (device and
// inode) when it was opened.
type fileRef struct {
	path, id string
}

// reopener is implemented by sources whose file can be opened again
// (fileSource); a load from any other source keeps every result.
type reopener interface {
	fileRef() *fileRef
}

// fileResult is a toolUseResult Load left in the file: where it is, how
// long, the hash of its bytes, and its top-level keys as an object with
// null values in the entry's body (nil when it is not an object).
type fileResult struct {
	file *fileRef
	off  int64
	n    int
	sum  uint64
	keys []byte
}

// HasResult reports whether the entry has a toolUseResult, in memory or
// left in its file.
func (e *Entry) HasResult() bool { return len(e.ToolUseResult) > 0 || e.res != nil }

// Result returns the entry's toolUseResult: ToolUseResult when set, else
// the result Load left in the file, read back from it and checked
// strictly (it must be the same bytes, in the same file, as valid JSON).
// It is nil when the entry has none. A file replaced since the load (not
// the same device and inode: a copy put back, a restore) or changed in
// place gives an error that says so. The returned bytes are the caller's.
func (e *Entry) Result() (json.RawMessage, error) {
	if e.ToolUseResult != nil || e.res == nil {
		return e.ToolUseResult, nil
	}
	b, err := e.res.read()
	if err != nil {
		return nil, fmt.Errorf("toolUseResult of %s entry %s: %w", e.Type, e.UUID, err)
	}
	return b, nil
}

func (r *fileResult) read() ([]byte, error) {
	path := r.file.path
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read it back from the transcript: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read it back from the transcript: %w", err)
	}
	if fileIdentity(st) != r.file.id {
		return nil, fmt.Errorf("read it back from %s: %w", path, fsfault.ErrReplaced)
	}
	buf := make([]byte, r.n)
	if k, err := f.ReadAt(buf, r.off); k < len(buf) {
		return nil, fmt.Errorf("read it back from %s at byte %d: %w (the file is shorter than when it was read)", path, r.off, err)
	}
	if maphash.Bytes(hashSeed, buf) != r.sum {
		return nil, fmt.Errorf("read it back from %s at byte %d: the file changed there since it was read", path, r.off)
	}
	if !jsonscan.Valid(buf) {
		return nil, fmt.Errorf("read it back from %s at byte %d: not valid JSON", path, r.off)
	}
	return buf, nil
}
