package transcript

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/internal/jsonl"
	"github.com/cairn-dev/cairn/internal/jsonscan"
	"github.com/cairn-dev/cairn/internal/tokens"
)

// IndexLine is what the index pass keeps of one line of a transcript: where
// it is, the fields that place it in the conversation, and an estimate of
// what its content adds to the context. The line's bytes stay in the file
// (Index.ReadLine reads them back).
type IndexLine struct {
	Offset int64 // of the line's first byte
	Length int   // without the newline
	// Type is the line's type; "" for a blank or bad line.
	Type string
	// UUID and Parent are the line's uuid and parentUuid, set for lines of
	// the chain (see Entry.IsChain) only. Logical is a compact boundary's
	// logicalParentUuid: the conversation before the compaction.
	UUID, Parent, Logical string
	Sidechain             bool
	Boundary              bool // a compact boundary
	// Bad is set on a line that is not an entry (Index.Warnings names it).
	Bad bool
	// Tokens estimates the line's message content (user and assistant
	// lines) or attachment from its raw bytes, without decoding it: about
	// what Conversation.ContextTokens estimates for the decoded entry.
	Tokens int32
}

// Index is a one-pass index over the lines of a transcript: it reads the
// file once, a block at a time (a line longer than a block is measured,
// then read whole), and keeps per line only an IndexLine, so
// its memory is the lines' envelopes, not their bodies. It checks each line
// as much as the loader needs to reject the same lines: the structure of
// the whole line and the type of each field an Entry has, but not the
// inside of the strings it does not keep (their escapes).
type Index struct {
	src  io.ReaderAt
	size int64
	// Lines holds every line of the file, blank and bad ones included:
	// Lines[i] is line i+1.
	Lines []IndexLine
	// Warnings name each line that is not an entry, and why: the lines Load
	// names, in its words ("line N (byte X): ..."; the reason a line is not
	// valid JSON may be worded otherwise).
	Warnings []string
	// SessionID is the newest sessionId of the chain lines, as Load's.
	SessionID string

	byUUID map[string]int32
	// The newest main-chain line, sidechain line and last-prompt record
	// with a leaf: -1 when there is none.
	lastChain, lastSide, lastPrompt int
	lastPromptLeaf                  string

	scratch Entry
}

// indexBlock is how much the index pass reads at a time.
const indexBlock = 1 << 20

// NewIndex reads src (size bytes) once and indexes its lines. Damaged
// lines are kept as bad lines with a warning; only a read error or ctx
// ending stops it.
func NewIndex(ctx context.Context, src io.ReaderAt, size int64) (*Index, error) {
	x := &Index{src: src, size: size, byUUID: make(map[string]int32), lastChain: -1, lastSide: -1, lastPrompt: -1}
	limit := maxLine
	if limit <= 0 {
		limit = jsonl.MaxLineBytes
	}
	buf := make([]byte, indexBlock)
	var off int64 // of buf[0] in the file
	n := 0        // bytes of buf filled
	for off < size {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if want := min(int64(len(buf)-n), size-off-int64(n)); want > 0 {
			k, err := src.ReadAt(buf[n:n+int(want)], off+int64(n))
			n += k
			if k < int(want) {
				return nil, fmt.Errorf("read transcript at byte %d: %w", off+int64(n), cmp.Or(err, io.ErrUnexpectedEOF))
			}
		}
		eof := off+int64(n) >= size
		start := 0
		for {
			j := bytes.IndexByte(buf[start:n], '\n')
			if j < 0 {
				break
			}
			x.add(buf[start:start+j], off+int64(start), false)
			start += j + 1
		}
		if eof {
			if start < n {
				x.add(buf[start:n], off+int64(start), true)
			}
			break
		}
		if start == 0 && n == len(buf) {
			// A line longer than the buffer: its end is found first, then
			// it is read whole into a buffer of its own (the loader holds
			// a line whole too), or skipped when longer than any line may
			// be.
			end, err := x.lineEnd(off+int64(n), make([]byte, 64<<10))
			if err != nil {
				return nil, err
			}
			if end-off > int64(limit) {
				x.addLong(off, end, limit)
			} else {
				line := make([]byte, end-off)
				copy(line, buf[:n])
				if k, err := src.ReadAt(line[n:], off+int64(n)); k < len(line)-n {
					return nil, fmt.Errorf("read transcript at byte %d: %w", off+int64(n+k), cmp.Or(err, io.ErrUnexpectedEOF))
				}
				x.add(line, off, end == size)
			}
			off, n = end+1, 0
			continue
		}
		copy(buf, buf[start:n])
		off, n = off+int64(start), n-start
	}
	return x, nil
}

// lineEnd returns the offset of the first newline at or after from, or
// the file's size when there is none, reading through buf.
func (x *Index) lineEnd(from int64, buf []byte) (int64, error) {
	for from < x.size {
		want := int(min(int64(len(buf)), x.size-from))
		k, err := x.src.ReadAt(buf[:want], from)
		if k < want {
			return 0, fmt.Errorf("read transcript at byte %d: %w", from+int64(k), cmp.Or(err, io.ErrUnexpectedEOF))
		}
		if j := bytes.IndexByte(buf[:k], '\n'); j >= 0 {
			return from + int64(j), nil
		}
		from += int64(k)
	}
	return x.size, nil
}

// addLong records a line too long to read.
func (x *Index) addLong(start, end int64, limit int) {
	no := len(x.Lines) + 1
	x.Lines = append(x.Lines, IndexLine{Offset: start, Length: int(end - start), Bad: true})
	x.Warnings = append(x.Warnings, fmt.Sprintf("line %d (byte %d): longer than %d bytes, skipped", no, start, limit))
}

// add indexes one line (without its newline) that starts at off.
func (x *Index) add(line []byte, off int64, torn bool) {
	no := len(x.Lines) + 1
	x.Lines = append(x.Lines, IndexLine{Offset: off, Length: len(line)})
	il := &x.Lines[no-1]
	warn := func(format string, args ...any) {
		x.Warnings = append(x.Warnings, fmt.Sprintf("line %d (byte %d): ", no, off)+fmt.Sprintf(format, args...))
	}
	b := line
	if len(bytes.TrimSpace(b)) == 0 {
		return
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		i += bytes.LastIndexByte(b[i:], 0)
		warn("%d bytes of null bytes and damaged data skipped", i+1)
		b = b[i+1:]
		if len(bytes.TrimSpace(b)) == 0 {
			return
		}
	}
	e, msgTokens, err := x.scan(b)
	if err != nil {
		il.Bad = true
		if torn {
			warn("incomplete last line (a write was cut short), skipped")
		} else {
			warn("not a valid entry (%v), skipped", err)
		}
		return
	}
	il.Type = internType(e.Type)
	switch {
	case e.Type == TypeLastPrompt:
		if e.LeafUUID != "" {
			x.lastPrompt, x.lastPromptLeaf = no-1, strings.Clone(e.LeafUUID)
		}
		return
	case !e.IsChain():
		return
	}
	il.UUID, il.Sidechain = strings.Clone(e.UUID), e.IsSidechain
	if p, ok := x.byUUID[e.ParentUUID]; ok && e.ParentUUID != "" {
		il.Parent = x.Lines[p].UUID // most parents come first: their uuid is shared
	} else {
		il.Parent = strings.Clone(e.ParentUUID)
	}
	if e.IsCompactBoundary() {
		il.Boundary, il.Logical = true, strings.Clone(e.LogicalParentUUID)
	}
	if e.SessionID != "" && e.SessionID != x.SessionID {
		x.SessionID = strings.Clone(e.SessionID)
	}
	x.byUUID[il.UUID] = int32(no - 1) // the later copy of a uuid counts
	if e.IsSidechain {
		x.lastSide = no - 1
	} else {
		x.lastChain = no - 1
	}
	var t int64
	switch e.Type {
	case TypeUser, TypeAssistant:
		t = msgTokens
	case TypeAttachment:
		t = estimateBytes(len(e.Attachment))
	}
	il.Tokens = int32(min(t, 1<<31-1))
}

// scan reads the members of a line into x.scratch, rejecting what
// decodeEntry rejects but for the inside of strings, and estimates the
// tokens of its message content in the same pass. The entry's strings may
// alias line: what is kept is cloned.
func (x *Index) scan(line []byte) (*Entry, int64, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return nil, 0, fmt.Errorf("not a JSON object")
	}
	x.scratch = Entry{}
	e := &x.scratch
	var msgTokens int64
	err := jsonscan.LooseMembersAt(line, func(key []byte, f jsonscan.Flags, b []byte, i int) (int, error) {
		if f == 0 {
			if end, done, err := checkOnly(key[1:len(key)-1], b, i); done {
				return end, err
			}
		}
		name, err := fieldName(key, f)
		if err != nil {
			return 0, err
		}
		var end int
		if name == "message" {
			// Its content is the bulk of the line: estimated while it is
			// checked, not read twice.
			end, msgTokens, err = messageTokens(b, i)
		} else {
			end, err = jsonscan.LooseValue(b, i)
		}
		if err != nil || name == "" {
			return end, err
		}
		return end, e.setField(name, b[i:end:end])
	})
	if err != nil {
		return nil, 0, err
	}
	if e.Type == "" {
		return nil, 0, fmt.Errorf("no \"type\" field")
	}
	e.Message, e.Attachment = nullToNil(e.Message), nullToNil(e.Attachment)
	if e.Message == nil {
		msgTokens = 0
	}
	return e, msgTokens, nil
}

// checkOnly reads the value at b[i] of a member the index does not keep,
// with the plain key k, checking its type as setField does: done is false
// for a key it does not know, which the caller then reads.
func checkOnly(k, b []byte, i int) (end int, done bool, err error) {
	var want string
	switch string(k) {
	case "cwd", "version", "gitBranch", "timestamp", "userType", "entrypoint", "slug",
		"permissionMode", "promptSource", "requestId", "promptId", "agentId", "level",
		"sourceToolAssistantUUID", "lastPrompt", "customTitle":
		want = "a string"
	case "isMeta", "isCompactSummary", "isVisibleInTranscriptOnly", "isApiErrorMessage":
		want = "true or false"
	case "toolUseResult", "content", "compactMetadata", "snipMetadata":
	default:
		return 0, false, nil
	}
	end, err = jsonscan.LooseValue(b, i)
	if err != nil {
		return 0, true, err
	}
	v := b[i:end]
	switch {
	case want == "" || jsonscan.IsNull(v):
	case want == "a string" && v[0] == '"':
	case want == "true or false" && (string(v) == "true" || string(v) == "false"):
	default:
		return 0, true, fmt.Errorf("field %q: want %s, not %.20s", k, want, v)
	}
	return end, true, nil
}

// internType returns the constant for a known line type, so that lines do
// not each keep a copy of it.
func internType(t string) string {
	for _, k := range []string{TypeUser, TypeAssistant, TypeAttachment, TypeSystem, TypeLastPrompt} {
		if t == k {
			return k
		}
	}
	return strings.Clone(t)
}

// messageTokens reads the message value at b[i], checked as
// jsonscan.LooseValue checks it, and estimates its content as
// tokens.EstimateBlock estimates the decoded blocks, from the lengths of
// the encoded strings (an escape counts as the bytes it takes, so text
// with many newlines or quotes comes out a little high).
func messageTokens(b []byte, i int) (int, int64, error) {
	if b[i] != '{' {
		end, err := jsonscan.LooseValue(b, i)
		return end, 0, err
	}
	var n int64
	end, err := jsonscan.LooseObject(b, i, func(key []byte, _ jsonscan.Flags, b []byte, i int) (int, error) {
		if string(key) != `"content"` {
			return jsonscan.LooseValue(b, i)
		}
		end, t, err := contentTokens(b, i)
		n = t
		return end, err
	})
	return end, n, err
}

// estimateBytes is tokens.Estimate of n bytes.
func estimateBytes(n int) int64 {
	return int64(n+tokens.BytesPerToken-1) / tokens.BytesPerToken
}

// contentTokens reads a content value (a string or an array of blocks) at
// b[i] and estimates it.
func contentTokens(b []byte, i int) (int, int64, error) {
	switch b[i] {
	case '"':
		end, err := jsonscan.LooseString(b, i)
		return end, estimateBytes(end - i - 2), err
	case '[':
		var n int64
		end, err := jsonscan.LooseArray(b, i, func(b []byte, i int) (int, error) {
			end, t, err := blockTokens(b, i)
			n += t
			return end, err
		})
		return end, n, err
	}
	end, err := jsonscan.LooseValue(b, i)
	return end, 0, err
}

// blockTokens reads one content block at b[i] and estimates it.
func blockTokens(b []byte, i int) (int, int64, error) {
	if b[i] != '{' {
		end, err := jsonscan.LooseValue(b, i)
		return end, estimateBytes(end - i), err
	}
	var typ []byte
	var text, name, input int = -1, 0, 0
	var content int64
	end, err := jsonscan.LooseObject(b, i, func(key []byte, _ jsonscan.Flags, b []byte, i int) (int, error) {
		if string(key) == `"content"` {
			end, t, err := contentTokens(b, i)
			content = t
			return end, err
		}
		end, err := jsonscan.LooseValue(b, i)
		if err != nil {
			return 0, err
		}
		str := b[i] == '"'
		switch string(key) {
		case `"type"`:
			typ = b[i:end]
		case `"text"`, `"thinking"`:
			if str {
				text = end - i - 2
			}
		case `"name"`:
			if str {
				name = end - i - 2
			}
		case `"input"`:
			input = end - i
		}
		return end, nil
	})
	if err != nil {
		return 0, 0, err
	}
	switch string(typ) {
	case `"text"`, `"thinking"`:
		return end, estimateBytes(max(text, 0)), nil
	case `"tool_use"`:
		return end, estimateBytes(name) + estimateBytes(input), nil
	case `"tool_result"`:
		return end, content, nil
	case `"image"`, `"document"`:
		return end, 1600, nil
	}
	return end, estimateBytes(end - i), nil
}

// Line returns the index of the chain line with uuid (the later one when
// the file has two), and whether there is one.
func (x *Index) Line(uuid string) (int, bool) {
	i, ok := x.byUUID[uuid]
	return int(i), ok
}

// Leaf returns the line where the conversation ends, as Load finds it: the
// newest last-prompt record's leaf when nothing was written after it, else
// the newest main-chain line, else (a subagent's transcript) the newest
// sidechain line; -1 when the file has no chain line. A last-prompt record
// naming a line the file lacks (a crash's) is passed over without a word,
// as Load does.
func (x *Index) Leaf() int {
	if x.lastPrompt > max(x.lastChain, x.lastSide) {
		if i, ok := x.byUUID[x.lastPromptLeaf]; ok {
			return int(i)
		}
	}
	if x.lastChain >= 0 {
		return x.lastChain
	}
	return x.lastSide
}

// Chain returns the lines of the conversation that ends at leaf (a uuid;
// "" for the session's leaf, see Leaf), oldest first: parents followed back
// to the root or to the last compact boundary, which is included. A parent
// not in the file ends the chain there, and a loop ends it where it closes,
// each with a warning worded as Load words it. It follows parentUuid only:
// the preserved segments of compact boundaries, snips and the results of
// parallel tool calls off the chain are for the loader to add.
func (x *Index) Chain(leaf string) ([]int, []string, error) {
	e, warns := -1, []string(nil)
	if leaf != "" {
		i, ok := x.byUUID[leaf]
		if !ok {
			return nil, nil, fmt.Errorf("no message %q in this session", leaf)
		}
		e = int(i)
	} else {
		e = x.Leaf()
	}
	if e < 0 {
		return nil, warns, nil
	}
	if l := &x.Lines[e]; l.Boundary && l.Logical != "" {
		if before, ok := x.byUUID[l.Logical]; ok {
			warns = append(warns, fmt.Sprintf("compact boundary %s has no summary after it; resuming from before that compaction", l.UUID))
			e = int(before)
		}
	}
	seen := make([]uint64, (len(x.Lines)+63)/64)
	var chain []int
	for {
		l := &x.Lines[e]
		if seen[e/64]&(1<<(e%64)) != 0 {
			warns = append(warns, fmt.Sprintf("entry %s: its parents form a loop; the conversation starts after it", l.UUID))
			break
		}
		seen[e/64] |= 1 << (e % 64)
		chain = append(chain, e)
		if l.Boundary || l.Parent == "" {
			break
		}
		p, ok := x.byUUID[l.Parent]
		if !ok {
			warns = append(warns, fmt.Sprintf("entry %s: parent %s is not in the file; the conversation starts at %s", l.UUID, l.Parent, l.UUID))
			break
		}
		e = int(p)
	}
	slices.Reverse(chain)
	return chain, warns, nil
}

// ReadLine reads line i's bytes (without the newline) back from the
// file into buf, grown if needed, and returns them.
func (x *Index) ReadLine(i int, buf []byte) ([]byte, error) {
	l := x.Lines[i]
	buf = slices.Grow(buf[:0], l.Length)[:l.Length]
	if k, err := x.src.ReadAt(buf, l.Offset); k < l.Length {
		return nil, fmt.Errorf("read line %d at byte %d: %w", i+1, l.Offset, err)
	}
	return buf, nil
}
