//go:build !unix

package filemap

import (
	"errors"
	"os"
)

// Map is not supported here: callers keep copies.
func Map(f *os.File, off, end int64) (*Region, error) {
	return nil, errors.New("mapping files is not supported on this system")
}

func (r *Region) release() {}
