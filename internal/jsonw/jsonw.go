// Package jsonw writes JSON the way cairn stores and sends it: object keys
// in a fixed order, and strings escaped as JavaScript's JSON.stringify
// escapes them (no \u003c for "<"), so bytes match Claude Code's files and
// stay stable from one request to the next.
package jsonw

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"

	"github.com/cairn-dev/cairn/internal/jsonscan"
)

// String encodes s as a JSON string without HTML escaping.
func String(s string) []byte {
	return AppendString(make([]byte, 0, len(s)+2), s)
}

// AppendString appends the encoding of s to b, byte for byte what
// encoding/json writes with HTML escaping off: \b \f \n \r \t and \u00xx
// for control characters, \ufffd for invalid UTF-8, \u2028 and \u2029
// escaped.
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Marshal encodes v like json.Marshal but without HTML escaping.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Object builds a JSON object with keys in the order they are added.
// The zero value is an empty object.
type Object struct{ buf []byte }

func (o *Object) key(k string) {
	if len(o.buf) == 0 {
		o.buf = append(o.buf, '{')
	} else {
		o.buf = append(o.buf, ',')
	}
	o.buf = AppendString(o.buf, k)
	o.buf = append(o.buf, ':')
}

// Str adds a string field.
func (o *Object) Str(k, v string) { o.key(k); o.buf = AppendString(o.buf, v) }

// Null adds a null field.
func (o *Object) Null(k string) { o.key(k); o.buf = append(o.buf, "null"...) }

// Bool adds a boolean field.
func (o *Object) Bool(k string, v bool) {
	o.key(k)
	if v {
		o.buf = append(o.buf, "true"...)
	} else {
		o.buf = append(o.buf, "false"...)
	}
}

// Raw adds a field holding raw JSON, compacted; invalid JSON becomes null.
func (o *Object) Raw(k string, v json.RawMessage) { o.key(k); o.buf = AppendRaw(o.buf, v) }

// AppendRaw appends raw JSON v to b, compacted; invalid JSON becomes null.
// A value that is compact already (the usual case) is checked in one pass
// and copied.
func AppendRaw(b []byte, v json.RawMessage) []byte {
	if len(v) > 0 && v[0] == '"' {
		// A string literal, most of what a request carries (tool results):
		// reading it checks it, and nothing outside it can be white space.
		if end, _, err := jsonscan.String(v, 0); err == nil && end == len(v) {
			return append(b, v...)
		}
	} else if jsonscan.Compact(v) {
		return append(b, v...)
	}
	var c bytes.Buffer
	if json.Compact(&c, v) != nil {
		return append(b, "null"...)
	}
	return append(b, c.Bytes()...)
}

// OptStr adds a string field unless v is empty.
func (o *Object) OptStr(k, v string) {
	if v != "" {
		o.Str(k, v)
	}
}

// OptRaw adds a raw field unless v is empty.
func (o *Object) OptRaw(k string, v json.RawMessage) {
	if len(v) > 0 {
		o.Raw(k, v)
	}
}

// OptBool adds a boolean field when v is true.
func (o *Object) OptBool(k string, v bool) {
	if v {
		o.Bool(k, v)
	}
}

// Sorted adds the fields of m in key order, skipping those skip reports.
func (o *Object) Sorted(m map[string]json.RawMessage, skip func(string) bool) {
	keys := make([]string, 0, len(m))
	for k := range m {
		if skip == nil || !skip(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		o.Raw(k, m[k])
	}
}

// Bytes returns the encoded object, in the buffer the object was built in
// (not a copy of it). Fields added after go to a new buffer: what Bytes
// returned does not change.
func (o *Object) Bytes() []byte {
	if len(o.buf) == 0 {
		return []byte("{}")
	}
	b := append(o.buf, '}')
	o.buf = b[: len(b)-1 : len(b)-1]
	return slices.Clip(b)
}
