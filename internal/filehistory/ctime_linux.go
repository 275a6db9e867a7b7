//go:build linux

package filehistory

import (
	"io/fs"
	"math"
	"syscall"
)

// changeTime returns when a file's inode last changed (ns): creating,
// writing, renaming and chmod all set it, and nothing sets it back.
func changeTime(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctim.Nano()
	}
	return math.MaxInt64
}
