//go:build unix

package filehistory

import (
	"io/fs"
	"syscall"
)

// inode returns a file's inode number: a command that replaces a file
// (sed -i, a rename over it) gives it a new one.
func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
