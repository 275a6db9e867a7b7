package transcript

import (
	"github.com/cairn-dev/cairn/internal/filemap"
	"github.com/cairn-dev/cairn/model"
)

// mapMin is the least a load reads of a file for it to map the file
// (see mapMessage): below it copies cost little, and a load after a few
// lines were appended (a session reading its own transcript back) maps
// nothing. Tests lower it.
var mapMin int64 = 4 << 20

// mapper is implemented by sources that can map their file (fileSource).
type mapper interface {
	// mapFrom maps the file from byte off to its end; nil when it does
	// not.
	mapFrom(off int64) *filemap.Region
}

// mapMessage decodes e's message, msg, a slice of orig, the line it was
// read from, which starts at byte base of the file a maps (see
// filemap): the message and its tool results' string contents become
// slices of the mapping instead of copies (the contents are most of a
// long session's bytes, and a resume sends only the newest of them), the
// blocks' other raw fields copies in a, and the decoded message is the
// one DecodeMessage returns. The bytes decoded are orig's (the loader's
// buffer), so none of the mapping's pages is read. It changes nothing
// when the mapping does not hold the message or the message does not
// decode: the entry keeps a copy then (see keep).
//
// decoded, when set, is the message decodeMessageAt decoded from msg (its
// blocks are changed): it is not decoded again.
func (e *Entry) mapMessage(msg, orig []byte, base int64, a *arena, decoded *APIMessage) {
	mapped := a.fmap.At(base+int64(offsetIn(msg, orig)), len(msg))
	if mapped == nil {
		return
	}
	var m APIMessage
	if decoded != nil {
		m = *decoded
	} else {
		var ok bool
		var err error
		if m, ok, err = decodeMessage(e, msg, true); err != nil || !ok {
			return
		}
	}
	clone := func(b []byte) []byte {
		if !within(b, msg) {
			return b
		}
		c := a.alloc(len(b))
		copy(c, b)
		return c
	}
	for i := range m.Content {
		b := &m.Content[i]
		if b.Type == model.BlockToolResult && len(b.Content) > 0 && b.Content[0] == '"' && within(b.Content, msg) {
			j := offsetIn(b.Content, msg)
			b.Content = mapped[j : j+len(b.Content) : j+len(b.Content)]
		} else {
			b.Content = clone(b.Content)
		}
		b.Input = clone(b.Input)
		for k, v := range b.Extra {
			b.Extra[k] = clone(v)
		}
	}
	e.Message = mapped
	e.cache = &msgCache{}
	e.cache.once.Do(func() { e.cache.msg, e.cache.ok = m, true })
}

// rebase makes the raw fields of m's blocks that are slices of from, the
// bytes m was decoded from, the same slices of to, a copy of them.
func rebase(m *APIMessage, from, to []byte) {
	move := func(b []byte) []byte {
		if !within(b, from) {
			return b
		}
		j := offsetIn(b, from)
		return to[j : j+len(b) : j+len(b)]
	}
	for i := range m.Content {
		b := &m.Content[i]
		b.Content, b.Input = move(b.Content), move(b.Input)
		for k, v := range b.Extra {
			b.Extra[k] = move(v)
		}
	}
}
