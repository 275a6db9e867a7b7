// Package jsonscan reads JSON without decoding it: it finds the members of
// an object and the elements of an array as slices of the input, checking
// the syntax as strictly as encoding/json does, in one pass and without
// allocating. Callers decode only the values they need and keep the rest as
// raw bytes (json.RawMessage) that alias the input.
//
// Slices it returns have their capacity cut to their length, so appending
// to one never writes over the input that follows it.
package jsonscan

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

// SyntaxError says where the input stops being JSON.
type SyntaxError struct {
	Offset int
	msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%s at offset %d", e.msg, e.Offset) }

func syntaxErr(off int, format string, args ...any) error {
	return &SyntaxError{Offset: off, msg: fmt.Sprintf(format, args...)}
}

// Character classes of bytes inside a string.
const (
	plainByte   = 0
	specialByte = 1 // '"', '\\' or a control character
	highByte    = 2 // part of a multi-byte UTF-8 sequence
)

var strClass = func() (t [256]byte) {
	for c := range 0x20 {
		t[c] = specialByte
	}
	t['"'], t['\\'] = specialByte, specialByte
	for c := 0x80; c < 256; c++ {
		t[c] = highByte
	}
	return t
}()

// Flags describe a string literal.
type Flags uint8

const (
	// Escaped is set when the literal holds backslash escapes.
	Escaped Flags = 1 << iota
	// NonASCII is set when the literal holds bytes of 0x80 and above.
	NonASCII
)

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// SkipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// String reads the string literal starting at b[i] (a '"') and returns the
// index just past its closing quote.
func String(b []byte, i int) (end int, f Flags, err error) {
	j := i + 1
	for {
		var high bool
		j, high = plainRun(b, j)
		if high {
			f |= NonASCII
		}
		if j >= len(b) {
			return 0, 0, syntaxErr(len(b), "unterminated string")
		}
		switch c := b[j]; {
		case c == '"':
			return j + 1, f, nil
		case c == '\\':
			f |= Escaped
			if j+1 >= len(b) {
				return 0, 0, syntaxErr(len(b), "unterminated string")
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(b) {
					return 0, 0, syntaxErr(len(b), "unterminated string")
				}
				for k := j + 2; k < j+6; k++ {
					if !isHex(b[k]) {
						return 0, 0, syntaxErr(k, "invalid character %q in \\u escape", b[k])
					}
				}
				j += 6
			default:
				return 0, 0, syntaxErr(j+1, "invalid escape \\%c", b[j+1])
			}
		default: // a control character: plainRun stops at nothing else
			return 0, 0, syntaxErr(j, "control character %#x in string", c)
		}
	}
}

// plainRun returns the index of the first byte at or after j that is not
// plain in a string (see plainWord), or len(b), and whether the bytes it
// passed hold one of 0x80 or above. It reads eight bytes at a time and
// finds that byte from the word's mask, not byte by byte: between escapes
// (a line break in a file's text is one), the run is often shorter than a
// few words. The bytes of a multi-byte UTF-8 sequence are plain: text in
// another script than Latin is read at the speed of ASCII (it was read a
// byte at a time, which made a transcript with a quarter of its bytes in
// Chinese cost a third more to load).
func plainRun(b []byte, j int) (int, bool) {
	var seen uint64 // the words passed whole, or'ed
	for ; j+16 <= len(b); j += 16 {
		v1, v2 := binary.LittleEndian.Uint64(b[j:]), binary.LittleEndian.Uint64(b[j+8:])
		m1, m2 := specialBytes(v1), specialBytes(v2)
		if m1|m2 != 0 {
			if m1 != 0 {
				return j + bits.TrailingZeros64(m1)>>3, seen&highBits|v1&before(m1) != 0
			}
			return j + 8 + bits.TrailingZeros64(m2)>>3, (seen|v1)&highBits|v2&before(m2) != 0
		}
		seen |= v1 | v2
	}
	high := seen & highBits
	if j+8 <= len(b) {
		v := binary.LittleEndian.Uint64(b[j:])
		if m := specialBytes(v); m != 0 {
			return j + bits.TrailingZeros64(m)>>3, high|v&before(m) != 0
		}
		high |= v & highBits
		j += 8
	}
	for ; j < len(b); j++ {
		c := strClass[b[j]]
		if c == specialByte {
			break
		}
		high |= uint64(c & highByte)
	}
	return j, high != 0
}

// before returns the high bits of the bytes of a word that come before
// the first byte m marks (m is not 0; see specialBytes).
func before(m uint64) uint64 { return (m&-m - 1) & highBits }

const (
	ones        = 0x0101010101010101
	highBits    = 0x8080808080808080
	quotes      = '"' * ones
	backslashes = '\\' * ones
)

// plainWord reports whether each of the eight bytes of v is plain in a
// string: not a control character, a quote or a backslash (a byte of
// 0x80 or above, part of a multi-byte UTF-8 sequence, is plain).
func plainWord(v uint64) bool { return specialBytes(v) == 0 }

// specialBytes returns the high bits of the bytes of v (little-endian)
// that are not plain in a string (see plainWord). It works on the low
// seven bits of each byte, so no sum carries into the next byte: adding
// 0x60 sets the high bit exactly when they are 0x20 or above, and adding
// 0x7f to them xor'ed with c exactly when they are not c (a quote or a
// backslash); a byte whose own high bit is set is plain whatever its low
// bits are.
func specialBytes(v uint64) uint64 {
	x := v &^ highBits
	t := (x + 0x60*ones) & ((x ^ quotes) + 0x7f*ones) & ((x ^ backslashes) + 0x7f*ones)
	return ^t &^ v & highBits
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// Value reads the JSON value starting at b[i] (no white space before it)
// and returns the index just past it.
func Value(b []byte, i int) (int, error) { return value(b, i, 0) }

// MemberValue is Value for the value of a member of a top-level object:
// its nesting is counted from the object's, as Members counts it.
func MemberValue(b []byte, i int) (int, error) { return value(b, i, 1) }

// CheckedValue is Value for a value nested depth deep, as Members
// checks it: 1 for a member of the top-level object (MemberValue), 2 for
// a member of an object that is such a member, and so on. With
// CheckedObject and CheckedArray, a caller that decodes a value checks it
// in the same pass, instead of checking the whole input first and reading
// it again.
func CheckedValue(b []byte, i, depth int) (int, error) { return value(b, i, depth) }

// CheckedObject reads the object that starts at b[i], as Members checks an
// object nested depth deep (the top-level one is at 1; a value
// CheckedValue is given at depth d that is an object is at d+1): its
// keys and structure are checked, and value is called at the start of
// each member's value, which it must check too (with CheckedValue at
// depth, or CheckedObject or CheckedArray at depth+1). It returns the
// index just past the object.
func CheckedObject(b []byte, i, depth int, value ValueAtFunc) (int, error) {
	if depth > maxDepth {
		return 0, syntaxErr(i, "exceeded max depth")
	}
	return objectAt(b, i, true, value)
}

// CheckedArray is CheckedObject for an array: elem is called at the start
// of each element, which it must check (at depth).
func CheckedArray(b []byte, i, depth int, elem func(b []byte, i int) (int, error)) (int, error) {
	if depth > maxDepth {
		return 0, syntaxErr(i, "exceeded max depth")
	}
	return LooseArray(b, i, elem)
}

func value(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return 0, syntaxErr(i, "unexpected end of JSON input")
	}
	switch c := b[i]; {
	case c == '"':
		end, _, err := String(b, i)
		return end, err
	case c == '{':
		if depth >= maxDepth {
			return 0, syntaxErr(i, "exceeded max depth")
		}
		return object(b, i, depth+1, nil)
	case c == '[':
		if depth >= maxDepth {
			return 0, syntaxErr(i, "exceeded max depth")
		}
		return array(b, i, depth+1, nil)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || '0' <= c && c <= '9':
		return number(b, i)
	default:
		return 0, syntaxErr(i, "invalid character %q looking for beginning of value", c)
	}
}

func literal(b []byte, i int, word string) (int, error) {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return 0, syntaxErr(i, "invalid literal, want %s", word)
	}
	return i + len(word), nil
}

func number(b []byte, i int) (int, error) {
	start := i
	if b[i] == '-' {
		i++
	}
	digits := func() bool {
		k := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i > k
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return 0, syntaxErr(i, "invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return 0, syntaxErr(i, "invalid number: no digits after the point")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return 0, syntaxErr(i, "invalid number: no digits in the exponent")
		}
	}
	if i == start {
		return 0, syntaxErr(i, "invalid number")
	}
	return i, nil
}

// MemberFunc receives one member of an object: its key as the raw string
// literal (quotes included), the key's flags, and the value's bytes.
type MemberFunc func(key []byte, f Flags, val []byte) error

// object and array read the value at b[i] as Members and Elements check
// it, nested depth deep, calling fn (when not nil) with each member or
// element: the loops are LooseObject's and LooseArray's, with keys and
// values read strictly.
func object(b []byte, i, depth int, fn MemberFunc) (int, error) {
	return objectAt(b, i, true, func(key []byte, f Flags, b []byte, i int) (int, error) {
		end, err := value(b, i, depth)
		if err != nil || fn == nil {
			return end, err
		}
		return end, fn(key, f, b[i:end:end])
	})
}

func array(b []byte, i, depth int, fn func([]byte) error) (int, error) {
	return LooseArray(b, i, func(b []byte, i int) (int, error) {
		end, err := value(b, i, depth)
		if err != nil || fn == nil {
			return end, err
		}
		return end, fn(b[i:end:end])
	})
}

// ErrNotObject is returned by Members for a value that is not an object.
var ErrNotObject = errors.New("not a JSON object")

// ErrNotArray is returned by Elements for a value that is not an array.
var ErrNotArray = errors.New("not a JSON array")

// Members calls fn for each member of the object b holds (white space
// around it allowed), in order. It checks the whole of b: anything after
// the object but white space is an error, and so is invalid JSON anywhere
// in it, even in values fn is not interested in.
func Members(b []byte, fn MemberFunc) error {
	i := SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return ErrNotObject
	}
	end, err := object(b, i, 1, fn)
	if err != nil {
		return err
	}
	if SkipSpace(b, end) != len(b) {
		return syntaxErr(end, "invalid character after top-level value")
	}
	return nil
}

// Elements calls fn for each element of the array b holds, checked as
// Members checks an object.
func Elements(b []byte, fn func(val []byte) error) error {
	i := SkipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return ErrNotArray
	}
	end, err := array(b, i, 1, fn)
	if err != nil {
		return err
	}
	if SkipSpace(b, end) != len(b) {
		return syntaxErr(end, "invalid character after top-level value")
	}
	return nil
}

// Valid reports whether b is one JSON value, as json.Valid does.
func Valid(b []byte) bool {
	i := SkipSpace(b, 0)
	end, err := Value(b, i)
	return err == nil && SkipSpace(b, end) == len(b)
}

// Compact reports whether b is one valid JSON value with no white space
// outside its strings: what json.Compact would leave unchanged.
func Compact(b []byte) bool {
	if len(b) == 0 || isSpace(b[0]) || isSpace(b[len(b)-1]) {
		return false
	}
	// White space first, skipping strings by their closing quotes (in
	// valid JSON those are where they end; invalid JSON fails Valid).
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			i = SkipString(b, i) - 1
		case isSpace(c):
			return false
		}
	}
	return Valid(b)
}

// Unquote decodes the string literal s (quotes included, f its flags from
// String) as encoding/json does: invalid UTF-8 and lone surrogates become
// U+FFFD. Literals without escapes or non-ASCII bytes cost one copy.
func Unquote(s []byte, f Flags) (string, error) {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return "", errors.New("not a string literal")
	}
	inner := s[1 : len(s)-1]
	if f&Escaped == 0 && (f&NonASCII == 0 || utf8.Valid(inner)) {
		return string(inner), nil
	}
	if out, ok := unquote(inner); ok {
		return out, nil
	}
	var out string
	if err := json.Unmarshal(s, &out); err != nil {
		return "", err
	}
	return out, nil
}

// unquote decodes the inside of a string literal the way encoding/json
// does; ok is false for input it does not take (a malformed escape).
func unquote(s []byte) (string, bool) {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) {
				return "", false
			}
			switch s[i+1] {
			case '"', '\\', '/':
				out = append(out, s[i+1])
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := hex4(s, i+2)
				if !ok {
					return "", false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					// A pair makes one rune; a lone half is U+FFFD.
					if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
						if r2, ok := hex4(s, i+2); ok {
							if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
								out = utf8.AppendRune(out, dec)
								i += 6
								continue
							}
						}
					}
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
				continue
			default:
				return "", false
			}
			i += 2
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				out = append(out, "\uFFFD"...)
			} else {
				out = append(out, s[i:i+size]...)
			}
			i += size
		}
	}
	return string(out), true
}

func hex4(s []byte, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range s[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// Skip returns the index just past the value that starts at b[i], in input
// already checked by Members, Elements or Valid: it only looks for where
// the value ends, skipping strings with a vectorised search for quotes.
func Skip(b []byte, i int) int {
	switch b[i] {
	case '"':
		return SkipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = SkipString(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	default:
		j := i
		for j < len(b) && !isSpace(b[j]) && b[j] != ',' && b[j] != '}' && b[j] != ']' {
			j++
		}
		return j
	}
}

// SkipString returns the index just past the string literal that opens
// at b[i] (a '"'): past its closing quote, the first one preceded by an
// even number of backslashes, or len(b) when it has none. It checks
// nothing else (Valid does).
func SkipString(b []byte, i int) int {
	end, _ := skipString(b, i)
	return end
}

// skipString is SkipString; ok is false when the literal has no closing
// quote (end is then len(b)).
func skipString(b []byte, i int) (end int, ok bool) {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return len(b), false
		}
		j += k
		n := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j + 1, true
		}
		j++
	}
}

// TrustedMembers calls fn for each member of the object b, which must be
// valid JSON (a slice of input Members or Valid accepted).
func TrustedMembers(b []byte, fn MemberFunc) error {
	_, err := TrustedObject(b, SkipSpace(b, 0), func(key []byte, f Flags, b []byte, i int) (int, error) {
		end := Skip(b, i)
		return end, fn(key, f, b[i:end:end])
	})
	return err
}

// TrustedObject reads the object that starts at b[i] in valid JSON,
// calling value at the start of each member's value to read it (value
// returns the index just past the value, which Skip finds when the
// caller reads nothing in it), and returns the index just past the
// object. A caller that decodes a value while reading it, such as an
// array of objects, goes over its bytes once instead of once to find its
// end and again to decode it.
func TrustedObject(b []byte, i int, value ValueAtFunc) (int, error) {
	if i >= len(b) || b[i] != '{' {
		return 0, ErrNotObject
	}
	i = SkipSpace(b, i+1)
	for i < len(b) && b[i] == '"' {
		kend := SkipString(b, i)
		key := b[i:kend:kend]
		i = SkipSpace(b, kend)
		i = SkipSpace(b, i+1) // the colon
		vend, err := value(key, StringFlags(key), b, i)
		if err != nil {
			return 0, err
		}
		i = SkipSpace(b, vend)
		if i < len(b) && b[i] == ',' {
			i = SkipSpace(b, i+1)
		}
	}
	return min(i+1, len(b)), nil // past the closing brace
}

// TrustedElements calls fn for each element of the array b, which must be
// valid JSON.
func TrustedElements(b []byte, fn func(val []byte) error) error {
	_, err := TrustedArray(b, SkipSpace(b, 0), func(b []byte, i int) (int, error) {
		end := Skip(b, i)
		return end, fn(b[i:end:end])
	})
	return err
}

// TrustedArray reads the array that starts at b[i] in valid JSON as
// TrustedObject reads an object, calling elem at the start of each
// element to read it.
func TrustedArray(b []byte, i int, elem func(b []byte, i int) (int, error)) (int, error) {
	if i >= len(b) || b[i] != '[' {
		return 0, ErrNotArray
	}
	i = SkipSpace(b, i+1)
	for i < len(b) && b[i] != ']' {
		end, err := elem(b, i)
		if err != nil {
			return 0, err
		}
		i = SkipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = SkipSpace(b, i+1)
		}
	}
	return min(i+1, len(b)), nil
}

// StringFlags returns the flags of a checked string literal.
func StringFlags(s []byte) Flags {
	var f Flags
	if bytes.IndexByte(s, '\\') >= 0 {
		f |= Escaped
	}
	if !asciiOnly(s) {
		f |= NonASCII
	}
	return f
}

func asciiOnly(s []byte) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if binary.LittleEndian.Uint64(s[i:])&highBits != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// KeyText returns the text of the raw key literal (quotes included,
// flags f): a slice of key when it needs no unquoting, else a new copy.
func KeyText(key []byte, f Flags) ([]byte, error) {
	if f == 0 {
		return key[1 : len(key)-1], nil
	}
	s, err := Unquote(key, f)
	if err != nil {
		return nil, err
	}
	return []byte(s), nil
}

// IsNull reports whether the raw value is the literal null.
func IsNull(val []byte) bool { return len(val) == 4 && string(val) == "null" }

// HasKeyFold reports whether b is a JSON object with a top-level key equal
// to name without regard to case: whether encoding/json could fill a
// struct field called name from it. Invalid JSON has no keys.
func HasKeyFold(b []byte, name string) bool {
	found := false
	err := Members(b, func(key []byte, f Flags, _ []byte) error {
		if found {
			return nil
		}
		k, err := KeyText(key, f)
		if err != nil {
			return err
		}
		found = strings.EqualFold(string(k), name)
		return nil
	})
	return err == nil && found
}

// LooseMembers calls fn for each member of the object b holds, as Members
// does, but checks less to go faster: the structure (brackets, keys,
// colons, commas, numbers and literals) is checked as strictly as Members
// checks it, while the inside of string literals is not (their escapes and
// control characters). It is for a pass that needs only a few members of
// a large object: a line cut short, garbage or unbalanced brackets are
// still an error, and skipping a string is a vectorised search for its
// closing quote. Values given to fn are slices of b; a string value may
// hold an escape Unquote rejects.
func LooseMembers(b []byte, fn MemberFunc) error {
	return LooseMembersAt(b, func(key []byte, f Flags, b []byte, i int) (int, error) {
		end, err := looseValue(b, i)
		if err != nil {
			return 0, err
		}
		return end, fn(key, f, b[i:end:end])
	})
}

// ValueAtFunc reads the value that starts at b[i] (no white space before
// it), a member's whose raw key literal and flags it is given, and returns
// the index just past it.
type ValueAtFunc func(key []byte, f Flags, b []byte, i int) (int, error)

// LooseMembersAt is LooseMembers for a caller that reads the members'
// values itself (with LooseValue, LooseObject, LooseArray or anything
// else that checks them): value is called for each member at the start of
// its value. b must hold one object and nothing else but white space.
func LooseMembersAt(b []byte, value ValueAtFunc) error {
	i := SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return ErrNotObject
	}
	end, err := LooseObject(b, i, value)
	if err != nil {
		return err
	}
	if SkipSpace(b, end) != len(b) {
		return syntaxErr(end, "invalid character after top-level value")
	}
	return nil
}

// LooseObject reads the object that starts at b[i] as LooseMembersAt
// does, and returns the index just past it.
func LooseObject(b []byte, i int, value ValueAtFunc) (int, error) {
	return objectAt(b, i, false, value)
}

// objectAt reads the object that starts at b[i], calling value at the
// start of each member's value; its keys are checked as String checks
// them when strict, else found by their closing quote alone.
func objectAt(b []byte, i int, strict bool, value ValueAtFunc) (int, error) {
	if i >= len(b) || b[i] != '{' {
		return 0, ErrNotObject
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		kend, vstart, f, err := readKey(b, i, strict)
		if err != nil {
			return 0, err
		}
		if !strict {
			f = keyFlags(b[i:kend])
		}
		if vstart >= len(b) {
			return 0, syntaxErr(vstart, "unexpected end of JSON input")
		}
		if i, err = value(b[i:kend:kend], f, b, vstart); err != nil {
			return 0, err
		}
		i = SkipSpace(b, i)
		if i >= len(b) {
			return 0, syntaxErr(i, "unexpected end of JSON input")
		}
		if b[i] == '}' {
			return i + 1, nil
		}
		if b[i] != ',' {
			return 0, syntaxErr(i, "invalid character %q after object key:value pair", b[i])
		}
		i = SkipSpace(b, i+1)
	}
}

// LooseArray reads the array that starts at b[i], calling elem at the
// start of each element to read it, and returns the index just past it.
func LooseArray(b []byte, i int, elem func(b []byte, i int) (int, error)) (int, error) {
	if i >= len(b) || b[i] != '[' {
		return 0, ErrNotArray
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		if i >= len(b) {
			return 0, syntaxErr(i, "unexpected end of JSON input")
		}
		var err error
		if i, err = elem(b, i); err != nil {
			return 0, err
		}
		i = SkipSpace(b, i)
		if i >= len(b) {
			return 0, syntaxErr(i, "unexpected end of JSON input")
		}
		if b[i] == ']' {
			return i + 1, nil
		}
		if b[i] != ',' {
			return 0, syntaxErr(i, "invalid character %q after array element", b[i])
		}
		i = SkipSpace(b, i+1)
	}
}

// LooseValue returns the end of the value that starts at b[i], checked as
// LooseMembers checks values.
func LooseValue(b []byte, i int) (int, error) { return looseValue(b, i) }

// LooseString returns the end of the string literal that starts at b[i],
// found by its closing quote alone.
func LooseString(b []byte, i int) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return 0, syntaxErr(i, "want a string")
	}
	return looseString(b, i)
}

// keyFlags is StringFlags for a short literal: one loop over its bytes.
func keyFlags(s []byte) Flags {
	var f Flags
	for _, c := range s {
		if c == '\\' {
			f |= Escaped
		} else if c >= 0x80 {
			f |= NonASCII
		}
	}
	return f
}

// looseString returns the end of the string literal at b[i], found by its
// closing quote alone.
func looseString(b []byte, i int) (int, error) {
	end, ok := skipString(b, i)
	if !ok {
		return 0, syntaxErr(len(b), "unterminated string")
	}
	return end, nil
}

// looseValue returns the end of the value at b[i], checked as LooseMembers
// says. Containers are walked without recursion: a stack of the open
// brackets, and what may come next.
func looseValue(b []byte, i int) (int, error) {
	var stackBuf [64]byte
	stack := stackBuf[:0]
	// After a value (or an opening bracket) the next byte must close the
	// container or, after a value, be a comma.
	for {
		// A value is expected at b[i].
		if i >= len(b) {
			return 0, syntaxErr(i, "unexpected end of JSON input")
		}
		var err error
		switch c := b[i]; {
		case c == '"':
			if i, err = looseString(b, i); err != nil {
				return 0, err
			}
		case c == '{' || c == '[':
			if len(stack) >= maxDepth {
				return 0, syntaxErr(i, "exceeded max depth")
			}
			stack = append(stack, c)
			i = SkipSpace(b, i+1)
			if i < len(b) && (c == '{' && b[i] == '}' || c == '[' && b[i] == ']') {
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i, err = looseKey(b, i); err != nil {
					return 0, err
				}
			}
			continue
		case c == 't':
			i, err = literal(b, i, "true")
		case c == 'f':
			i, err = literal(b, i, "false")
		case c == 'n':
			i, err = literal(b, i, "null")
		case c == '-' || '0' <= c && c <= '9':
			i, err = number(b, i)
		default:
			return 0, syntaxErr(i, "invalid character %q looking for beginning of value", c)
		}
		if err != nil {
			return 0, err
		}
		// A value ended: close containers, or go on after a comma.
		for {
			if len(stack) == 0 {
				return i, nil
			}
			i = SkipSpace(b, i)
			if i >= len(b) {
				return 0, syntaxErr(i, "unexpected end of JSON input")
			}
			top := stack[len(stack)-1]
			switch {
			case b[i] == ',':
				i = SkipSpace(b, i+1)
				if top == '{' {
					if i, err = looseKey(b, i); err != nil {
						return 0, err
					}
				}
			case top == '{' && b[i] == '}', top == '[' && b[i] == ']':
				stack = stack[:len(stack)-1]
				i++
				continue
			default:
				return 0, syntaxErr(i, "invalid character %q after a value", b[i])
			}
			break
		}
	}
}

// looseKey reads an object key and its colon at b[i], the key found by
// its closing quote alone, and returns where the value starts.
func looseKey(b []byte, i int) (int, error) {
	_, vstart, _, err := readKey(b, i, false)
	return vstart, err
}

// readKey reads an object key and its colon at b[i], returning the end of the
// key's literal and where the value starts (after white space). When
// strict, the literal is checked as String checks it and f holds its
// flags; else it is found by its closing quote alone and f is 0.
func readKey(b []byte, i int, strict bool) (kend, vstart int, f Flags, err error) {
	if i >= len(b) || b[i] != '"' {
		if i >= len(b) {
			return 0, 0, 0, syntaxErr(i, "unexpected end of JSON input")
		}
		return 0, 0, 0, syntaxErr(i, "invalid character %q looking for beginning of object key string", b[i])
	}
	if strict {
		kend, f, err = String(b, i)
	} else {
		kend, err = looseString(b, i)
	}
	if err != nil {
		return 0, 0, 0, err
	}
	j := SkipSpace(b, kend)
	if j >= len(b) || b[j] != ':' {
		return 0, 0, 0, syntaxErr(j, "want ':' after object key")
	}
	return kend, SkipSpace(b, j+1), f, nil
}
