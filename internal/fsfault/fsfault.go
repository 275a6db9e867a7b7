// Package fsfault says in plain words what went wrong with a file
// operation (disk full, an I/O error, a read-only file system) and what the
// person can do about it, for the messages that report a file cairn could
// not save.
package fsfault

import (
	"errors"
	"io/fs"
	"syscall"
)

// ErrReplaced is wrapped by the error of a write refused because the file
// open for it was deleted, or replaced by another, since it was opened:
// writing on would put the lines where no one will read them, or into a
// file cairn did not open.
var ErrReplaced = errors.New("the file was deleted or replaced since it was opened")

// Describe returns the cause of err in a few plain words and what to do
// next. An error it does not recognise is its own cause, with no advice.
func Describe(err error) (cause, advice string) {
	switch {
	case errors.Is(err, ErrReplaced):
		return "the transcript was deleted or replaced while the session ran", "nothing more is written into it; start a new session, or resume the file now in its place"
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "disk full", "free some space"
	case errors.Is(err, syscall.EIO):
		return "I/O error", "check the disk (the system log may say more)"
	case errors.Is(err, syscall.EROFS):
		return "the file system is read-only", "make it writable"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied", "make cairn's home folder writable"
	case errors.Is(err, fs.ErrNotExist):
		return "the file or its folder was removed", "check that nothing deletes cairn's home folder"
	}
	if err == nil {
		return "", ""
	}
	return err.Error(), ""
}
