package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/cairn-dev/cairn/transcript"
)

// ErrNotTranscript is returned for a file that holds no transcript lines
// at all (a file given by mistake: /etc/passwd, a binary).
var ErrNotTranscript = errors.New("not a transcript")

// sniffLines and sniffBytes bound how much of a file looksLikeTranscript
// reads.
const (
	sniffLines = 32
	sniffBytes = 256 << 10
)

// looksLikeTranscript reports, by its first lines, whether the file at
// path is a transcript: an empty file is (a session with nothing in it
// yet), and so is one where any of the first few non-blank lines is a
// JSON object with a "type", as every transcript line has. A file
// damaged in places still is; one with no such line is not, and loading
// it would only warn about each of its lines.
func looksLikeTranscript(path string) error {
	src, err := transcript.OpenFile(path)
	if err != nil {
		return err
	}
	defer src.Close()
	r := bufio.NewReader(io.NewSectionReader(src, 0, min(src.Size(), sniffBytes)))
	seen := 0
	for seen < sniffLines {
		line, err := r.ReadBytes('\n')
		if line = bytes.TrimSpace(line); len(line) > 0 {
			seen++
			var head struct {
				Type *string `json:"type"`
			}
			if json.Unmarshal(line, &head) == nil && head.Type != nil {
				return nil
			}
		}
		if err != nil {
			break
		}
	}
	if seen == 0 {
		return nil
	}
	return fmt.Errorf("%s is %w: none of its first %d lines is a transcript line (a JSON object with a \"type\"); give a session id from `cairn sessions list`, or the path of a .jsonl transcript cairn or Claude Code wrote", path, ErrNotTranscript, seen)
}
