package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// FileError is a settings file that cannot be read as JSON, or a value in
// it of the wrong kind, with where in the file.
type FileError struct {
	File         string
	Line, Column int // from 1; 0 when not known
	Err          error
}

func (e *FileError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("settings file %s is not valid: %v", e.File, e.Err)
	}
	return fmt.Sprintf("settings file %s is not valid at line %d, column %d: %v", e.File, e.Line, e.Column, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// fileError locates a JSON decoding error in the file's bytes.
func fileError(file string, data []byte, err error) *FileError {
	fe := &FileError{File: file, Err: err}
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off >= 0 {
		fe.Line, fe.Column = position(data, off)
	}
	return fe
}

// position returns the line and column (from 1) of a byte offset.
func position(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	head := data[:off]
	line = 1 + bytes.Count(head, []byte("\n"))
	col = int(off) - (bytes.LastIndexByte(head, '\n') + 1)
	return line, max(col, 1)
}

// restrictingKeys are settings whose loss would let cairn do more than
// the user allowed, or delete sooner than asked: a file that cannot be
// read but may hold one of them is an error rather than skipped.
var restrictingKeys = []string{
	"deny", "ask", "defaultMode", "disableBypassPermissionsMode", "PreToolUse",
	"cleanupPeriodDays", "trashRetentionDays",
}

// mayRestrict returns a restricting key that text (a file or value that
// cannot be decoded) may hold, or "". Keys are matched without regard to
// case, as the decoder matches them; escaped text may hide any key.
func mayRestrict(text []byte) string {
	lower := strings.ToLower(string(text))
	for _, k := range restrictingKeys {
		if strings.Contains(lower, `"`+strings.ToLower(k)+`"`) {
			return k
		}
	}
	if strings.Contains(lower, `\u`) {
		return "escaped text, which may hold any setting"
	}
	return ""
}

// unreadable turns a file that cannot be decoded into a warning, when
// skipping it weakens nothing, or an error naming what it may hold.
func unreadable(fe *FileError, text []byte) (warning string, err error) {
	if k := mayRestrict(text); k != "" {
		what := fmt.Sprintf("%q settings", k)
		if strings.HasPrefix(k, "escaped") {
			what = k
		}
		return "", fmt.Errorf("%w. It may hold %s, which restrict what cairn may do, so cairn does not run without it: fix the file (or move it away to run without it)", fe, what)
	}
	return fmt.Sprintf("%v. It is ignored until it is fixed; the other settings files apply", fe), nil
}
