package cli

import (
	"bufio"
	"io"

	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/transcript"
)

// jsonStream writes one JSON document piece by piece, each value encoded
// as writeJSON encodes it, so a document as large as a session (the
// messages of `sessions show --json`, the entries of `sessions export
// --format json`) is never held whole, nor encoded twice. The first error
// sticks; flush reports it.
type jsonStream struct {
	w   *bufio.Writer
	err error
}

func newJSONStream(w io.Writer) *jsonStream {
	return &jsonStream{w: bufio.NewWriterSize(w, 256<<10)}
}

// raw writes JSON text as it is: punctuation and keys.
func (s *jsonStream) raw(text string) {
	if s.err == nil {
		_, s.err = s.w.WriteString(text)
	}
}

// value writes v encoded.
func (s *jsonStream) value(v any) {
	if s.err != nil {
		return
	}
	b, err := jsonw.Marshal(v)
	if err != nil {
		s.err = err
		return
	}
	_, s.err = s.w.Write(b)
}

// compact writes the encoding a MarshalJSON returned, as it is. It is
// for the types whose encoding is compact JSON already (those built with
// jsonw.Object: model.Message, transcript.Entry), which value would only
// check and copy again through encoding/json: the same bytes, at about
// twice the cost.
func (s *jsonStream) compact(b []byte, err error) {
	if s.err != nil {
		return
	}
	if err != nil {
		s.err = err
		return
	}
	_, s.err = s.w.Write(b)
}

// list writes a JSON array of n elements, elem(i) writing element i.
func (s *jsonStream) list(n int, elem func(i int)) {
	s.raw("[")
	for i := 0; i < n && s.err == nil; i++ {
		if i > 0 {
			s.raw(",")
		}
		elem(i)
	}
	s.raw("]")
}

// flush writes what is buffered and reports the first error.
func (s *jsonStream) flush() error {
	if s.err != nil {
		return s.err
	}
	return s.w.Flush()
}

// writeViewJSON writes the document of `sessions show --json`,
// {"sessionId","messages","warnings"}, a message at a time.
func writeViewJSON(w io.Writer, sessionID string, msgs []model.Message, warnings []string) error {
	s := newJSONStream(w)
	s.raw(`{"sessionId":`)
	s.value(sessionID)
	s.raw(`,"messages":`)
	s.list(len(msgs), func(i int) { s.compact(msgs[i].MarshalJSON()) })
	s.raw(`,"warnings":`)
	s.value(warnings)
	s.raw("}\n")
	return s.flush()
}

// writeEntriesJSON writes the document of `sessions export --format
// json`, {"sessionId","entries"}, an entry at a time.
func writeEntriesJSON(w io.Writer, sessionID string, entries []*transcript.Entry) error {
	s := newJSONStream(w)
	s.raw(`{"sessionId":`)
	s.value(sessionID)
	s.raw(`,"entries":`)
	s.list(len(entries), func(i int) { s.compact(entries[i].MarshalJSON()) })
	s.raw("}\n")
	return s.flush()
}
