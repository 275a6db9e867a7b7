package gen

import (
	"strconv"

	"github.com/cairn-dev/cairn/internal/jsonw"
)

// enc builds one JSON value with keys in the order they are added. Strings
// are escaped as JavaScript's JSON.stringify escapes them.
type enc struct{ b []byte }

// sep writes the comma before a member unless it is the first.
func (e *enc) sep() {
	if n := len(e.b); n > 0 {
		switch e.b[n-1] {
		case '{', '[', ':':
		default:
			e.b = append(e.b, ',')
		}
	}
}

func (e *enc) key(k string) {
	e.sep()
	e.b = append(e.b, '"')
	e.b = append(e.b, k...)
	e.b = append(e.b, '"', ':')
}

func (e *enc) Open()                  { e.sep(); e.b = append(e.b, '{') }
func (e *enc) Obj(k string)           { e.key(k); e.b = append(e.b, '{') }
func (e *enc) End()                   { e.b = append(e.b, '}') }
func (e *enc) Arr(k string)           { e.key(k); e.b = append(e.b, '[') }
func (e *enc) EndArr()                { e.b = append(e.b, ']') }
func (e *enc) Str(k, v string)        { e.key(k); e.b = appendString(e.b, v) }
func (e *enc) Null(k string)          { e.key(k); e.b = append(e.b, "null"...) }
func (e *enc) Int(k string, v int64)  { e.key(k); e.b = strconv.AppendInt(e.b, v, 10) }
func (e *enc) Raw(k string, v []byte) { e.key(k); e.b = append(e.b, v...) }
func (e *enc) Elem(v string)          { e.sep(); e.b = appendString(e.b, v) }
func (e *enc) RawElem(v []byte)       { e.sep(); e.b = append(e.b, v...) }
func (e *enc) Bool(k string, v bool)  { e.key(k); e.b = strconv.AppendBool(e.b, v) }

// appendString appends s as a JSON string literal, as transcripts write
// it.
func appendString(b []byte, s string) []byte { return jsonw.AppendString(b, s) }

// jsonString encodes s as a JSON string.
func jsonString(s string) []byte { return appendString(nil, s) }
