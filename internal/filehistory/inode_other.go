//go:build !unix

package filehistory

import "io/fs"

// inode is not known on this system; size, time and mode still tell.
func inode(fs.FileInfo) uint64 { return 0 }
