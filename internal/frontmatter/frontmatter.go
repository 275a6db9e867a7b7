// Package frontmatter splits a Markdown file into its YAML front matter
// (the block between a first line "---" and the next "---") and its body,
// as instruction rules and memory files carry it.
package frontmatter

import (
	"bytes"
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// ErrUnclosed is returned when a file opens front matter and never closes
// it.
var ErrUnclosed = errors.New("front matter opened with --- is never closed")

// Split returns the front matter of data (without its fences) and the
// body after it. ok is false when data has no front matter; body is then
// data. A file whose front matter is not closed has none, and err says so.
func Split(data []byte) (front, body []byte, ok bool, err error) {
	rest, found := cutFence(data)
	if !found {
		return nil, data, false, nil
	}
	for off := 0; off < len(rest); {
		end := bytes.IndexByte(rest[off:], '\n')
		line := rest[off:]
		next := len(rest)
		if end >= 0 {
			line = rest[off : off+end]
			next = off + end + 1
		}
		if isFence(line) {
			return rest[:off], rest[next:], true, nil
		}
		off = next
	}
	return nil, data, false, ErrUnclosed
}

// cutFence removes an opening "---" line (after an optional byte-order
// mark) and reports whether there was one.
func cutFence(data []byte) ([]byte, bool) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	end := bytes.IndexByte(data, '\n')
	if end < 0 || !isFence(data[:end]) {
		return nil, false
	}
	return data[end+1:], true
}

func isFence(line []byte) bool {
	return string(bytes.TrimRight(line, " \t\r")) == "---"
}

// Parse decodes the front matter of data into v and returns the body. A
// file without front matter leaves v alone. Front matter that is not valid
// YAML, or does not fit v, is an error; the body is returned all the same,
// so a caller can keep the file's text while reporting the problem.
func Parse(data []byte, v any) (body []byte, err error) {
	front, body, ok, err := Split(data)
	if err != nil || !ok {
		return body, err
	}
	if len(bytes.TrimSpace(front)) == 0 {
		return body, nil
	}
	if err := yaml.Unmarshal(front, v); err != nil {
		return body, fmt.Errorf("front matter: %w", err)
	}
	return body, nil
}
