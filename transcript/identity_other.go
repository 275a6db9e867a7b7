//go:build !unix

package transcript

import "io/fs"

// fileIdentity is "" where the platform gives no inode: the cache then
// relies on its byte checks alone.
func fileIdentity(fs.FileInfo) string { return "" }
