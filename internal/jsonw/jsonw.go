// Package jsonw writes JSON the way cairn stores and sends it: object keys
// in a fixed order, and strings escaped as JavaScript's JSON.stringify
// escapes them (no \u003c for "<"), so bytes match Claude Code's files and
// stay stable from one request to the next.
package jsonw

import (
	"bytes"
	"encoding/json"
	"slices"
)

// String encodes s as a JSON string without HTML escaping.
func String(s string) []byte {
	if plain(s) {
		b := make([]byte, 0, len(s)+2)
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// plain reports whether s is printable ASCII without quotes or
// backslashes: its JSON encoding is s between quotes.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
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
	o.buf = append(o.buf, String(k)...)
	o.buf = append(o.buf, ':')
}

// Str adds a string field.
func (o *Object) Str(k, v string) { o.key(k); o.buf = append(o.buf, String(v)...) }

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
func (o *Object) Raw(k string, v json.RawMessage) {
	o.key(k)
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		o.buf = append(o.buf, "null"...)
		return
	}
	o.buf = append(o.buf, b.Bytes()...)
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

// Bytes returns the encoded object.
func (o *Object) Bytes() []byte {
	if len(o.buf) == 0 {
		return []byte("{}")
	}
	return append(slices.Clip(o.buf), '}')
}
