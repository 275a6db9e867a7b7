//go:build unix

package transcript

import (
	"io/fs"
	"strconv"
	"syscall"
)

// fileIdentity names the file fi describes by its device and inode: a
// file renamed over another, or deleted and written again, gets another.
func fileIdentity(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return strconv.FormatUint(uint64(st.Dev), 10) + ":" + strconv.FormatUint(uint64(st.Ino), 10)
	}
	return ""
}
